"""`rocetune qos render`: what each switch is told follows the plan (read back through the same
readers `qos check` uses), the SONiC JSON is canonical, and bad input is a one-line error."""

import json
import os
import subprocess
import sys

import pytest

from rocetune.errors import RocetuneError
from rocetune.lint.switch_qos import compare
from rocetune.model.qos import default_plan, load_text
from rocetune.probe.parsers import switch_eos, switch_sonic
from rocetune.render.switch_qos import ports_from, render

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "src")
ODD = load_text("data: {dscp: 24, priority: 4}\ncnp: {dscp: 46, priority: 7}\nlossless_priorities: [4]\n"
                "ecn_marking: {min_threshold: 100000, max_threshold: 400000, probability: 20}\n", "odd.yml")


@pytest.mark.parametrize("plan", [default_plan(), ODD], ids=["default", "odd"])
def test_sonic_render_reads_back_as_the_plan(plan):
    text = render(plan, "sonic", ["Ethernet0", "Ethernet4"])
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=4, sort_keys=True) + "\n"
    assert doc["DSCP_TO_TC_MAP"]["ROCETUNE"][str(plan.data.dscp)] == str(plan.data.priority)
    assert doc["PORT_QOS_MAP"]["Ethernet4"]["pfc_enable"] == ",".join(map(str, plan.lossless_priorities))
    assert doc["WRED_PROFILE"]["ROCETUNE_ECN"]["green_min_threshold"] == str(plan.switch_ecn.min_threshold)
    assert compare(plan, switch_sonic.from_doc(doc, "rendered")) == []
    assert render(plan, "sonic", ["Ethernet0", "Ethernet4"]) == text


@pytest.mark.parametrize("plan", [default_plan(), ODD], ids=["default", "odd"])
def test_eos_render_reads_back_as_the_plan(plan):
    text = render(plan, "eos", ["Ethernet1/1", "Ethernet2/1"])
    assert f"random-detect ecn minimum-threshold {plan.switch_ecn.min_threshold} bytes" in text
    read = switch_eos.parse(text, "rendered")
    assert [g.ports for g in read.groups] == [["Ethernet1/1", "Ethernet2/1"]]
    assert compare(plan, read) == []


def test_the_rendered_sonic_config_fixes_the_default_map():
    doc = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch",
                                       "sonic-qos-arista7050.json"), encoding="utf-8").read())
    ours = json.loads(render(default_plan(), "sonic", ["Ethernet4"]))
    for table, entries in ours.items():  # what `config load` does: entries merged over the running ones
        for key, fields in entries.items():
            doc.setdefault(table, {}).setdefault(key, {}).update(fields)
    ids = sorted(f.id for f in compare(default_plan(), switch_sonic.from_doc(doc, "merged"))
                 if "Ethernet4" in f.subject.split(","))
    assert "switch-data-class-mismatch" not in ids and "switch-ecn-thresholds-differ" not in ids


def test_nvue_default_plan_needs_only_roce_mode_and_an_odd_plan_gets_overrides():
    lines = [l for l in render(default_plan(), "nvue").splitlines() if not l.startswith("#")]
    assert lines == ["nv set qos roce mode lossless", "nv config apply"]
    odd = render(ODD, "nvue")
    for want in ("nv set qos mapping default-global dscp 24 switch-priority 4",
                 "nv set qos pfc default-global switch-priority 4",
                 "nv set qos egress-scheduler default-global traffic-class 7 mode strict",
                 "nv set qos congestion-control default-global traffic-class 4 min-threshold 100000"):
        assert want in odd


def test_bad_ports_and_kind():
    with pytest.raises(RocetuneError, match="not a port name"):
        ports_from("Ethernet0,$(reboot)")
    with pytest.raises(RocetuneError, match="twice"):
        ports_from("swp1,swp1")
    with pytest.raises(RocetuneError, match="not one of"):
        render(default_plan(), "junos")


def _cli(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-m", "rocetune", "--root", str(cwd), *argv], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)


def test_cli_render_writes_the_file_and_check_reads_it_back(tmp_path):
    (tmp_path / "plan.yml").write_text("data: {dscp: 24, priority: 4}\nlossless_priorities: [4]\n")
    out = tmp_path / "qos.json"
    p = _cli("qos", "render", "--switch", "sonic", "--ports", "Ethernet0", "--plan", "plan.yml", "-o", str(out),
             cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = _cli("qos", "check", "--switch", str(out), "--plan", "plan.yml", cwd=tmp_path)
    assert p.returncode == 0 and "0 failure(s), 0 warning(s)" in p.stdout, p.stdout + p.stderr
    p = _cli("qos", "check", "--switch", str(out), cwd=tmp_path)  # against the built-in defaults
    assert p.returncode == 1 and "switch-data-class-mismatch" in p.stdout


def test_cli_errors_are_one_line(tmp_path):
    (tmp_path / "x.txt").write_text("hostname leaf\n")
    p = _cli("qos", "check", "--switch", "x.txt", cwd=tmp_path)
    assert p.returncode == 3 and p.stderr.startswith("rocetune: error: --switch x.txt: not recognised")
    assert "Traceback" not in p.stderr
    p = _cli("qos", "render", "--switch", "eos", "--plan", "missing.yml", cwd=tmp_path)
    assert p.returncode == 3 and "missing.yml: no such file" in p.stderr
