"""Switch QoS read from real outputs and compared with the plan: the SONiC default map's DSCP 26 ->
TC 1 (lossy) is flagged, NVUE's RoCE defaults agree with the default plan, EOS gaps stay 'not checked'."""

import json
import os

import pytest

from rocetune.errors import ParseError
from rocetune.lint.switch_qos import compare
from rocetune.model.qos import default_plan, load_text
from rocetune.probe.parsers import switch_eos, switch_nvue, switch_sonic

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch")


def _read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def _ids(findings, severity=None):
    return sorted(f.id for f in findings if severity is None or f.severity == severity)


def test_sonic_default_map_sends_roce_to_a_lossy_class():
    sw = switch_sonic.parse(_read("sonic-qos-arista7050.json"), "qos-arista7050.json")
    assert len(sw.groups) == 1 and len(sw.groups[0].ports) == 28
    g = sw.groups[0]
    assert g.dscp_to_tc[26] == 1 and g.dscp_to_tc[48] == 6 and g.pfc == (3, 4)
    found = compare(default_plan(), sw)
    data = [f for f in found if f.id == "switch-data-class-mismatch"]
    assert len(data) == 1 and data[0].severity == "error"
    assert "DSCP 26 goes to traffic class 1, lossy (no PFC)" in data[0].message
    assert data[0].evidence["traffic_class"] == 1 and data[0].evidence["pfc"] == [3, 4]
    assert _ids(found, "error") == ["switch-data-class-mismatch"]
    assert _ids(found, "warning") == ["switch-cnp-not-strict", "switch-ecn-thresholds-differ", "switch-pfc-extra"]
    ecn = next(f for f in found if f.id == "switch-ecn-thresholds-differ")
    assert "minimum 1048576 bytes (plan 150000)" in ecn.message and "probability 5%" in ecn.message


def test_sonic_map_that_follows_the_plan_agrees():
    doc = json.loads(_read("sonic-qos-arista7050.json"))
    doc["DSCP_TO_TC_MAP"]["AZURE"]["26"] = "3"
    for port in doc["PORT_QOS_MAP"].values():
        if "pfc_enable" in port:
            port["pfc_enable"] = "3"
    sw = switch_sonic.from_doc(doc, "edited copy")
    found = compare(load_text("ecn_marking: {min_threshold: 1048576, max_threshold: 2097152, probability: 5}\n",
                              "plan"), sw)
    assert _ids(found) == ["switch-cnp-not-strict"]


def test_nvue_roce_defaults_agree_with_the_default_plan():
    sw = switch_nvue.parse(_read("nvue-show-qos-roce.txt"), "nv show qos roce")
    g = sw.groups[0]
    assert g.trust == "both" and g.pfc == (3,) and g.dscp_to_tc[26] == 3 and g.dscp_to_tc[48] == 6
    assert g.queues[6].strict and g.queues[3].ecn and round(g.queues[3].min_threshold) == 149996
    assert compare(default_plan(), sw) == []


def test_nvue_against_a_plan_on_another_priority():
    found = compare(load_text("data: {dscp: 26, priority: 4}\nlossless_priorities: [4]\n", "p"),
                    switch_nvue.parse(_read("nvue-show-qos-roce.txt")))
    assert _ids(found) == ["switch-data-class-mismatch", "switch-ecn-off", "switch-pfc-extra", "switch-pfc-missing"]


def test_eos_excerpt_flags_what_it_states_and_leaves_the_rest_unchecked():
    sw = switch_eos.parse(_read("eos-gaudi-7060dx4-l2.cfg"), "gaudi.cfg")
    g = sw.groups[0]
    assert g.ports == ["EthernetXXXXXX"] and g.trust == "dscp" and g.pfc == (0, 1, 2, 3)
    found = compare(default_plan(), sw)
    assert _ids(found, "error") == ["switch-ecn-off"]
    assert _ids(found, "warning") == ["switch-pfc-extra"]
    assert "switch-data-class-mismatch" in _ids(found, "info")


def test_eos_ecn_units_and_profiles():
    text = ("qos map dscp 26 to traffic-class 3\nqos map dscp 48 to traffic-class 6\n"
            "qos profile ROCE\n   qos trust dscp\n   priority-flow-control on\n"
            "   priority-flow-control priority 3 no-drop\n   uc-tx-queue 3\n"
            "      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100\n"
            "   uc-tx-queue 6\n      priority strict\n!\ninterface Ethernet1\n   service-profile ROCE\n")
    found = compare(default_plan(), switch_eos.parse(text))
    assert found == []
    segments = text.replace("150 kbytes", "2000 segments").replace("1500 kbytes", "10000 segments")
    found = compare(default_plan(), switch_eos.parse(segments))
    assert [(f.id, f.severity) for f in found] == [("switch-ecn-thresholds-differ", "info")]


@pytest.mark.parametrize("mod,text,needle", [
    (switch_sonic, "{not json", "not JSON"),
    (switch_sonic, '{"PORT": {}}', "no QoS table"),
    (switch_sonic, '{"QUEUE": {"Ethernet0": {}}}', "expected PORT|QUEUE"),
    (switch_sonic, '{"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "X"}}}', "DSCP_TO_TC_MAP|X is referenced"),
    (switch_nvue, '{"congestion-control": {}}', "this is JSON"),
    (switch_nvue, "hello\n", "no RoCE QoS lines"),
    (switch_eos, "hostname leaf1\n", "no EOS QoS lines"),
    (switch_eos, "", "empty output"),
])
def test_bad_outputs_are_one_line_errors(mod, text, needle):
    with pytest.raises(ParseError, match=needle.replace("|", r"\|")):
        mod.parse(text, "f")
