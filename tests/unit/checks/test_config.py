"""The check configuration: skip or re-grade a check by id, always with a reason, narrowed to
subjects when asked; unknown ids and reasonless rules are refused; the rules show in doctor's
report whether or not they matched."""

import pytest

from rocetune import checks
from rocetune.checks.config import apply, check_ids
from rocetune.doctor.report import exit_code, text
from rocetune.errors import ExitCode, RocetuneError
from rocetune.model import check_config as cc


def _findings():
    return [checks.finding("doctor-ecn-off", "ens1", "ECN off", severity="warning"),
            checks.finding("doctor-port-down", "mlx5_4:1", "down"),
            checks.finding("doctor-port-down", "mlx5_5:1", "down"),
            checks.finding("expect-versions", "mlx5_4", "firmware 28.36")]


CONFIG = """
version: 1
skip:
  - id: doctor-ecn-off
    reason: Soft-RoCE has no ECN sysfs
grade:
  - id: expect-versions
    severity: warning
    reason: firmware rolling upgrade this week
  - id: doctor-port-down
    severity: info
    subjects: ["mlx5_4:*"]
    reason: mlx5_4's cable is on order
"""


def test_skip_and_grade_with_reasons_and_subjects():
    config = cc.load_text(CONFIG, "/etc/rocetune/doctor.yml")
    check_ids(config)
    applied = apply(_findings(), config)
    got = {(f.id, f.subject): f.severity for f in applied.findings}
    assert got == {("doctor-port-down", "mlx5_4:1"): "info", ("doctor-port-down", "mlx5_5:1"): "error",
                   ("expect-versions", "mlx5_4"): "warning"}
    (skipped,) = applied.skipped
    assert skipped.id == "doctor-ecn-off" and skipped.graded == {
        "action": "skip", "from": "warning", "reason": "Soft-RoCE has no ECN sysfs", "by": "/etc/rocetune/doctor.yml"}
    graded = next(f for f in applied.findings if f.id == "expect-versions")
    assert graded.to_dict()["graded"]["from"] == "error"
    assert [r["matched"] for r in applied.rules] == [1, 1, 1]
    assert exit_code(applied.findings) == ExitCode.FINDINGS  # mlx5_5:1 is still down


def test_every_rule_is_shown_in_the_report_even_one_that_matched_nothing():
    config = cc.load_text(CONFIG, "/etc/rocetune/doctor.yml").merged(
        cc.from_args(["doctor-acs-redirect=lspci is not installed on these images"]))
    applied = apply(_findings(), config)
    out = text(applied.findings, "n1", 0, applied.rules)
    assert "skipped doctor-ecn-off: Soft-RoCE has no ECN sysfs [/etc/rocetune/doctor.yml; 1 finding(s)]" in out
    assert "graded info doctor-port-down (mlx5_4:*): mlx5_4's cable is on order" in out
    assert "skipped doctor-acs-redirect: lspci is not installed on these images [--skip; 0 finding(s)]" in out
    assert "graded error -> warning by /etc/rocetune/doctor.yml: firmware rolling upgrade this week" in out


def test_the_command_line_wins_over_the_file_for_one_id():
    config = cc.load_text("grade: [{id: doctor-port-down, severity: warning, reason: a}]", "f").merged(
        cc.from_args(["doctor-port-down=b"]))
    applied = apply(_findings(), config)
    assert [f.graded["reason"] for f in applied.skipped] == ["b", "b"]


@pytest.mark.parametrize("doc, says", [
    ("skip: [{id: doctor-ecn-off}]", "skip[0].reason: missing"),
    ("skip: [{id: doctor-ecn-off, reason: '  '}]", "skip[0].reason: empty; say why"),
    ("grade: [{id: doctor-ecn-off, severity: fatal, reason: x}]", "grade[0].severity: expected one of"),
    ("skip: [{id: doctor-ecn-off, reason: x, subject: [a]}]", "skip[0].subject: not a known key (did you mean subjects?)"),
    ("skips: []", "skips: not a known key (did you mean skip?)"),
])
def test_a_bad_configuration_is_an_input_error_naming_the_field(doc, says):
    with pytest.raises(RocetuneError) as exc:
        cc.load_text(doc, "doctor.yml")
    assert says in exc.value.message and exc.value.code == ExitCode.INPUT


def test_an_unknown_id_is_refused_with_the_one_meant():
    with pytest.raises(RocetuneError) as exc:
        check_ids(cc.load_text("skip: [{id: doctor-ecn-of, reason: x}]", "doctor.yml"))
    assert exc.value.message == "doctor.yml: no check 'doctor-ecn-of' (did you mean doctor-ecn-off?)"
    assert exc.value.code == ExitCode.INPUT
    with pytest.raises(RocetuneError) as exc:
        check_ids(cc.from_args(["doctor-ecn-of=x"]))
    assert exc.value.code == ExitCode.USAGE
    with pytest.raises(RocetuneError, match="--skip ID=REASON"):
        cc.from_args(["doctor-ecn-off"])


def test_ids_are_looked_up_only_as_far_as_they_need():
    import subprocess
    import sys

    # A fresh interpreter: this test process may have imported every declaring module already.
    code = ("import sys\n"
            "from rocetune.checks.config import check_ids\n"
            "from rocetune.model import check_config as cc\n"
            "check_ids(cc.CheckConfig())\n"
            "assert 'rocetune.doctor.nccl_findings' not in sys.modules, 'no rules, yet doctor was imported'\n"
            "check_ids(cc.load_text('skip: [{id: doctor-ecn-off, reason: x}]', 'doctor.yml'))\n"
            "assert 'rocetune.doctor.declarations' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
