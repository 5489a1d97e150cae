"""Faults planted one port at a time in published switch outputs (tests/fixtures/switch,
PROVENANCE.md), or in rocetune's own render loaded over SONiC's generated buffers where no output
with the table is published: each is found and named with its port, and the untouched ports of
the same output stay clean."""

import copy
import json
import os

import pytest

from rocetune.errors import ParseError
from rocetune.lint.switch_qos import compare
from rocetune.model.qos import PfcWatchdog, default_plan, load_text
from rocetune.model.switch_qos import SwitchIntent
from rocetune.switchos import eos, nvue, nxos, sonic

from .sonic_configdb import config_load

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch")


def _read(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def _json(name):
    return json.loads(_read(name))


def _bad(found):
    """(id, subject, severity) of what is wrong (info is 'not checked')."""
    return sorted((f.id, f.subject, f.severity) for f in found if f.severity != "info")


# --- NVUE: every show in a file, every interface's profiles -------------------------------------

STATUS = "nvue-5.16-show-interface-qos-roce-status.txt"


def _swp17_without_pfc_and_ecn(text):
    """The published swp16 show as swp17 would print it with PFC and ECN off on priority 3."""
    out = text.replace("swp16", "swp17")
    out = out.replace("pfc-priority      3 ", "pfc-priority      - ")
    out = out.replace("enabled-tc        0,3", "enabled-tc        0  ")
    assert out.count("swp17") == 1 and "enabled-tc        0  " in out
    return out


def test_nvue_a_later_interface_in_the_same_file_is_read():
    """Two `nv show interface IF qos roce status` saved into one file: the second port's faults are
    its own (the first value per key used to stand for the whole file)."""
    text = _read(STATUS)
    sw = nvue.OS.parse(text + "\n" + _swp17_without_pfc_and_ecn(text), "two.txt")
    assert [g.ports for g in sw.groups] == [["swp16"], ["swp17"]]
    assert _bad(compare(default_plan(), sw)) == [
        ("switch-ecn-off", "swp17", "error"),
        ("switch-pfc-missing", "swp17", "error"),
    ]


def test_nvue_interface_headers_and_unnamed_shows():
    body = _read(STATUS).split("\n", 1)[1]  # the show without its prompt line
    bad = _swp17_without_pfc_and_ecn(_read(STATUS)).split("\n", 1)[1]
    sw = nvue.OS.parse(f"Interface: swp1\n{body}\nInterface: swp2\n{bad}", "all.txt")
    assert [g.ports for g in sw.groups] == [["swp1"], ["swp2"]]
    assert {s for _, s, _ in _bad(compare(default_plan(), sw))} == {"swp2"}
    # saved without prompt or header: still two readings, and the reader says they name no port
    sw = nvue.OS.parse(f"{body}\n{bad}", "bare.txt")
    assert len(sw.groups) == 2 and "name no interface" in sw.warnings[0]
    assert ("switch-pfc-missing", "switch", "error") in _bad(compare(default_plan(), sw))


def test_nvue_same_shows_for_many_ports_fold_into_one_group():
    text = _read(STATUS)
    sw = nvue.OS.parse("\n".join(text.replace("swp16", f"swp{n}") for n in range(1, 9)), "eight.txt")
    assert [g.ports for g in sw.groups] == [[f"swp{n}" for n in range(1, 9)]]
    assert _bad(compare(default_plan(), sw)) == []


BINDINGS = """nv set interface swp1-8 qos pfc-watchdog state enable
nv set qos pfc nopfc switch-priority 4
nv set interface swp7 qos pfc profile nopfc
nv set qos congestion-control noecn traffic-class 0 min-threshold-bytes 40000
nv set interface swp8 qos congestion-control profile noecn
"""


def test_nvue_per_port_profiles_are_read_where_they_are_bound():
    """NVIDIA's RoCE commands, then a PFC profile without priority 3 bound to swp7 and a
    congestion-control profile without traffic class 3 to swp8 (the QoS page's `nv set qos pfc
    PROFILE` / `nv set interface IFS qos pfc profile PROFILE` forms)."""
    sw = nvue.OS.parse(_read("nvue-set-roce.txt") + BINDINGS, "bound.txt")
    by_port = {p: g for g in sw.groups for p in g.ports}
    assert by_port["swp1"].ports == [f"swp{n}" for n in range(1, 7)]
    assert by_port["swp7"].pfc == (4,) and by_port["swp8"].queues[3].ecn is False
    assert _bad(compare(default_plan(), sw)) == [
        ("switch-ecn-off", "swp8", "error"),
        ("switch-pfc-extra", "swp7", "warning"),
        ("switch-pfc-missing", "swp7", "error"),
    ]
    # the QoS page's other binding form, `qos congestion-control PROFILE`
    other = _read("nvue-set-roce.txt") + BINDINGS.replace(
        "congestion-control profile noecn", "congestion-control noecn"
    )
    assert _bad(compare(default_plan(), nvue.OS.parse(other, "t"))) == _bad(compare(default_plan(), sw))


def test_nvue_a_binding_to_an_undefined_profile_is_an_input_error():
    with pytest.raises(ParseError, match="binds the pfc profile 'ghost'"):
        nvue.OS.parse(_read("nvue-set-roce.txt") + "nv set interface swp3 qos pfc profile ghost\n", "t")


def test_nvue_interface_lists_and_ranges():
    assert nvue.interfaces("swp1-4,swp6", "t") == ["swp1", "swp2", "swp3", "swp4", "swp6"]
    assert nvue.interfaces("swp1s0-3", "t") == ["swp1s0", "swp1s1", "swp1s2", "swp1s3"]
    with pytest.raises(ParseError):
        nvue.interfaces("swp9-2", "t")


def test_nvue_watchdog_per_port_from_the_commands():
    text = _read("nvue-set-roce.txt") + "nv set interface swp1,swp2 qos pfc-watchdog state enable\n"
    sw = nvue.OS.parse(
        text + "nv set qos pfc roce-ports switch-priority 3\nnv set interface swp3 qos pfc profile roce-ports\n", "t"
    )
    by_port = {p: g for g in sw.groups for p in g.ports}
    assert by_port["swp1"].watchdog is True and by_port["swp3"].watchdog is False
    assert _bad(compare(default_plan(), sw)) == [("switch-pfc-watchdog-off", "swp3", "warning")]


# --- SONiC: references resolved, the watchdog, the cable, admin-down ports ------------------------

MIGRATED = "sonic-utilities-qos-tables-3_0_3.json"


def test_sonic_a_deleted_buffer_profile_is_no_lossless_queue():
    doc = _json(MIGRATED)
    assert _bad(compare(default_plan(), sonic.from_doc(copy.deepcopy(doc), "t"))) == _bad(
        compare(default_plan(), sonic.from_doc(copy.deepcopy(doc), "t"))
    )
    gone = copy.deepcopy(doc)
    del gone["BUFFER_PROFILE"]["egress_lossless_profile"]
    sw = sonic.from_doc(gone, "t")
    assert "BUFFER_PROFILE|egress_lossless_profile is referenced but not defined" in sw.warnings[0]
    found = [f for f in compare(default_plan(), sw) if f.id == "switch-lossless-buffer-missing"]
    assert found and all(f.severity == "error" and "lossy egress queue 3" in f.message for f in found)


def test_sonic_a_queue_naming_a_profile_that_does_not_exist_is_named_with_its_port():
    doc = _json(MIGRATED)
    doc["BUFFER_QUEUE"]["Ethernet4|3-4"] = {"profile": "egress_lossless_profile_typo"}
    found = compare(default_plan(), sonic.from_doc(doc, "t"))
    missing = [f for f in found if f.id == "switch-lossless-buffer-missing" and f.severity == "error"]
    assert [f.subject for f in missing] == ["Ethernet4"]


def _loaded(plan, ports, chosen=None):
    """rocetune's render for `ports`, `config load`ed over SONiC's generated SN2410 buffers."""
    rendered = sonic.OS.render(
        SwitchIntent.from_plan(plan), ports, chosen or {"buffer_model": "dynamic", "platform": "mellanox"}
    )
    running = _json("sonic-buffers-mellanox2410-dynamic.json")
    running.setdefault("DEVICE_METADATA", {"localhost": {"buffer_model": "dynamic"}})
    return config_load(running, json.loads(rendered.text))


PORTS = ["Ethernet0", "Ethernet4", "Ethernet8"]


def test_sonic_loaded_render_is_clean_then_each_watchdog_fault_names_its_port():
    doc = _loaded(default_plan(), PORTS)
    assert _bad(compare(default_plan(), sonic.from_doc(copy.deepcopy(doc), "t"))) == []
    no_entry = copy.deepcopy(doc)
    del no_entry["PFC_WD"]["Ethernet4"]
    assert _bad(compare(default_plan(), sonic.from_doc(no_entry, "t"))) == [
        ("switch-pfc-watchdog-off", "Ethernet4", "warning")
    ]
    unwatched = copy.deepcopy(doc)
    unwatched["PORT_QOS_MAP"]["Ethernet8"]["pfcwd_sw_enable"] = "4"
    found = compare(default_plan(), sonic.from_doc(unwatched, "t"))
    assert _bad(found) == [("switch-pfc-watchdog-off", "Ethernet8", "warning")]
    assert "leaves priority 3 unwatched" in next(f.message for f in found if f.severity == "warning")


WATCHDOG_PLAN = "pfc_watchdog: {action: drop, detection_time: 400, restoration_time: 1200}\n"


def test_sonic_the_plans_watchdog_is_rendered_then_each_planted_difference_names_its_port():
    plan = load_text(WATCHDOG_PLAN, "p")
    doc = _loaded(plan, PORTS)
    assert doc["PFC_WD"]["Ethernet0"] == {"action": "drop", "detection_time": "400", "restoration_time": "1200"}
    assert doc["PFC_WD"]["GLOBAL"] == {"POLL_INTERVAL": "400"}  # no longer than either time
    assert _bad(compare(plan, sonic.from_doc(copy.deepcopy(doc), "t"))) == []
    # the default render (start_default's 200 ms) against a plan that asks for 400/1200
    default = _loaded(default_plan(), PORTS)
    found = [f for f in compare(plan, sonic.from_doc(default, "t")) if f.id == "switch-pfc-watchdog-mismatch"]
    assert [(f.severity, f.subject) for f in found] == [("warning", "Ethernet0,Ethernet4,Ethernet8")]
    assert "detection_time 200 ms (plan: 400 ms); restoration_time 200 ms (plan: 1200 ms)" in found[0].message
    forward = copy.deepcopy(doc)
    forward["PFC_WD"]["Ethernet4"]["action"] = "forward"
    slow = copy.deepcopy(doc)
    slow["PFC_WD"]["Ethernet8"]["detection_time"] = "5000"
    assert _bad(compare(plan, sonic.from_doc(forward, "t"))) == [("switch-pfc-watchdog-mismatch", "Ethernet4", "warning")]
    assert _bad(compare(plan, sonic.from_doc(slow, "t"))) == [("switch-pfc-watchdog-mismatch", "Ethernet8", "warning")]
    assert _bad(compare(default_plan(), sonic.from_doc(slow, "t"))) == []  # a plan without pfc_watchdog: not held


def test_eos_the_plans_watchdog_is_rendered_and_a_changed_timeout_is_found():
    plan = load_text(WATCHDOG_PLAN, "p")
    text = _eos_render(plan)
    assert "priority-flow-control pause watchdog default timeout 0.4\n" in text
    assert "priority-flow-control pause watchdog default recovery-time 1.2\n" in text
    assert "priority-flow-control pause watchdog default polling-interval 0.2\n" in text
    assert _bad(compare(plan, eos.OS.parse(text, "t"))) == []
    changed = text.replace("watchdog default timeout 0.4", "watchdog default timeout 2")
    found = compare(plan, eos.OS.parse(changed, "t"))
    assert _bad(found) == [("switch-pfc-watchdog-mismatch", "Ethernet1/1,Ethernet2/1", "warning")]
    assert "detection_time 2000 ms (plan: 400 ms)" in next(f.message for f in found if f.severity == "warning")


def test_the_plans_watchdog_an_os_cannot_take_is_refused():
    from rocetune.errors import RocetuneError

    odd = load_text("pfc_watchdog: {detection_time: 155}\n", "p")
    with pytest.raises(RocetuneError, match="10 ms steps"):
        _eos_render(odd)
    assert sonic.OS.render(SwitchIntent.from_plan(odd), ["Ethernet0"], {}).text  # SONiC takes any millisecond
    forward = load_text("pfc_watchdog: {action: forward}\n", "p")
    with pytest.raises(RocetuneError, match="no forward action"):
        _eos_render(forward)
    with pytest.raises(RocetuneError, match="no other action"):
        nxos.OS.render(SwitchIntent.from_plan(forward), ["Ethernet1/1"], {})


@pytest.mark.parametrize("text, needle", [
    ("pfc_watchdog: {action: alert}\n", "pfc_watchdog.action: 'alert' is not one of drop, forward"),
    ("pfc_watchdog: {detection_time: 50}\n", "pfc_watchdog.detection_time (milliseconds): 50 is out of range 100..5000"),
    ("pfc_watchdog: {restoration_time: 60001}\n", "restoration_time (milliseconds): 60001 is out of range 100..60000"),
    ("pfc_watchdog: {detect: 200}\n", "pfc_watchdog: unknown key(s) detect"),
    ("pfc_watchdog: 200\n", "pfc_watchdog: expected a mapping"),
])
def test_the_plans_watchdog_is_validated_in_the_one_validator(text, needle):
    from rocetune.errors import RocetuneError

    with pytest.raises(RocetuneError) as exc:
        load_text(text, "p")
    assert needle in exc.value.message


def test_the_modules_copy_of_the_validator_reads_pfc_watchdog_alike():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "plugins" / "module_utils" / "rocetune_qos_plan.py"
    spec = importlib.util.spec_from_file_location("module_copy", path)
    copy_ = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy_)
    assert copy_.validate({"pfc_watchdog": {"detection_time": 300}})["pfc_watchdog"] == \
        {"action": "drop", "detection_time": 300, "restoration_time": 200}
    with pytest.raises(copy_.QosPlanError, match="not one of drop, forward"):
        copy_.validate({"pfc_watchdog": {"action": "errdisable"}})


def test_sonic_cable_length_zero_short_and_missing():
    plan = load_text("buffer: {cable_length: 40, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]}\n", "p")
    doc = _loaded(plan, PORTS)
    assert doc["CABLE_LENGTH"]["AZURE"]["Ethernet0"] == "40m"  # rendered over the template's 300m
    assert _bad(compare(plan, sonic.from_doc(copy.deepcopy(doc), "t"))) == []
    zero = copy.deepcopy(doc)
    zero["CABLE_LENGTH"]["AZURE"]["Ethernet4"] = "0m"
    assert _bad(compare(default_plan(), sonic.from_doc(zero, "t"))) == [("switch-cable-length", "Ethernet4", "error")]
    short = copy.deepcopy(doc)
    short["CABLE_LENGTH"]["AZURE"]["Ethernet8"] = "5m"
    assert _bad(compare(plan, sonic.from_doc(short, "t"))) == [("switch-cable-length", "Ethernet8", "warning")]
    assert _bad(compare(default_plan(), sonic.from_doc(short, "t"))) == []  # the plan states no cable
    gone = copy.deepcopy(doc)
    del gone["CABLE_LENGTH"]["AZURE"]["Ethernet0"]
    info = [f for f in compare(plan, sonic.from_doc(gone, "t")) if f.id == "switch-cable-length"]
    assert [(f.subject, f.severity) for f in info] == [("Ethernet0", "info")]
    assert "buffermgrd waits for one" in info[0].message


def test_sonic_admin_down_ports_are_not_judged():
    """sonic-mgmt's linecard binds QoS to 3 of its 32 ports; with the 29 others administratively
    down nothing is unbound, and a bound port taken down is left out too."""
    doc = _json("sonic-mgmt-vlab-t2-01-qos_new_dbfmt-config_db.json")
    before = sonic.from_doc(copy.deepcopy(doc), "t")
    assert len(before.unbound_ports) == 29
    bound = {p for g in before.groups for p in g.ports}
    for port, fields in doc["PORT"].items():
        if port not in bound:
            fields["admin_status"] = "down"
    after = sonic.from_doc(copy.deepcopy(doc), "t")
    assert after.unbound_ports == [] and len(after.inactive_ports) == 29
    assert "switch-ports-unbound" not in {f.id for f in compare(default_plan(), after)}
    assert "not judged: 29 port(s) administratively down" in after.warnings[-1]
    doc["PORT"]["Ethernet4"]["admin_status"] = "down"
    assert "Ethernet4" not in {p for g in sonic.from_doc(doc, "t").groups for p in g.ports}


# --- EOS: the watchdog and its action --------------------------------------------------------------


def _eos_render(plan=None):
    return eos.OS.render(
        SwitchIntent.from_plan(plan or default_plan()), ["Ethernet1/1", "Ethernet2/1"], {"platform": "strata"}
    ).text


def test_eos_watchdog_removed_or_left_to_errdisable_is_found():
    text = _eos_render()
    assert _bad(compare(default_plan(), eos.OS.parse(text, "t"))) == []
    no_action = "\n".join(line for line in text.splitlines() if "watchdog action" not in line)
    found = compare(default_plan(), eos.OS.parse(no_action, "t"))
    assert _bad(found) == [("switch-pfc-watchdog-off", "Ethernet1/1,Ethernet2/1", "warning")]
    assert "errdisable" in found[0].message or any("errdisable" in f.message for f in found)
    # the watchdog taken off one interface: the profile's line overridden there
    off = text.replace(
        "interface Ethernet2/1\n   service-profile ROCETUNE_ROCE",
        "interface Ethernet2/1\n   service-profile ROCETUNE_ROCE\n   no priority-flow-control pause watchdog",
    )
    assert _bad(compare(default_plan(), eos.OS.parse(off, "t"))) == [
        ("switch-pfc-watchdog-off", "Ethernet2/1", "warning")
    ]


def test_eos_avd_per_port_watchdog_action_is_read():
    text = _read("eos-avd-qos.cfg") + "interface Ethernet9\n   service-profile test_with_pfc\n"
    g = next(g for g in eos.OS.parse(text, "t").groups if g.ports == ["Ethernet9"])
    assert g.watchdog is True and g.watchdog_action == "drop"


def test_eos_shutdown_port_with_no_pfc_is_not_a_failure():
    text = _eos_render() + "interface Ethernet3/1\n   shutdown\n"
    sw = eos.OS.parse(text, "t")
    assert sw.inactive_ports == {"Ethernet3/1": "shutdown"}
    assert _bad(compare(default_plan(), sw)) == []


# --- NX-OS -------------------------------------------------------------------------------------------

NXOS = "nxos-azurelocal-tor-qos.cfg"


def test_nxos_published_config_is_read_as_the_switch_behaves():
    """Microsoft's reference NX-OS QoS for Azure Local ToRs: classification by CoS (3 -> qos-group 3),
    PFC on CoS 3 in the no-drop class c-8q-nq3, queue 3 weighted with ECN at 300 KB, PFC on on the
    storage interface; no watchdog line."""
    from rocetune.switchos import detect

    text = _read(NXOS)
    assert detect(text).name == "nxos"  # not EOS, though both have PFC lines and Ethernet interfaces
    sw = nxos.OS.parse(text, NXOS)
    (g,) = sw.groups
    assert g.ports == ["Ethernet1/17"] and g.trust == "pcp" and g.pfc == (3,)
    assert g.priority_of_pcp(3) == 3 and g.priority_of_pcp(5) == 0 and g.priority_of_dscp(26) == 0
    assert g.ingress_lossless == {3: True} and g.queues[3].lossless and not g.queues[6].lossless
    assert g.queues[3].ecn and g.queues[3].min_threshold == 300000 and g.queues[3].probability == 100
    assert g.queues[6].strict is False and g.watchdog is None
    pcp = load_text("trust: pcp\n", "p")
    assert _bad(compare(pcp, sw)) == [
        ("switch-cnp-not-strict", "Ethernet1/17", "warning"),
        ("switch-ecn-thresholds-differ", "Ethernet1/17", "warning"),
    ]
    assert ("switch-trust-mismatch", "Ethernet1/17", "error") in _bad(compare(default_plan(), sw))


def _nxos_render(ports=("Ethernet1/1", "Ethernet1/2", "Ethernet1/3")):
    return nxos.OS.render(SwitchIntent.from_plan(default_plan()), list(ports), {}).text


def _interface(text, port, line, instead_of=None):
    """`port`'s section of a rendered configuration with `line` added, or in place of `instead_of`."""
    head = f"interface {port}\n"
    start = text.index(head) + len(head)
    end = text.find("\ninterface ", start)
    end = len(text) if end < 0 else end + 1
    body = text[start:end]
    if instead_of is None:
        body = f"  {line}\n" + body
    else:
        assert f"  {instead_of}\n" in body
        body = body.replace(f"  {instead_of}\n", f"  {line}\n")
    return text[:start] + body + text[end:]


def test_nxos_faults_planted_per_interface():
    text = _nxos_render()
    assert _bad(compare(default_plan(), nxos.OS.parse(text, "t"))) == []
    cases = [
        (
            "priority-flow-control mode off",
            "priority-flow-control mode on",
            [("switch-pfc-missing", "Ethernet1/2", "error")],
        ),
        (
            "priority-flow-control watch-dog-interval off",
            "priority-flow-control watch-dog-interval on",
            [("switch-pfc-watchdog-off", "Ethernet1/2", "warning")],
        ),
        # an undefined policy: said in a warning, and what it maps not known (info)
        ("service-policy type qos input OTHER", "service-policy type qos input ROCETUNE_QOS", []),
    ]
    for line, instead_of, want in cases:
        sw = nxos.OS.parse(_interface(text, "Ethernet1/2", line, instead_of), "t")
        assert _bad(compare(default_plan(), sw)) == want, line
    undefined = nxos.OS.parse(
        _interface(
            text, "Ethernet1/2", "service-policy type qos input OTHER", "service-policy type qos input ROCETUNE_QOS"
        ),
        "t",
    )
    assert "qos policy OTHER is applied but not defined" in undefined.warnings


def test_nxos_pause_in_the_wrong_class_and_no_ecn_are_found():
    text = _nxos_render()
    moved = text.replace("class type network-qos c-8q-nq3", "class type network-qos c-8q-nq4")
    found = compare(default_plan(), nxos.OS.parse(moved, "t"))
    assert {(i, s) for i, s, sev in _bad(found) if sev == "error"} == {
        ("switch-lossless-buffer-missing", "Ethernet1/1,Ethernet1/2,Ethernet1/3")
    }
    no_ecn = text.replace(" weight 0 ecn", " weight 0")
    assert _bad(compare(default_plan(), nxos.OS.parse(no_ecn, "t"))) == [
        ("switch-ecn-off", "Ethernet1/1,Ethernet1/2,Ethernet1/3", "error")
    ]
    shut = _interface(text, "Ethernet1/3", "shutdown", "priority-flow-control mode on")
    sw = nxos.OS.parse(shut, "t")
    assert sw.inactive_ports == {"Ethernet1/3": "shutdown"} and _bad(compare(default_plan(), sw)) == []


def test_nxos_pfc_mode_auto_is_said_not_assumed():
    text = _nxos_render(["Ethernet1/1"]).replace("  priority-flow-control mode on\n", "")
    sw = nxos.OS.parse(text, "t")
    assert sw.groups[0].pfc is None and "DCBX negotiates it" in " ".join(sw.warnings)


# --- smaller faults ------------------------------------------------------------------------------------


def test_sonic_a_missing_roce_buffer_queue_entry_is_a_lossy_queue():
    doc = _json(MIGRATED)
    del doc["BUFFER_QUEUE"]["Ethernet4|3-4"]
    found = compare(default_plan(), sonic.from_doc(doc, "t"))
    assert [(f.subject, f.severity) for f in found if f.id == "switch-lossless-buffer-missing"] == [
        ("Ethernet4", "error")
    ]


def test_sonic_overlapping_buffer_keys_are_said():
    doc = _json(MIGRATED)
    doc["BUFFER_PG"]["Ethernet0|3"] = {"profile": "pg_lossless_100000_40m_profile"}
    sw = sonic.from_doc(doc, "t")
    assert "BUFFER_PG Ethernet0: keys 3-4 and 3 overlap" in " ".join(
        sw.warnings
    ) or "BUFFER_PG Ethernet0: keys 3 and 3-4 overlap" in " ".join(sw.warnings)


def test_sonic_an_excerpt_binding_only_global_is_an_error():
    doc = {"DSCP_TO_TC_MAP": {"ROCE": {"26": "3", "48": "6"}}, "PORT_QOS_MAP": {"global": {"dscp_to_tc_map": "ROCE"}}}
    found = compare(default_plan(), sonic.from_doc(doc, "t"))
    unbound = [f for f in found if f.id == "switch-ports-unbound"]
    assert [(f.subject, f.severity) for f in unbound] == [("switch", "error")]
    assert "only PORT_QOS_MAP|global binds QoS" in unbound[0].message


def test_pcp_trust_on_routed_ports_is_a_warning():
    pcp = load_text("trust: pcp\n", "p")
    text = eos.OS.render(SwitchIntent.from_plan(pcp), ["Ethernet1/1", "Ethernet2/1"], {"platform": "strata"}).text
    assert _bad(compare(pcp, eos.OS.parse(text, "t"))) == []
    routed = text.replace("interface Ethernet2/1\n", "interface Ethernet2/1\n   no switchport\n")
    assert _bad(compare(pcp, eos.OS.parse(routed, "t"))) == [("switch-trust-mismatch", "Ethernet2/1", "warning")]
    # Microsoft's NX-OS storage port is a trunk (`switchport`): PCP trust there is sound
    assert "switch-trust-mismatch" not in {i for i, _, _ in _bad(compare(pcp, nxos.OS.parse(_read(NXOS), "t")))}
    routed = _read(NXOS).replace("  switchport\n", "  no switchport\n", 1)
    assert ("switch-trust-mismatch", "Ethernet1/17", "warning") in _bad(compare(pcp, nxos.OS.parse(routed, "t")))


def test_nvue_lossy_plan_says_so_in_its_header():
    lossy = load_text("lossless_priorities: []\n", "p")
    rendered = nvue.OS.render(SwitchIntent.from_plan(lossy), [], {})
    head = rendered.text.split("nv set", 1)[0]
    assert "the plan makes no priority lossless" in head and "with PFC (lossless)" not in head
    assert "no PFC and no lossless pool" in rendered.assumes[0]


def test_the_buffer_finding_fix_names_no_one_os():
    from rocetune.checks import all_checks

    fix = next(c for c in all_checks() if c.id == "switch-lossless-buffer-missing").fix
    assert "--os OS" in fix and "--os sonic" not in fix


# --- the switch's own counters ------------------------------------------------------------------------

COUNTERS = "nvue-5.16-show-interface-qos-roce-counters.txt"


def test_nvue_counters_saved_with_the_status_are_read_per_interface():
    """NVIDIA's swp16 status and counters shows in one file: the counters under their section
    (rx-pfc-stats and tx-pfc-stats both print pause-packets); the published switch discarded RoCE
    on a port where priority 3 is lossless, a warning that says the counts run since the last clear."""
    sw = nvue.OS.parse(_read(STATUS) + _read(COUNTERS), "both.txt")
    assert [g.ports for g in sw.groups] == [["swp16"]]
    assert sw.counters["swp16"] == {
        "rx_roce_discards": 0,
        "tx_roce_discards": 663060754115,
        "rx_pause": 0,
        "tx_pause": 0,
        "ecn_marked": 693777677344,
        "tx_cnp": 0,
    }
    found = [f for f in compare(default_plan(), sw) if f.id == "switch-lossless-discards"]
    assert [(f.subject, f.severity) for f in found] == [("swp16", "warning")]
    assert "663060754115 on transmit" in found[0].message and "since the counters were last cleared" in found[0].message
    # cleared counters: nothing to say; a lossy plan: discards are not a fault of the lossless path
    cleared = _read(COUNTERS).replace("663060754115", "0           ")
    assert not [
        f
        for f in compare(default_plan(), nvue.OS.parse(_read(STATUS) + cleared, "t"))
        if f.id == "switch-lossless-discards"
    ]
    lossy = load_text("lossless_priorities: []\n", "p")
    assert not [f for f in compare(lossy, sw) if f.id == "switch-lossless-discards"]


def test_nvue_counters_alone_are_a_clear_input_error():
    with pytest.raises(ParseError, match="RoCE counters without the RoCE configuration"):
        nvue.OS.parse(_read(COUNTERS), "c")


def test_nvue_all_interfaces_framing_names_each_interface():
    """NVIDIA's all-interfaces form (`nv show interface qos-roce-status-pool-map` as published):
    a dashed line, `Interface: swpN`, a dashed line before each interface's table."""
    blocks = nvue._blocks(_read("nvue-5.16-show-interface-qos-roce-status-pool-map.txt"))
    assert [port for port, _ in blocks] == ["swp1", "swp2", "swp3"]
    # the same framing around the published per-interface status, a later port with PFC and ECN off
    rule = "-------------------------------------"
    body = _read(STATUS).split("\n", 1)[1]
    bad = _swp17_without_pfc_and_ecn(_read(STATUS)).split("\n", 1)[1]
    text = f"{rule}\nInterface: swp16\n{rule}\n{body}{rule}\nInterface: swp17\n{rule}\n{bad}"
    sw = nvue.OS.parse(text, "all.txt")
    assert [g.ports for g in sw.groups] == [["swp16"], ["swp17"]]
    assert {s for _, s, _ in _bad(compare(default_plan(), sw))} == {"swp17"}


def test_eos_and_nxos_are_told_apart_by_what_only_nxos_writes():
    from rocetune.switchos import detect

    eos_text = "interface Ethernet1\n   qos trust dscp\n   priority-flow-control mode on\n   priority-flow-control priority 3 no-drop\n"
    assert detect(eos_text).name == "eos"
    assert detect(_nxos_render()).name == "nxos" and detect(_read(NXOS)).name == "nxos"
    for name in ("eos-avd-qos.cfg", "eos-avd-ethernet-interfaces.cfg", "eos-gaudi-7060dx4-l2.cfg"):
        assert detect(_read(name)).name == "eos", name


def test_nxos_system_qos_without_a_network_qos_policy_pauses_nothing():
    text = _nxos_render(["Ethernet1/1"]).replace("  service-policy type network-qos ROCETUNE_NQ\n", "")
    found = compare(default_plan(), nxos.OS.parse(text, "t"))
    assert ("switch-pfc-missing", "Ethernet1/1", "error") in _bad(found)


def test_nvue_cable_length_from_the_shows_against_the_plan():
    """Cumulus Linux 5.0, 5.12 and 5.16 print RoCE's cable length (100 m in NVIDIA's examples); 5.6's
    example does not, which is said, not guessed."""
    from rocetune.switchos import read_file

    cables = {
        n: read_file(os.path.join(FIX, n)).groups[0].cable_length
        for n in (
            "nvue-5.0-show-qos-roce.txt",
            "nvue-show-qos-roce.txt",
            "nvue-5.16-show-qos-roce-single-ipool.txt",
            "nvue-5.6-show-qos-roce.txt",
        )
    }
    assert list(cables.values()) == [100, 100, 100, None]
    longer = load_text("buffer: {cable_length: 120, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]}\n", "p")
    shorter = load_text("buffer: {cable_length: 50, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]}\n", "p")
    sw = read_file(os.path.join(FIX, "nvue-5.0-show-qos-roce.txt"))
    assert _bad(compare(longer, sw)) == [("switch-cable-length", "switch", "warning")]
    assert _bad(compare(shorter, sw)) == []
    info = [
        f
        for f in compare(longer, read_file(os.path.join(FIX, "nvue-5.6-show-qos-roce.txt")))
        if f.id == "switch-cable-length"
    ]
    assert [f.severity for f in info] == ["info"]


def test_nxos_pause_with_buffer_thresholds_is_a_no_drop_class():
    text = _nxos_render(["Ethernet1/1"]).replace(
        "    pause pfc-cos 3\n", "    pause buffer-size 27456 pause-threshold 12480 resume-threshold 12480 pfc-cos 3\n"
    )
    g = nxos.OS.parse(text, "t").groups[0]
    assert g.pfc == (3,) and g.ingress_lossless == {3: True}
    assert _bad(compare(default_plan(), nxos.OS.parse(text, "t"))) == []


def test_nvue_an_interface_set_down_is_not_judged():
    text = _read("nvue-set-roce.txt") + BINDINGS + "nv set interface swp7 link state down\n"
    sw = nvue.OS.parse(text, "t")
    assert sw.inactive_ports == {"swp7": "link state down"} and "not judged: 1 interface(s)" in sw.warnings[0]
    assert _bad(compare(default_plan(), sw)) == [("switch-ecn-off", "swp8", "error")]


def test_the_documented_pfc_watchdog_block_is_the_default():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "switch-qos.md").read_text()
    block = doc.split("```yaml\npfc_watchdog:", 1)[1].split("```", 1)[0]
    plan = load_text("pfc_watchdog:" + block, "docs")
    assert plan.pfc_watchdog == PfcWatchdog()
