"""`qos check` on what real switches print (tests/fixtures/switch, PROVENANCE.md): SONiC CONFIG_DBs
in the three forms (tables, flat redis keys, pre-202106 `[TABLE|name]` references) with their
buffers and PORT tables, NVUE's shows from Cumulus Linux 5.0 to 5.16 and NVIDIA's own `nv set`
procedure, EOS configs from AVD and Intel's Gaudi guide; each read as the switch behaves."""

import json
import os

import pytest

from rocetune.errors import ParseError, RocetuneError
from rocetune.lint.switch_qos import compare
from rocetune.model.qos import default_plan, load_text
from rocetune.switchos import eos, nvue, read_file, sonic

from .sonic_configdb import config_load

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch")


def _path(name):
    return os.path.join(FIX, name)


def _read(name):
    with open(_path(name), encoding="utf-8") as fh:
        return fh.read()


def _ids(findings, severity=None):
    return sorted(f.id for f in findings if severity is None or f.severity == severity)


def _plan(text):
    return load_text(text, "plan.yml")


# --- SONiC -------------------------------------------------------------------------------------

def test_sonic_default_map_sends_roce_to_a_lossy_class():
    sw = sonic.OS.parse(_read("sonic-qos-arista7050.json"), "qos-arista7050.json")
    assert len(sw.groups) == 1 and len(sw.groups[0].ports) == 28
    g = sw.groups[0]
    assert g.dscp_to_priority[26] == 1 and g.dscp_to_priority[48] == 6 and g.pfc == (3, 4)
    found = compare(default_plan(), sw)
    data = [f for f in found if f.id == "switch-data-class-mismatch"]
    assert len(data) == 1 and data[0].severity == "error"
    assert "DSCP 26 goes to traffic class 1, lossy (no PFC)" in data[0].message
    assert data[0].evidence["traffic_class"] == 1 and data[0].evidence["pfc"] == [3, 4]
    assert _ids(found, "error") == ["switch-data-class-mismatch"]
    assert _ids(found, "warning") == ["switch-cnp-not-strict", "switch-ecn-thresholds-differ", "switch-pfc-extra"]
    ecn = next(f for f in found if f.id == "switch-ecn-thresholds-differ")
    assert "minimum 1048576 bytes (plan 150000)" in ecn.message and "probability 5%" in ecn.message
    assert "no BUFFER_PG table" in next(f.message for f in found if f.id == "switch-lossless-buffer-missing")


def test_sonic_map_that_follows_the_plan_agrees():
    doc = json.loads(_read("sonic-qos-arista7050.json"))
    doc["DSCP_TO_TC_MAP"]["AZURE"]["26"] = "3"
    for port in doc["PORT_QOS_MAP"].values():
        if "pfc_enable" in port:
            port["pfc_enable"] = "3"
    found = compare(_plan("ecn_marking: {min_threshold: 1048576, max_threshold: 2097152, probability: 5}\n"),
                    sonic.from_doc(doc, "edited copy"))
    assert _ids(found, "error") + _ids(found, "warning") == ["switch-cnp-not-strict"]


def test_sonic_references_before_202106_read_as_after_db_migrator():
    """sonic-utilities' db_migrator input (3_0_1: `[BUFFER_PROFILE|...]` references) and its expected
    output (3_0_3: plain names) are one switch: read alike, with buffermgrd's lossless PGs found."""
    old = sonic.OS.parse(_read("sonic-utilities-qos-tables-3_0_1.json"), "3_0_1")
    new = sonic.OS.parse(_read("sonic-utilities-qos-tables-3_0_3.json"), "3_0_3")
    assert [(g.ports, g.pfc, g.dscp_to_priority, g.ingress_lossless) for g in old.groups] == \
           [(g.ports, g.pfc, g.dscp_to_priority, g.ingress_lossless) for g in new.groups]
    g = old.groups[0]
    assert len(g.ports) == 66 and g.pfc == (3, 4) and g.ingress_lossless == {3: True, 4: True}
    assert g.queues[3].lossless is True and g.queues[0].lossless is False and old.unbound_ports == []
    assert [(f.id, f.message) for f in compare(default_plan(), old)] == \
           [(f.id, f.message) for f in compare(default_plan(), new)]
    assert "switch-lossless-buffer-missing" not in _ids(compare(default_plan(), old))


def test_sonic_mgmt_chassis_config_reports_its_unbound_ports_and_runtime_pgs():
    """sonic-mgmt's VOQ linecard CONFIG_DB binds QoS to 3 of 32 ports; its lossless PGs are made by
    buffermgrd at run time (traditional model), which the check says instead of calling them lossy."""
    for name in ("sonic-mgmt-vlab-t2-01-config_db.json", "sonic-mgmt-vlab-t2-01-qos_new_dbfmt-config_db.json"):
        sw = read_file(_path(name))
        assert [g.ports for g in sw.groups] == [["Ethernet0", "Ethernet4", "Ethernet8"]]
        assert len(sw.unbound_ports) == 29 and sw.all_ports == 32
        found = compare(default_plan(), sw)
        unbound = next(f for f in found if f.id == "switch-ports-unbound")
        assert unbound.severity == "warning" and "29 of the switch's 32 ports bind no QoS: Ethernet12" in unbound.message
        buf = next(f for f in found if f.id == "switch-lossless-buffer-missing")
        assert buf.severity == "info" and "buffermgrd creates them at run time" in buf.message


def test_sonic_flat_redis_keys_are_read():
    sw = read_file(_path("sonic-utilities-qos_map_table_input.json"))
    assert {tuple(g.ports): g.pfc for g in sw.groups} == {("Ethernet0", "Ethernet100"): (3, 4),
                                                          ("Ethernet92", "Ethernet96"): ()}
    assert sw.unbound_ports == []


def test_sonic_buffers_without_any_port_binding_fail():
    sw = read_file(_path("sonic-buffers-mellanox2410-dynamic.json"))
    found = compare(default_plan(), sw)
    assert [(f.id, f.severity) for f in found] == [("switch-ports-unbound", "error")]


def test_sonic_pfc_on_a_priority_the_template_has_no_buffer_for_is_lossless_in_name_only():
    """PFC on 2 over SONiC's own buffer config (PG 3-4 NULL, queues 0-2 lossy): no lossless PG
    and a lossy egress queue for 2, what a map-only configuration leaves behind."""
    running = json.loads(_read("sonic-buffers-mellanox2410-dynamic.json"))
    plan = _plan("data: {dscp: 26, priority: 2}\nlossless_priorities: [2]\n")
    maps_only = {"DSCP_TO_TC_MAP": {"X": {"26": "2", "48": "6"}}, "TC_TO_PRIORITY_GROUP_MAP": {"X": {"2": "2"}},
                 "PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "X", "tc_to_pg_map": "X", "pfc_enable": "2"}}}
    found = compare(plan, sonic.from_doc(config_load(running, maps_only), "maps only"))
    buf = next(f for f in found if f.id == "switch-lossless-buffer-missing")
    assert buf.severity == "error"
    assert "no lossless ingress buffer for priority 2 and lossy egress queue 2 for priority 2" in buf.message


# --- NVUE --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nvue-show-qos-roce.txt", "nvue-5.0-show-qos-roce.txt", "nvue-5.6-show-qos-roce.txt",
                                  "nvue-5.16-show-qos-roce-single-ipool.txt",
                                  "nvue-5.16-show-interface-qos-roce-status.txt"])
def test_nvue_roce_defaults_agree_with_the_default_plan(name):
    sw = read_file(_path(name))
    g = sw.groups[0]
    assert sw.kind == "nvue" and g.trust == "both" and g.pfc == (3,)
    assert g.priority_of_dscp(26) == 3 and g.priority_of_dscp(48) == 6 and g.tc_of(3) == 3
    assert g.queues[6].strict and g.queues[3].ecn and g.ingress_lossless == {3: True} and g.queues[3].lossless
    assert _ids(compare(default_plan(), sw), "error") + _ids(compare(default_plan(), sw), "warning") == []


def test_nvue_interface_level_thresholds_are_the_asics_and_still_agree():
    sw = read_file(_path("nvue-5.16-show-interface-qos-roce-status.txt"))
    q = sw.groups[0].queues[3]
    assert sw.groups[0].ports == ["swp16"] and q.programmed and round(q.min_threshold) == 156672  # 153.00 KB
    found = compare(default_plan(), sw)
    assert [(f.id, f.severity) for f in found] == [("switch-pfc-watchdog-off", "info")]  # the show omits it
    same_in_global_show = _read("nvue-5.16-show-qos-roce-single-ipool.txt").replace("146.48 KB", "153.00 KB")
    found = compare(default_plan(), nvue.OS.parse(same_in_global_show, "global"))
    assert _ids(found, "warning") == ["switch-ecn-thresholds-differ"]  # configured values are not rounded by the ASIC


def test_nvue_lossy_multi_tc_reads_switch_priorities_without_dscps():
    sw = read_file(_path("nvue-5.16-show-qos-roce-lossy-multi-tc.txt"))
    g = sw.groups[0]
    assert g.priority_of_dscp(26) == 4 and 6 not in g.dscp_to_priority.values() and g.tc_of(4) == 4
    assert g.queues[3].lossless is False  # lossy-default-egress holds every traffic class
    found = compare(default_plan(), sw)
    assert "switch-data-class-mismatch" in _ids(found, "error")


def test_nvidias_procedure_for_lossless_priority_2_follows_a_priority_2_plan():
    """RoCE lossless, then the page's commands moving the lossless switch priority to 2: PFC on
    switch priority 2, which DSCP 26 maps to, and RoCE still on traffic class 3 with ECN."""
    text = _read("nvue-set-roce.txt") + _read("nvue-set-lossless-priority-2.txt")
    sw = nvue.OS.parse(text, "procedure")
    g = sw.groups[0]
    assert g.pfc == (2,) and g.priority_of_dscp(26) == 2 and g.tc_of(2) == 3 and g.queue_of(2) == 3
    found = compare(_plan("data: {dscp: 26, priority: 2}\nlossless_priorities: [2]\n"), sw)
    # the page's commands leave NVUE's PFC watchdog at its default, disabled
    assert _ids(found, "error") + _ids(found, "warning") == ["switch-pfc-watchdog-off"]
    assert "the commands move PFC but not the RoCE lossless pool" in \
        next(f.message for f in found if f.id == "switch-lossless-buffer-missing")
    assert "switch-data-class-mismatch" in _ids(compare(default_plan(), sw), "error")


def test_nvue_pcp_plan_does_not_accept_trusting_pcp_and_dscp():
    found = compare(_plan("trust: pcp\n"), read_file(_path("nvue-show-qos-roce.txt")))
    trust = [f for f in found if f.id == "switch-trust-mismatch"]
    assert len(trust) == 1 and trust[0].severity == "error" and "classifies IP packets (RoCE v2) by DSCP" in trust[0].message


def test_nvue_against_a_plan_on_another_priority():
    found = compare(_plan("data: {dscp: 26, priority: 4}\nlossless_priorities: [4]\n"),
                    read_file(_path("nvue-show-qos-roce.txt")))
    assert _ids(found, "error") == ["switch-data-class-mismatch", "switch-pfc-missing"]
    assert _ids(found, "warning") == ["switch-pfc-extra"]


# --- EOS ---------------------------------------------------------------------------------------

def test_eos_excerpt_flags_what_it_states_and_leaves_the_rest_unchecked():
    sw = read_file(_path("eos-gaudi-7060dx4-l2.cfg"))
    g = sw.groups[0]
    assert g.ports == ["EthernetXXXXXX"] and g.trust == "dscp" and g.pfc == (0, 1, 2, 3)
    found = compare(default_plan(), sw)
    assert _ids(found, "error") == ["switch-ecn-off"]
    # the published example enables no PFC watchdog on its no-drop port
    assert _ids(found, "warning") == ["switch-pfc-extra", "switch-pfc-watchdog-off"]
    assert "switch-data-class-mismatch" in _ids(found, "info")


def test_eos_avd_maps_with_drop_precedence_global_pfc_off_and_queue_maps():
    sw = read_file(_path("eos-avd-qos.cfg"))
    eth1 = next(g for g in sw.groups if g.ports == ["Ethernet1"])
    assert eth1.priority_of_dscp(26) == 4 and eth1.priority_of_dscp(46) == 5  # `... drop-precedence 2` read
    assert eth1.pfc == () and eth1.queue_of(6) == 2 and eth1.queues[2].strict  # `all off`; TC 6 -> tx-queue 2
    found = compare(default_plan(), sw)
    eth1_found = {f.id: f for f in found if f.subject == "Ethernet1"}
    assert eth1_found["switch-data-class-mismatch"].severity == "error"
    assert eth1_found["switch-pfc-missing"].severity == "error" and "switch-cnp-not-strict" not in eth1_found
    plan4 = _plan("data: {dscp: 26, priority: 4}\nlossless_priorities: [4]\n")
    ecn = next(f for f in compare(plan4, sw) if f.subject == "Ethernet1" and f.id == "switch-ecn-thresholds-differ")
    assert ecn.severity == "info" and "thresholds in segments" in ecn.message


def test_eos_running_config_interfaces_without_pfc_lines_have_pfc_off():
    sw = read_file(_path("eos-avd-ethernet-interfaces.cfg"))
    by_port = {p: g for g in sw.groups for p in g.ports}
    assert by_port["Ethernet2"].pfc == (5,) and by_port["Ethernet1"].pfc == ()
    assert by_port["Ethernet21"].trust == "none"
    assert "Management1" not in by_port
    # one policy on every OS: a shut-down interface is not judged, one without QoS lines binds none
    assert sw.inactive_ports == {"Ethernet4": "shutdown"} and "Ethernet4" not in by_port
    assert "Ethernet5" in sw.unbound_ports and "Ethernet5" not in by_port
    found = compare(default_plan(), sw)
    assert not [f for f in found if "Ethernet4" in f.subject or "Ethernet5" in f.subject and f.severity == "error"]
    unbound = next(f for f in found if f.id == "switch-ports-unbound")
    assert unbound.severity == "warning" and "Ethernet4" not in unbound.evidence["unbound"]


def test_eos_ecn_units_profiles_and_probability_with_segments():
    text = ("qos map dscp 26 to traffic-class 3\nqos map dscp 48 to traffic-class 6\n"
            "qos profile ROCE\n   qos trust dscp\n   priority-flow-control on\n"
            "   priority-flow-control priority 3 no-drop\n   uc-tx-queue 3\n"
            "      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100\n"
            "   uc-tx-queue 6\n      priority strict\n!\ninterface Ethernet1\n   service-profile ROCE\n")
    assert _ids(compare(default_plan(), eos.OS.parse(text, "t")), "error") == []
    segments = text.replace("150 kbytes", "2000 segments").replace("1500 kbytes", "10000 segments")
    found = compare(default_plan(), eos.OS.parse(segments, "t"))
    assert [(f.id, f.severity) for f in found if f.id.startswith("switch-ecn")] == [("switch-ecn-thresholds-differ", "info")]
    found = compare(default_plan(), eos.OS.parse(segments.replace("probability 100", "probability 20"), "t"))
    ecn = next(f for f in found if f.id == "switch-ecn-thresholds-differ")
    assert ecn.severity == "warning" and "probability 20% (plan 100%)" in ecn.message and "segments not compared" in ecn.message


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mod,text,needle", [
    (sonic, "{not json", "not JSON"),
    (sonic, '{"PORT": {}}', "no QoS table"),
    (sonic, '{"QUEUE": {"Ethernet0": {}}}', "expected PORT|INDEX"),
    (nvue, '{"congestion-control": {}}', "this is JSON"),
    (nvue, "hello\n", "no RoCE QoS lines"),
    (nvue, "nv set qos mapping default-global dscp 26 switch-priority x\n", "switch-priority: 'x' is not a number"),
    (eos, "hostname leaf1\n", "no EOS QoS lines"),
    (eos, "", "empty output"),
])
def test_bad_outputs_are_one_line_errors(mod, text, needle):
    with pytest.raises(ParseError, match=needle.replace("|", r"\|")):
        mod.OS.parse(text, "f")


def test_a_map_the_output_does_not_define_is_said_and_left_unchecked():
    sw = sonic.OS.parse('{"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "X", "pfc_enable": "3"}}}', "f")
    assert sw.warnings == ["DSCP_TO_TC_MAP|X is referenced but not defined"]
    data = next(f for f in compare(default_plan(), sw) if f.id == "switch-data-class-mismatch")
    assert data.severity == "info" and "DSCP_TO_TC_MAP|X is not in the output" in data.message


def test_an_output_of_no_known_os_is_named(tmp_path):
    (tmp_path / "x.txt").write_text("hostname leaf\n")
    with pytest.raises(RocetuneError, match="not recognised as a switch's QoS output"):
        read_file(str(tmp_path / "x.txt"))


def test_sonic_traditional_template_leaves_the_lossless_pgs_to_buffermgrd():
    """sonic-buildimage's traditional-model buffer config has no lossless PG (buffermgrd writes
    them at run time): after loading a rendered plan the queues read lossless and the PGs are said
    to be buffermgrd's, not called lossy."""
    from rocetune.model.switch_qos import SwitchIntent

    running = json.loads(_read("sonic-buffers-mellanox2410.json"))
    running["DEVICE_METADATA"] = {"localhost": {"buffer_model": "traditional"}}
    plan = _plan("lossless_priorities: [3, 5]\ncts: {dscp: 40, priority: 5}\n")
    rendered = sonic.OS.render(SwitchIntent.from_plan(plan), ["Ethernet0"],
                               {"buffer_model": "traditional", "platform": "mellanox"})
    sw = sonic.from_doc(config_load(running, json.loads(rendered.text)), "loaded")
    g = next(g for g in sw.groups if g.ports == ["Ethernet0"])
    assert g.queues[3].lossless and g.queues[5].lossless and g.queues[4].lossless is False
    assert g.ingress_lossless == {3: None, 5: None}
    found = [f for f in compare(plan, sw) if "Ethernet0" in f.subject.split(",")]
    assert _ids(found, "error") == [] and "buffermgrd creates them at run time" in \
        next(f.message for f in found if f.id == "switch-lossless-buffer-missing")
