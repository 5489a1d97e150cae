"""The SONiC CONFIG_DB that `qos render --switch sonic` writes is valid under SONiC's own YANG models:
the JSON Schema tools/sonic_yang_schema.py builds from the copied models (and which must be what the
tool builds now), the cross-table references, and libyang through sonic_yang where those are installed."""

import copy
import importlib.util
import json
import os
import sys

import pytest

from rocetune.model.qos import default_plan, load_text
from rocetune.model.switch_qos import SwitchIntent
from rocetune.switchos import sonic

from .sonic_configdb import SWITCH, config_load, db_content, leafref_problems, problems, schema

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "sonic_yang_schema.py")
PCP = load_text("trust: pcp\n", "pcp.yml")
CUSTOM = load_text("data: {dscp: 24, priority: 4}\ncnp: {dscp: 46, priority: 7}\nlossless_priorities: [4]\n"
                   "ecn_marking: {min_threshold: 100000, max_threshold: 400000, probability: 20}\n", "custom.yml")
TWO = load_text("lossless_priorities: [3, 5]\ncts: {dscp: 40, priority: 5}\n", "two.yml")
DYNAMIC_MLNX = {"buffer_model": "dynamic", "platform": "mellanox"}
PLANS = {
    "default-no-ports": (default_plan(), [], {}),
    "default-ports": (default_plan(), ["Ethernet0", "Ethernet4", "Ethernet8"], {}),
    "default-dynamic": (default_plan(), ["Ethernet0", "Ethernet4"], {"buffer_model": "dynamic"}),
    "trust-pcp": (PCP, ["Ethernet0", "Ethernet4"], {}),
    "custom-dscp-priority": (CUSTOM, ["Ethernet0", "Ethernet124"], {}),
    "two-lossless-cts-dynamic": (TWO, ["Ethernet0", "Ethernet4"], DYNAMIC_MLNX),
    "two-lossless-cts-traditional": (TWO, ["Ethernet0"], {"buffer_model": "traditional", "platform": "broadcom"}),
}
# SONiC's buffer template output for a Mellanox SN2410 in the dynamic model (sample_output of
# sonic-config-engine's tests): the switch a rendered file is loaded onto.
BUFFERS = os.path.join(SWITCH, "sonic-buffers-mellanox2410-dynamic.json")


def _tool():
    spec = importlib.util.spec_from_file_location("sonic_yang_schema", TOOL)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _rendered(name):
    plan, ports, chosen = PLANS[name]
    return json.loads(sonic.OS.render(SwitchIntent.from_plan(plan), ports, chosen).text)


def test_the_schema_file_is_what_the_tool_builds_from_the_copied_yang():
    tool = _tool()
    with open(os.path.join(SWITCH, "sonic-configdb-qos.schema.json"), encoding="utf-8") as fh:
        assert fh.read() == tool.text(), "run tools/sonic_yang_schema.py"


def test_the_schema_carries_the_yang_constraints_with_their_lines():
    props = schema()["properties"]
    sched = props["SCHEDULER"]["additionalProperties"]["properties"]
    assert sched["type"]["enum"] == ["DWRR", "WRR", "STRICT"]
    assert "sonic-scheduler.yang:41 enumeration" in sched["type"]["$comment"]
    assert "sonic-scheduler.yang:58 range 1..100" in sched["weight"]["$comment"]
    wred = props["WRED_PROFILE"]["additionalProperties"]["properties"]
    assert wred["ecn"]["enum"][0] == "ecn_none" and "ecn_all" in wred["ecn"]["enum"]
    assert wred["green_max_threshold"]["pattern"] == "^(?:0|[1-9][0-9]{0,19})$"  # uint64
    dscp_key = props["DSCP_TO_TC_MAP"]["additionalProperties"]["propertyNames"]
    assert "sonic-dscp-tc-map.yang:58" in dscp_key["$comment"]
    tc = props["DSCP_TO_TC_MAP"]["additionalProperties"]["additionalProperties"]
    assert "typedef tc_type" in tc["$comment"] and "range 0..15" in tc["$comment"]  # SONiC allows TC 0..15
    pfc = props["PORT_QOS_MAP"]["additionalProperties"]["properties"]["pfc_enable"]
    assert pfc["pattern"] == "^(?:([0-7](,[0-7])*)?)$"
    refs = {(r["table"], r["field"]): r["target"] for r in schema()["x-leafrefs"]}
    assert refs[("QUEUE", "wred_profile")] == "WRED_PROFILE" and refs[("PORT_QOS_MAP", "dot1p_to_tc_map")] == "DOT1P_TO_TC_MAP"


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_rendered_config_is_valid_under_sonic_yang(name):
    doc = _rendered(name)
    assert problems(db_content(doc)) == []
    assert set(doc) <= set(schema()["properties"])  # no table the YANG-derived schema leaves unchecked
    if PLANS[name][1]:
        assert doc["QUEUE"] and leafref_problems(db_content(doc), schema()) == []


@pytest.mark.parametrize("name", ["default-dynamic", "two-lossless-cts-dynamic"])
def test_loaded_onto_sonics_own_buffer_config_the_result_is_valid_and_lossless(name):
    """`config load` of the rendered file over SONiC's template output: still valid under the YANG
    (the buffer profiles it names exist), and every lossless priority has its PG and queue."""
    with open(BUFFERS, encoding="utf-8") as fh:
        running = json.load(fh)
    plan, ports, _ = PLANS[name]
    merged = config_load(running, _rendered(name))
    checked = {t: e for t, e in merged.items() if t in schema()["properties"]}
    assert problems(checked) == []
    assert leafref_problems(dict(checked, BUFFER_PROFILE=merged["BUFFER_PROFILE"]), schema()) == []
    for port in ports:
        queues = {k.split("|")[1]: v["profile"] for k, v in merged["BUFFER_QUEUE"].items() if k.startswith(port + "|")}
        pgs = {k.split("|")[1]: v["profile"] for k, v in merged["BUFFER_PG"].items() if k.startswith(port + "|")}
        covered = [q for key in queues for q in _span(key)]
        assert sorted(covered) == sorted(set(covered)), f"overlapping BUFFER_QUEUE keys on {port}: {queues}"
        for p in plan.lossless_priorities:
            assert [v for k, v in queues.items() if p in _span(k)] == ["egress_lossless_profile"]
            assert [v for k, v in pgs.items() if p in _span(k)] == ["NULL"]


def _span(key):
    lo, _, hi = key.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def test_trust_pcp_renders_a_dot1p_map_that_ports_reference():
    doc = _rendered("trust-pcp")
    assert "DOT1P_TO_TC_MAP" in doc and doc["PORT_QOS_MAP"]["Ethernet0"]["dot1p_to_tc_map"] in doc["DOT1P_TO_TC_MAP"]


def test_schema_values_bite():
    """Each YANG constraint the renderer could break fails, and the message names the value and the YANG line."""
    doc = _rendered("default-ports")
    bad = copy.deepcopy(doc)
    bad["DSCP_TO_TC_MAP"]["ROCETUNE"]["64"] = "3"
    bad["SCHEDULER"]["ROCETUNE_STRICT"]["type"] = "FAST"
    bad["SCHEDULER"]["ROCETUNE_DWRR"]["weight"] = "101"
    bad["WRED_PROFILE"]["ROCETUNE_ECN"]["ecn"] = "ecn_blue"
    bad["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,8"
    bad["TC_TO_QUEUE_MAP"]["ROCETUNE"]["16"] = "0"
    bad["QUEUE"]["Ethernet0|3"]["wred_profile"] = "ROCETUNE_GONE"
    bad["PFC_WD"]["Ethernet0"]["detection_time"] = "50"
    bad["BUFFER_QUEUE"]["Ethernet4|3-17"] = {"profile": "egress_lossless_profile"}
    found = problems(bad)
    expect = {
        "'64' does not match": "sonic-dscp-tc-map.yang:58",
        "'FAST' is not one of": "sonic-scheduler.yang:41",
        "'101' does not match": "sonic-scheduler.yang:58",
        "'ecn_blue' is not one of": "sonic-wred-profile.yang:93",
        "'3,8' does not match": "sonic-port-qos-map.yang:101",
        "'16' does not match": "sonic-types.yang.j2:358",
        "'ROCETUNE_GONE' is no WRED_PROFILE entry": "sonic-queue.yang:93",
        "'50' does not match": "sonic-pfcwd.yang:",
        "'Ethernet4|3-17' does not match": "sonic-buffer-queue.yang:47",
    }
    for what, line in expect.items():
        hits = [p for p in found if what in p]
        assert len(hits) == 1 and line in hits[0], (what, found)
    assert len(found) == len(expect), found


def test_a_missing_referenced_profile_or_map_is_named():
    doc = _rendered("default-ports")
    del doc["SCHEDULER"]["ROCETUNE_DWRR"]
    del doc["DSCP_TO_TC_MAP"]
    found = problems(doc)
    assert any(p.startswith("PORT_QOS_MAP/global/dscp_to_tc_map: 'ROCETUNE' is no DSCP_TO_TC_MAP entry") for p in found)
    assert any(p.startswith("QUEUE/Ethernet8|0/scheduler: 'ROCETUNE_DWRR' is no SCHEDULER entry") for p in found)
    assert sum("is no SCHEDULER entry" in p for p in found) == 3 * 7  # every DWRR queue of three ports


def test_unknown_fields_and_bad_names_are_refused():
    doc = _rendered("default-ports")
    doc["SCHEDULER"]["ROCETUNE_STRICT"]["speed"] = "fast"
    doc["WRED_PROFILE"]["-bad name"] = doc["WRED_PROFILE"]["ROCETUNE_ECN"]
    doc["QUEUE"]["Ethernet0"] = {"scheduler": "ROCETUNE_STRICT"}
    found = problems(doc)
    assert any("SCHEDULER/ROCETUNE_STRICT: Additional properties are not allowed ('speed'" in p for p in found)
    assert any("'-bad name' does not match" in p and "sonic-wred-profile.yang:37" in p for p in found)
    assert any("'Ethernet0' does not match" in p and "sonic-queue.yang:57" in p for p in found)


def test_with_libyang_and_sonic_yang_where_installed():
    sonic_yang = pytest.importorskip("sonic_yang", reason="SONiC's sonic_yang (sonic-yang-mgmt) is not installed "
                                     "here; the JSON Schema built from the same YANG models stands in")
    pytest.importorskip("libyang", reason="the libyang python bindings are not installed here")
    yang_dir = os.environ.get("SONIC_YANG_DIR", "/usr/local/yang-models")
    if not os.path.isdir(yang_dir):
        pytest.skip(f"no SONiC YANG model directory at {yang_dir} (set SONIC_YANG_DIR)")
    for name, (_, ports, _) in sorted(PLANS.items()):
        doc = db_content(_rendered(name))
        # the switch's own PORT table, which the QoS tables reference
        doc["PORT"] = {p: {"lanes": str(i), "speed": "100000", "admin_status": "up"} for i, p in enumerate(ports)}
        sy = sonic_yang.SonicYang(yang_dir)
        sy.loadYangModel()
        sy.loadData(configdbJson=doc)
        sy.validate_data_tree()
