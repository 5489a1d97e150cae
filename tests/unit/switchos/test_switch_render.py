"""`rocetune qos render`: for any plan each switch OS gets a configuration that is lossless (a PFC
priority with its buffers, queue and watchdog) or a refusal that names what is missing; each
configuration reads back through the reader `qos check` uses as the plan, buffers included."""

import json
import os
import subprocess
import sys

import pytest

from rocetune.errors import RocetuneError
from rocetune.lint.switch_qos import compare
from rocetune.model.qos import PfcWatchdog, default_plan, load_text
from rocetune.model.switch_qos import SwitchIntent
from rocetune.switchos import eos, nvue, ports_from, registry, sonic

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src")
FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch")
PLANS = {
    "default": "",
    "two-lossless-cts": "lossless_priorities: [3, 5]\ncts: {dscp: 40, priority: 5}\n",
    "other-dscp-priority-2": ("data: {dscp: 24, priority: 2}\ncnp: {dscp: 46, priority: 7}\nlossless_priorities: [2]\n"
                              "ecn_marking: {min_threshold: 100000, max_threshold: 400000, probability: 20}\n"),
    "pcp-trust": "trust: pcp\n",
    "cts-in-data-class": "cts: {dscp: 46}\n",
    "cts-in-cnp-class": "cts: {dscp: 46, priority: 6}\n",
    "cable-40m-priority-4": ("data: {dscp: 34, priority: 4}\nlossless_priorities: [4]\n"
                             "buffer: {cable_length: 40, prio_buffer: [0, 0, 0, 0, 1, 0, 0, 0]}\n"),
    "watchdog-500-2000": "pfc_watchdog: {action: drop, detection_time: 500, restoration_time: 2000}\n",
    "watchdog-forward": "pfc_watchdog: {action: forward, detection_time: 400}\n",
}
PORTS = {"sonic": ["Ethernet0", "Ethernet4"], "nvue": ["swp1", "swp2"], "eos": ["Ethernet1/1", "Ethernet2/1"],
         "nxos": ["Ethernet1/1", "Ethernet1/2"]}
CHOICES = {"sonic": [{"buffer_model": "dynamic", "platform": "mellanox"},
                     {"buffer_model": "traditional", "platform": "broadcom"}],
           "nvue": [{}, {"roce_mode": "lossless-single-ipool"}],
           "eos": [{"platform": "strata"}, {"platform": "jericho"}],
           "nxos": [{}, {}]}
# What an OS cannot make lossless, refused with the reason.
REFUSED = {("nvue", "two-lossless-cts"): "RoCE mode has one lossless switch priority",
           ("eos", "watchdog-forward"): "EOS's watchdog drops, errdisables the port or only notifies",
           ("nxos", "watchdog-forward"): "NX-OS's PFC watchdog drops a stuck no-drop queue's packets"}


def _plan(name):
    return load_text(PLANS[name], f"{name}.yml")


def _render(os_name, plan, ports=None, chosen=None):
    os_ = registry()[os_name]
    return os_.render(SwitchIntent.from_plan(plan), PORTS[os_name] if ports is None else ports,
                      CHOICES[os_name][0] if chosen is None else chosen)


@pytest.mark.parametrize("os_name", sorted(PORTS))
@pytest.mark.parametrize("plan_name", sorted(PLANS))
@pytest.mark.parametrize("choice", [0, 1])
def test_render_then_check_round_trips(os_name, plan_name, choice):
    plan = _plan(plan_name)
    if (os_name, plan_name) in REFUSED:
        with pytest.raises(RocetuneError, match=REFUSED[(os_name, plan_name)]):
            _render(os_name, plan, chosen=CHOICES[os_name][choice])
        return
    rendered = _render(os_name, plan, chosen=CHOICES[os_name][choice])
    read = registry()[os_name].parse(rendered.text, "rendered")
    found = compare(plan, read)
    assert [(f.id, f.message) for f in found if f.severity != "info"] == []
    g = read.groups[0]
    assert g.pfc == tuple(plan.lossless_priorities)
    for c in SwitchIntent.from_plan(plan).classes:
        if plan.trust == "dscp":
            assert g.priority_of_dscp(c.dscp) == c.priority
    if os_name == "sonic" and CHOICES[os_name][choice]["buffer_model"] == "dynamic":
        assert g.ingress_lossless == {p: True for p in plan.lossless_priorities}
    if os_name in ("sonic", "nvue", "nxos"):
        assert all(g.queues[g.queue_of(p)].lossless for p in plan.lossless_priorities)
    for group in read.groups:  # every port the render binds has the watchdog, dropping on the stuck queue
        assert group.ports == PORTS[os_name]
        assert group.watchdog is True and group.watchdog_action != "errdisable"
        if os_name in ("sonic", "nvue") and plan.buffer is not None:
            assert group.cable_length == plan.buffer.cable_length
        if os_name in ("sonic", "eos"):  # the plan's watchdog, else drop after 200 ms, as SONiC's start_default
            w = plan.pfc_watchdog or PfcWatchdog()
            assert (group.watchdog_action, group.watchdog_detection_ms, group.watchdog_restoration_ms) == \
                (w.action, w.detection_time, w.restoration_time)
    if plan.pfc_watchdog is not None and os_name in ("nvue", "nxos"):  # their times are not set: said
        assert any("pfc_watchdog" in a or "the plan's detection" in a for a in rendered.assumes), rendered.assumes
    assert rendered.assumes and rendered.bound


# --- SONiC -------------------------------------------------------------------------------------

def test_sonic_default_plan_keeps_sonics_own_buffer_layout():
    doc = json.loads(_render("sonic", default_plan(), chosen={}).text)
    assert doc["PORT_QOS_MAP"]["Ethernet4"]["pfc_enable"] == "3"
    # the template's lossless key restated; its lossy keys keep the switch's own profile (q_lossy_profile
    # on Mellanox, egress_lossy_profile elsewhere)
    assert {k: v for k, v in doc["BUFFER_QUEUE"].items() if k.startswith("Ethernet0|")} == \
        {"Ethernet0|3-4": {"profile": "egress_lossless_profile"}}
    assert "BUFFER_PG" not in doc and "pfc_to_pg_map" not in doc["PORT_QOS_MAP"]["Ethernet0"]
    assert doc["PFC_WD"]["Ethernet0"] == {"action": "drop", "detection_time": "200", "restoration_time": "200"}
    assert doc["PFC_WD"]["GLOBAL"] == {"POLL_INTERVAL": "200"}
    assert not any(v is None for table in doc.values() for v in table.values())


def test_sonic_lossless_outside_3_4_gets_its_buffers_and_deletes_the_overlapping_keys():
    plan = _plan("two-lossless-cts")
    dyn = json.loads(_render("sonic", plan, ["Ethernet0"]).text)
    assert dyn["BUFFER_PG"] == {"Ethernet0|3": {"profile": "NULL"}, "Ethernet0|5": {"profile": "NULL"},
                                "Ethernet0|3-4": None}
    assert dyn["BUFFER_QUEUE"] == {  # Mellanox's lossy queue profile, as its templates write it
        "Ethernet0|0-2": {"profile": "q_lossy_profile"}, "Ethernet0|3": {"profile": "egress_lossless_profile"},
        "Ethernet0|4": {"profile": "q_lossy_profile"}, "Ethernet0|5": {"profile": "egress_lossless_profile"},
        "Ethernet0|6": {"profile": "q_lossy_profile"}, "Ethernet0|3-4": None, "Ethernet0|5-6": None}
    assert dyn["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"] == {"ROCETUNE": {"3": "3", "5": "5"}}
    assert dyn["PORT_QOS_MAP"]["Ethernet0"]["pfc_to_pg_map"] == "ROCETUNE"
    assert dyn["DSCP_TO_TC_MAP"]["ROCETUNE"]["40"] == "5" and dyn["TC_TO_PRIORITY_GROUP_MAP"]["ROCETUNE"]["5"] == "5"
    trad = json.loads(_render("sonic", plan, ["Ethernet0"], {"buffer_model": "traditional", "platform": "broadcom"}).text)
    assert trad["BUFFER_PG"] == {"Ethernet0|3-4": None}  # buffermgrd writes the PGs from pfc_enable
    assert trad["BUFFER_QUEUE"]["Ethernet0|0-2"] == {"profile": "egress_lossy_profile"}
    assert "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP" not in trad


@pytest.mark.parametrize("plan_text, chosen, needle", [
    ("lossless_priorities: [2]\ndata: {dscp: 26, priority: 2}\n", {"platform": "mellanox"}, "--buffer-model"),
    ("lossless_priorities: [2]\ndata: {dscp: 26, priority: 2}\n", {"buffer_model": "dynamic"}, "--platform"),
    ("lossless_priorities: [0, 3]\n", {"buffer_model": "dynamic", "platform": "other"}, "priority group 0"),
])
def test_sonic_refuses_what_it_cannot_make_lossless(plan_text, chosen, needle):
    with pytest.raises(RocetuneError) as err:
        _render("sonic", load_text(plan_text, "p"), ["Ethernet0"], chosen)
    assert needle in err.value.message + (err.value.hint or "")


def test_sonic_without_ports_says_exactly_what_is_bound():
    r = _render("sonic", default_plan(), [], {})
    doc = json.loads(r.text)
    assert set(doc["PORT_QOS_MAP"]) == {"global"} and "QUEUE" not in doc and "PFC_WD" not in doc
    assert r.bound.startswith("switch-wide only: PORT_QOS_MAP|global dscp_to_tc_map")
    assert "nothing is lossless until --ports" in r.bound
    pcp = _render("sonic", _plan("pcp-trust"), [], {})
    assert "PORT_QOS_MAP" not in json.loads(pcp.text) and pcp.bound.startswith("nothing")


# --- NVUE --------------------------------------------------------------------------------------

def _commands(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_nvue_default_plan_needs_only_roce_mode():
    assert _commands(_render("nvue", default_plan(), []).text) == ["nv set qos roce mode lossless", "nv config apply"]


def test_nvue_priority_2_is_nvidias_documented_procedure():
    with open(os.path.join(FIX, "nvue-set-lossless-priority-2.txt"), encoding="utf-8") as fh:
        documented = [line.split("$ ", 1)[1] for line in fh.read().splitlines()]
    lines = _commands(_render("nvue", load_text("data: {dscp: 26, priority: 2}\nlossless_priorities: [2]\n", "p"),
                              []).text)
    # NVIDIA's procedure, and the RoCE lossless pool moved with the priority, which the procedure leaves
    # for `nv show qos roce` to tell (rocetune's check reads it from the commands then)
    pool = "nv set qos traffic-pool roce-lossless switch-priority 2"
    assert sorted(lines[1:-1]) == sorted(documented + [pool])
    assert "traffic-class 2" not in " ".join(lines)  # RoCE keeps traffic class 3
    g = nvue.OS.parse("\n".join(lines), "rendered").groups[0]
    assert g.ingress_lossless == {2: True} and not g.buffer_note


def test_nvue_other_classes_pcp_trust_mode_and_watchdog():
    odd = _commands(_render("nvue", _plan("other-dscp-priority-2"), ["swp1", "swp2"]).text)
    for want in ("nv set qos mapping default-global dscp 24 switch-priority 2",
                 "nv set qos mapping default-global dscp 46 switch-priority 7",
                 "nv set qos egress-queue-mapping default-global switch-priority 7 traffic-class 6",
                 "nv set qos egress-queue-mapping default-global switch-priority 6 traffic-class 0",
                 "nv set qos congestion-control default-global traffic-class 3 min-threshold 100000",
                 "nv set interface swp1,swp2 qos pfc-watchdog state enable"):
        assert want in odd
    assert "nv set qos mapping default-global trust l2" in _commands(_render("nvue", _plan("pcp-trust"), []).text)
    kept = _render("nvue", default_plan(), [], {"roce_mode": "lossless-single-ipool"})
    assert _commands(kept.text)[0] == "nv set qos roce mode lossless-single-ipool" and not kept.warnings
    assert "turns off lossless-single-ipool" in _render("nvue", default_plan(), [], {}).warnings[0]


def test_nvue_refuses_a_third_roce_class():
    with pytest.raises(RocetuneError, match="no third RoCE traffic class"):
        _render("nvue", load_text("cts: {dscp: 40, priority: 5}\n", "p"), [])


# --- EOS ---------------------------------------------------------------------------------------

def test_eos_queue_keyword_follows_the_platform_family_and_is_never_guessed():
    strata = _render("eos", default_plan(), chosen={"platform": "strata"}).text
    jericho = _render("eos", default_plan(), chosen={"platform": "jericho"}).text
    assert "   uc-tx-queue 3\n" in strata and "   tx-queue 3\n" not in strata
    assert "   tx-queue 3\n" in jericho and "uc-tx-queue" not in jericho
    assert "priority-flow-control pause watchdog" in strata
    with pytest.raises(RocetuneError, match="port names do not tell them apart"):
        _render("eos", default_plan(), chosen={})


def test_eos_without_ports_binds_only_the_global_maps():
    r = _render("eos", default_plan(), [], {"platform": "strata"})
    assert "\ninterface " not in r.text and "applied to no interface" in r.bound


def test_bad_ports():
    with pytest.raises(RocetuneError, match="not a port name"):
        ports_from("Ethernet0,$(reboot)")
    with pytest.raises(RocetuneError, match="twice"):
        ports_from("swp1,swp1")
    assert {"sonic", "nvue", "eos"} <= set(registry()) and registry()["sonic"] is sonic.OS
    assert registry()["nvue"] is nvue.OS and registry()["eos"] is eos.OS


# --- the CLI -----------------------------------------------------------------------------------

def _cli(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-m", "rocetune", "--root", str(cwd), *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_render_writes_the_file_and_check_reads_it_back(tmp_path):
    (tmp_path / "plan.yml").write_text("data: {dscp: 24, priority: 4}\nlossless_priorities: [4]\n")
    out = tmp_path / "qos.json"
    p = _cli("qos", "render", "--os", "sonic", "--ports", "Ethernet0", "--qos", "plan.yml", "--buffer-model", "dynamic",
             "--platform", "broadcom", "-o", str(out), cwd=tmp_path)
    assert p.returncode == 0 and "the SONiC configuration assumes: " in p.stderr, p.stderr
    p = _cli("qos", "check", str(out), "--qos", "plan.yml", cwd=tmp_path)
    assert p.returncode == 0 and "0 failure(s), 0 warning(s)" in p.stdout, p.stdout + p.stderr
    p = _cli("qos", "check", str(out), cwd=tmp_path)  # against the built-in defaults
    assert p.returncode == 1 and "switch-data-class-mismatch" in p.stdout


def test_cli_old_spellings_still_work_and_say_what_replaced_them(tmp_path):
    (tmp_path / "plan.yml").write_text("lossless_priorities: [3]\n")
    out = tmp_path / "eos.cfg"
    p = _cli("qos", "render", "--switch", "eos", "--plan", "plan.yml", "--platform", "jericho", "--ports", "Ethernet1",
             "-o", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "--switch OS is deprecated: use --os OS" in p.stderr and "--plan is deprecated: use --qos FILE" in p.stderr
    p = _cli("--json", "qos", "check", "--switch", str(out), "--switch-kind", "eos", "--plan", "plan.yml", cwd=tmp_path)
    env = json.loads(p.stdout)
    assert p.returncode == 0 and env["data"]["kind"] == "eos"
    assert any("give FILE as the argument" in w for w in env["warnings"])
    assert any("--switch-kind is deprecated" in w for w in env["warnings"])


def test_cli_errors_are_one_line(tmp_path):
    (tmp_path / "x.txt").write_text("hostname leaf\n")
    p = _cli("qos", "check", "x.txt", cwd=tmp_path)
    assert p.returncode == 3 and p.stderr.startswith("rocetune: error: FILE x.txt: not recognised")
    assert "Traceback" not in p.stderr
    p = _cli("qos", "render", "--os", "eos", "--qos", "missing.yml", cwd=tmp_path)
    assert p.returncode == 3 and "missing.yml: no such file" in p.stderr
    p = _cli("qos", "render", "--os", "nvue", "--platform", "strata", cwd=tmp_path)
    assert p.returncode == 2 and "--platform is a choice of sonic, eos, not of nvue" in p.stderr
    p = _cli("qos", "render", "--os", "junos", cwd=tmp_path)
    assert p.returncode == 2 and "--os 'junos': not one of sonic, nvue, eos" in p.stderr
    p = _cli("qos", "render", "--os", "eos", "--switch", "sonic", cwd=tmp_path)
    assert p.returncode == 2 and "disagree" in p.stderr
