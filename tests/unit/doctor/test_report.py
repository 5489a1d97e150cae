"""doctor's one-line reason and its compact JSON."""

from __future__ import annotations

import json

from rocetune.doctor.report import COMPACT_BUDGET, MAX_REASON, REASON_RE, compact, reason
from rocetune.model.finding import Finding


def _f(fid, severity, message="m", subject="s", evidence=None):
    return Finding(id=fid, severity=severity, message=message, subject=subject, kind="doctor", source="",
                   fix="", evidence=evidence or {})


def test_reason_names_the_device_of_the_root_cause_first_and_counts_the_other_faults():
    # a lost rail as doctor reports it: the env that names it and the GPU left without it follow
    lost = [_f("doctor-env-names-missing-device", "error", "/etc/rocetune/nccl.env sets NCCL_IB_HCA==mlx5_0:1,"
               "mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1, and this node has no RDMA device "
               "mlx5_4", "/etc/rocetune/nccl.env"),
            _f("expect-rails", "error", "GPU2 has no rail of its own (PIX/PXB)", "GPU2"),
            _f("expect-rails", "error", "rail mlx5_4:1 is missing: this node has no RDMA port mlx5_4:1", "mlx5_4:1"),
            _f("expect-rails", "error", "7 rail(s) in the plan, expected 8", "rails"),
            _f("doctor-rail-mtu-mismatch", "error", "enp64s0np0 has MTU 1500, the other rails 9000", "enp64s0np0"),
            _f("memlock", "warning")]
    text = reason(lost)
    assert text == "mlx5_4:1 expect-rails: rail mlx5_4:1 is missing: this node has no RDMA port mlx5_4:1 (+1 more)"
    m = REASON_RE.match("rocetune: " + text)
    assert m and m["subject"] == "mlx5_4:1" and m["check"] == "expect-rails" and m["more"] == "1"
    assert reason(lost, "warning") == "s memlock: m"
    assert reason([_f("a", "warning")]) == ""
    # the subject's own name is not repeated at the head of the detail
    assert reason(lost[4:5]) == "enp64s0np0 doctor-rail-mtu-mismatch: enp64s0np0 has MTU 1500, the other rails 9000"
    assert reason([_f("nic-link-flaps", "error", "mlx5_0/1: link flaps: 100 an hour", "mlx5_0/1")]) == \
        "mlx5_0/1 nic-link-flaps: link flaps: 100 an hour"


def test_related_findings_follow_their_root_in_the_report():
    from rocetune.doctor.report import ordered

    found = [_f("doctor-env-drift", "warning", "nccl.env differs: NCCL_IB_HCA mlx5_4:1 gone", "/etc/rocetune/nccl.env"),
             _f("expect-rails", "error", "GPU2 has no rail of its own", "GPU2"),
             _f("gpu-without-rail", "warning", "no GPU-local compute port for GPU2", "GPU2"),
             _f("expect-rails", "error", "rail mlx5_4:1 is missing", "mlx5_4:1"),
             _f("doctor-ecn-off", "warning", "ECN is off on enp1s0", "enp1s0"),
             _f("expect-unchecked", "info")]
    assert [(f.id, f.subject) for f in ordered(found)] == [
        ("expect-rails", "mlx5_4:1"), ("expect-rails", "GPU2"), ("gpu-without-rail", "GPU2"),
        ("doctor-env-drift", "/etc/rocetune/nccl.env"), ("doctor-ecn-off", "enp1s0"), ("expect-unchecked", "s")]


def test_reason_is_one_bounded_printable_line_in_the_grammar():
    long = _f("x", "error", "word " * 200 + "\n\x1b[31mred")
    text = reason([long, _f("y", "error")])
    assert len(text) <= MAX_REASON and text.endswith("... (+1 more)")
    assert "\n" not in text and "\x1b" not in text
    assert REASON_RE.match("rocetune: " + text)["more"] == "1"
    spaced = reason([_f("doctor-kernel-module-event", "warning", "m", "0000:3b:00.0 module 1")], "warning")
    assert spaced.startswith("0000:3b:00.0_module_1 doctor-kernel-module-event: ")
    assert reason([long], limit=50).endswith("...") and len(reason([long], limit=50)) <= 50


def test_compact_keeps_the_verdict_and_drops_the_features_and_plan():
    data = {"features": {"big": "x" * 100_000}, "plan": {"env": {"A": "1"}, "decisions": ["y" * 50_000]},
            "readings": {"r": 1}, "findings": [], "summary": {"errors": 0}, "fleet_facts": {}}
    out = compact(data)
    assert out == {"findings": [], "summary": {"errors": 0}, "fleet_facts": {}, "env": {"A": "1"}}


def test_compact_trims_evidence_then_notes_to_stay_within_budget():
    findings = [_f(f"e{i}", "error", evidence={"blob": "z" * 400}).to_dict() for i in range(20)]
    findings += [_f(f"n{i}", "info", evidence={"blob": "z" * 400}).to_dict() for i in range(200)]
    out = compact({"findings": findings, "plan": {"env": {}}})
    size = len(json.dumps(out))
    assert size <= COMPACT_BUDGET
    errors = [f for f in out["findings"] if f["severity"] == "error"]
    assert len(errors) == 20 and out["trimmed"]["evidence"] >= 200
    # the failures keep their evidence when dropping the notes' is enough
    assert all(f["evidence"] for f in errors)


def test_the_text_names_what_follows_from_a_root_cause_under_it():
    from rocetune.doctor.report import ordered, text

    found = ordered([_f("expect-rails", "error", "GPU2 has no rail of its own", "GPU2"),
                     _f("expect-rails", "error", "rail mlx5_4:1 is missing", "mlx5_4:1"),
                     _f("doctor-ecn-off", "warning", "ECN is off on enp1s0", "enp1s0")])
    lines = text(found, "gpu01").splitlines()
    root = lines.index("FAIL  expect-rails                 mlx5_4:1")
    assert lines[root + 2] == "      with it (below): expect-rails GPU2"
    assert lines[root + 3].startswith("FAIL  expect-rails                 GPU2")
    assert not any("with it" in ln for ln in lines[root + 3:])
