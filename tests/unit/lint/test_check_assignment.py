"""One setting at a time: lint's checks applied to overrides (--set, --config)."""

from __future__ import annotations

import pytest

from rocetune import app
from rocetune.errors import ExitCode, RocetuneError
from rocetune.lint.checks import check_assignment, lint_text
from rocetune.model.finding import Finding


def test_check_assignment_returns_findings_without_a_file():
    (f,) = [x for x in check_assignment("NCCL_IB_TC", "abc") if x.severity == "error"]
    assert isinstance(f, Finding) and f.id == "not-a-number" and f.file is None
    assert "file" not in f.to_dict() and "line" not in f.to_dict() and f.to_dict()["key"] == "NCCL_IB_TC"
    assert [x for x in check_assignment("NCCL_IB_HCA", "=mlx5_0:1") if x.severity != "info"] == []
    assert check_assignment("HOME", "/root") == []


@pytest.mark.parametrize("item,needle", [
    ("NCCL_IB_TC=abc", "not an integer"), ("NCCL_IB_TIMEOUT=99", "outside"),
    ("NCCL_IB_ADDR_FAMILY=inet6", "AF_INET"), ("GLOO_SOCKET_IFNAME==eth0", "exact interface names"),
])
def test_a_bad_set_value_is_a_usage_error_naming_value_and_fix(item, needle):
    with pytest.raises(RocetuneError) as err:
        app.overrides(None, [item])
    assert err.value.code == ExitCode.USAGE and item in err.value.message and needle in err.value.message
    assert err.value.hint


def test_a_bad_config_value_is_an_input_error_with_file_and_line(tmp_path):
    cfg = tmp_path / "over.conf"
    cfg.write_text("NCCL_DEBUG=WARN\nNCCL_IB_TC=abc\n")
    with pytest.raises(RocetuneError) as err:
        app.overrides(str(cfg))
    assert err.value.code == ExitCode.INPUT and err.value.message.startswith(f"{cfg}:2: NCCL_IB_TC=abc")


def test_legitimate_values_pass_and_warnings_are_reported_not_refused():
    said = []
    got = app.overrides(None, ["NCCL_IB_HCA==mlx5_0:1", "NCCL_IB_TIMEOUT=0", "NCCL_SOMETHING_NEW_AND_LONG=1"],
                        warn=said.append)
    assert set(got.set) == {"NCCL_IB_HCA", "NCCL_IB_TIMEOUT", "NCCL_SOMETHING_NEW_AND_LONG"}
    assert len(said) == 1 and said[0].startswith("--set NCCL_IB_TIMEOUT=0: ") and "hangs" in said[0]


def test_ucx_rdma_device_without_port():
    _, found = lint_text("UCX_NET_DEVICES=mlx5_0,eth0\n", "env.sh")
    (f,) = [x for x in found if x.id == "ucx-port-missing"]
    assert f.severity == "warning" and "mlx5_0:1" in f.fix and "/sys/class/net" not in (f.fix or "")


def test_configmap_value_checks():
    text = "kind: ConfigMap\ndata:\n  NCCL_IB_TC: 106\n  NCCL_SOCKET_IFNAME: |\n    eth0\n"
    _, found = lint_text(text, "cm.yaml")
    assert {(f.id, f.line) for f in found if f.severity == "error"} == {("k8s-not-a-string", 3),
                                                                        ("k8s-whitespace", 4)}
    _, found = lint_text("kind: ConfigMap\ndata: {NCCL_IB_TC: \"abc\"}\n", "cm.yaml")
    assert [f.id for f in found if f.severity == "error"] == ["not-a-number"]


@pytest.mark.parametrize("text,fid", [
    ("NCCL_IB_\u00c4HCA=mlx5_0\n", "sh-bad-name"), ("export -n NCCL_DEBUG=WARN\n", "sh-unexported"),
    ("export NCCL_SOCKET_IFNAME==bond0\r\n", "crlf-line-endings"),
])
def test_shell_traps(text, fid):
    _, found = lint_text(text, "env.sh")
    assert fid in {f.id for f in found}


def test_crlf_matters_only_where_the_consumer_keeps_it():
    for fmt in ("systemd", "docker", "deepspeed", "k8s", "json"):
        text = {"k8s": 'kind: ConfigMap\r\ndata:\r\n  NCCL_DEBUG: "WARN"\r\n',
                "json": '{"NCCL_DEBUG": "WARN"}\r\n'}.get(fmt, "NCCL_DEBUG=WARN\r\n")
        _, found = lint_text(text, "x", fmt)
        assert [f.id for f in found if f.severity != "info"] == [], fmt
    _, found = lint_text("NCCL_DEBUG=WARN\r\n", "nccl.conf")
    assert "crlf-line-endings" in {f.id for f in found}


def test_heredoc_body_is_not_linted_as_settings():
    _, found = lint_text("cat > x <<EOF\nNCCL_IB_RETRY_COUNT=7\nEOF\n", "job.sh")
    assert found == []


def test_a_nccl_conf_holding_shell_says_so():
    _, found = lint_text("export NCCL_DEBUG=WARN\n", "nccl.conf")
    (f,) = [x for x in found if x.id == "format-differs-from-name"]
    assert f.severity == "warning" and "--format nccl-conf" in f.fix
