"""The plain value classes the probe builds behave as the dataclasses they replace: equality and
repr over their fields, `replace` through __init__, frozen ones refuse assignment and hash."""

from __future__ import annotations

import pytest

from rocetune.model.finding import Finding
from rocetune.model.plan import Decision, Plan
from rocetune.model.qos import QosPlan, TrafficClass


def _finding(**changes):
    base = dict(id="x", severity="warning", subject="s", message="m", kind="host", source="src", fix="f")
    base.update(changes)
    return Finding(**base)


def test_equality_and_repr_are_over_the_fields():
    assert _finding() == _finding()
    assert _finding() != _finding(subject="other")
    assert _finding() != ("x", "warning")
    assert repr(TrafficClass(26, 3)) == "TrafficClass(dscp=26, priority=3)"


def test_replace_goes_through_init_and_refuses_unknown_fields():
    f = _finding()
    g = f.replace(severity="error", graded={"action": "grade"})
    assert (g.severity, g.graded, g.subject) == ("error", {"action": "grade"}, "s")
    assert f.severity == "warning"
    with pytest.raises(TypeError, match="no field 'colour'"):
        f.replace(colour="red")
    with pytest.raises(ValueError, match="not an environment variable name"):
        Decision("NCCL_IB_HCA", "mlx5_0", "r").replace(key="1BAD")


def test_frozen_records_refuse_assignment_and_hash_by_value():
    tc = TrafficClass(26, 3)
    with pytest.raises(AttributeError, match="frozen"):
        tc.dscp = 10  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del tc.dscp
    assert {tc: 1}[TrafficClass(26, 3)] == 1


def test_mutable_records_are_unhashable_and_do_not_share_defaults():
    a, b = Plan(), Plan()
    a.findings.append(_finding())
    assert b.findings == []
    assert QosPlan().warnings is not QosPlan().warnings
    with pytest.raises(TypeError):
        hash(a)
