"""doctor's one-line reason and its compact JSON."""

from __future__ import annotations

import json

from rocetune.doctor.report import COMPACT_BUDGET, MAX_REASON, compact, reason
from rocetune.model.finding import Finding


def _f(fid, severity, message="m", subject="s", evidence=None):
    return Finding(id=fid, severity=severity, message=message, subject=subject, kind="doctor", source="",
                   fix="", evidence=evidence or {})


def test_reason_names_the_first_failure_and_counts_the_rest():
    found = [_f("doctor-rail-mtu-mismatch", "error", "enp64s0np0 has MTU 1500, the other rails 9000", "enp64s0np0"),
             _f("expect-rails", "error"), _f("memlock", "warning")]
    assert reason(found) == ("doctor-rail-mtu-mismatch enp64s0np0: enp64s0np0 has MTU 1500, the other rails 9000"
                             " (+1 more)")
    assert reason(found, "warning") == "memlock s: m"
    assert reason([_f("a", "warning")]) == ""


def test_reason_is_one_bounded_printable_line():
    long = _f("x", "error", "word " * 200 + "\n\x1b[31mred")
    text = reason([long, long])
    assert len(text) <= MAX_REASON and text.endswith("... (+1 more)")
    assert "\n" not in text and "\x1b" not in text


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
