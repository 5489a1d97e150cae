"""The plan's CTS class: `cts.priority` (default the data priority) read alike by the agent and the
roce_qos role, refused where it contradicts the data or CNP class, and mapped on the NICs too."""

import pytest
import yaml

from rocetune.errors import RocetuneError
from rocetune.model.qos import dump_yaml, load_text
from tests.unit.roles import load_module_utils

Q = load_module_utils("roce_qos", "roce_qos_state")


def test_cts_priority_defaults_to_the_data_priority_and_round_trips():
    plan = load_text("data: {dscp: 24, priority: 2}\nlossless_priorities: [2]\ncts: {dscp: 46}\n", "p")
    assert (plan.cts_dscp, plan.cts_priority, plan.fifo_traffic_class) == (46, 2, 46 << 2 | 2)
    assert load_text(dump_yaml(plan), "again").cts_priority == 2
    lossy = load_text("cts: {dscp: 40, priority: 5}\n", "p")
    assert lossy.cts_priority == 5 and any("cts.priority 5 is not in lossless_priorities" in w for w in lossy.warnings)


@pytest.mark.parametrize("text, needle", [
    ("cts: {priority: 5}\n", "cts.priority without cts.dscp"),
    ("cts: {dscp: 26, priority: 5}\n", "cts.dscp 26 is data.dscp, but cts.priority 5 is not data.priority 3"),
    ("cts: {dscp: 40, priority: 9}\n", "cts.priority: 9 is out of range"),
])
def test_contradicting_cts_classes_are_refused_by_both_readers(text, needle):
    with pytest.raises(RocetuneError, match=needle):
        load_text(text, "p")
    with pytest.raises(Q.QosError, match=needle):
        Q.parse_plan(text, yaml.safe_load, "qos.yml")


def test_the_nics_map_the_cts_dscp_to_its_class():
    want = Q.desired(Q.parse_plan("cts: {dscp: 46}\n", yaml.safe_load, "qos.yml"))
    assert want["dscp_prio"] == {26: 3, 48: 6, 46: 3}
    assert Q.desired(Q.parse_plan("", yaml.safe_load, "qos.yml"))["dscp_prio"] == {26: 3, 48: 6}
