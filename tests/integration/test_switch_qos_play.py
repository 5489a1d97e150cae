"""playbooks/switch_qos.yml over an inventory of two switches: each switch's QoS configuration
rendered by `rocetune qos render` on the controller and written to one file per switch; check
mode writes nothing and shows the diff, a second run changes nothing, a plan change rewrites
only the content that changed, and bad input fails naming it with nothing written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from tests.integration.test_ansible_static import REPO, env, tool

pytestmark = pytest.mark.slow  # runs ansible-playbook

PLAN = """\
version: 1
trust: dscp
data: {dscp: 26, priority: 3}
cnp: {dscp: 48, priority: 6}
lossless_priorities: [3]
"""


def render(kind: str, ports: str, plan, *choices: str) -> str:
    argv = [sys.executable, "-m", "rocetune", "qos", "render", "--os", kind, "--qos", str(plan), *choices]
    if ports:
        argv += ["--ports", ports]
    return subprocess.run(argv, env={**env(), "PYTHONPATH": str(REPO / "src")}, capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture
def site(tmp_path):
    rocetune = tmp_path / "bin" / "rocetune"
    rocetune.parent.mkdir()
    rocetune.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune \"$@\"\n")
    rocetune.chmod(0o755)
    (tmp_path / "qos.yml").write_text(PLAN)
    inventory = {"all": {"children": {"switches": {
        "vars": {"switch_qos_plan": str(tmp_path / "qos.yml"), "switch_qos_dir": str(tmp_path / "out"),
                 "switch_qos_rocetune_command": str(rocetune), "ansible_connection": "local",
                 "ansible_python_interpreter": sys.executable},
        "hosts": {"leaf1": {"switch_kind": "sonic", "switch_ports": ["Ethernet0", "Ethernet4"]},
                  "leaf2": {"switch_kind": "eos", "switch_ports": ["Ethernet1/1"],
                            "switch_qos_options": {"platform": "jericho"}}}}}},
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return tmp_path


def play(site, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool("ansible-playbook"), "-i", str(site / "hosts.yml"), str(REPO / "playbooks" / "switch_qos.yml"),
                           *args], cwd=site, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)


def recap(out: str) -> dict:
    return {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
            for m in re.finditer(r"^(leaf\d)\s+:\s+(.*)$", out, re.M)}


def test_check_mode_then_a_run_then_nothing_to_do(site):
    checked = play(site, "--check", "--diff")
    assert checked.returncode == 0, checked.stdout
    assert recap(checked.stdout)["leaf1"]["changed"] == 1 and recap(checked.stdout)["leaf2"]["changed"] == 1
    assert not (site / "out").exists(), "check mode writes nothing"
    assert '+    "PORT_QOS_MAP": {' in checked.stdout and "+interface Ethernet1/1" in checked.stdout, checked.stdout

    done = play(site, "--diff")
    assert done.returncode == 0, done.stdout
    assert recap(done.stdout)["leaf1"]["changed"] == 1 and recap(done.stdout)["leaf2"]["changed"] == 1
    sonic, eos = site / "out" / "leaf1.json", site / "out" / "leaf2.cfg"
    assert sorted(p.name for p in (site / "out").iterdir()) == ["leaf1.json", "leaf2.cfg"]
    assert sonic.read_text() == render("sonic", "Ethernet0,Ethernet4", site / "qos.yml")
    assert eos.read_text() == render("eos", "Ethernet1/1", site / "qos.yml", "--platform", "jericho")
    assert "   tx-queue 3\n" in eos.read_text()
    assert {"Ethernet0", "Ethernet4"} <= set(json.loads(sonic.read_text())["PORT_QOS_MAP"])
    assert oct(eos.stat().st_mode & 0o777) == "0o644"

    again = play(site, "--diff")
    assert again.returncode == 0, again.stdout
    assert {h: r["changed"] for h, r in recap(again.stdout).items()} == {"leaf1": 0, "leaf2": 0}, again.stdout


def test_a_plan_change_rewrites_the_files_and_shows_the_lines_that_changed(site):
    assert play(site).returncode == 0
    eos = site / "out" / "leaf2.cfg"
    eos.chmod(0o600)
    (site / "qos.yml").write_text(PLAN.replace("data: {dscp: 26, priority: 3}", "data: {dscp: 24, priority: 3}"))
    checked = play(site, "--check", "--diff")
    assert "-qos map dscp 26 to traffic-class 3" in checked.stdout
    assert "+qos map dscp 24 to traffic-class 3" in checked.stdout, checked.stdout
    assert "qos map dscp 26 to traffic-class 3" in eos.read_text()
    assert play(site).returncode == 0
    assert "qos map dscp 24 to traffic-class 3" in eos.read_text()
    assert oct(eos.stat().st_mode & 0o777) == "0o600", "the operator's mode is kept"


@pytest.mark.parametrize("host_vars, message", [
    ({"switch_ports": ["Ethernet0", "Ethernet0;reload"]}, "ports: 'Ethernet0;reload' is not a port name"),
    ({"switch_ports": ["Ethernet0", "Ethernet0"]}, "ports: Ethernet0 named twice"),
    ({"switch_kind": "junos"}, "--os 'junos': not one of sonic, nvue, eos, nxos; nothing was written"),
    ({"switch_kind": "eos", "switch_qos_options": {}}, "EOS: the queue keyword depends on the platform family"),
    ({"switch_qos_options": {"platform": "x; reboot"}}, "options.platform: 'x; reboot' is not a value"),
    ({"switch_qos_plan": "/nonexistent/qos.yml"}, "plan: /nonexistent/qos.yml is not a file"),
    ({"switch_qos_rocetune_command": "rocetune-not-installed"}, "rocetune_command: rocetune-not-installed is not in PATH"),
])
def test_bad_input_fails_naming_it_and_writes_nothing(site, host_vars, message):
    inventory = yaml.safe_load((site / "hosts.yml").read_text())
    inventory["all"]["children"]["switches"]["hosts"]["leaf1"].update(host_vars)
    (site / "hosts.yml").write_text(yaml.safe_dump(inventory))
    proc = play(site, "--limit", "leaf1")
    assert proc.returncode != 0 and message in proc.stdout, proc.stdout
    assert not (site / "out").exists()


def test_a_dest_directory_that_is_a_file_is_refused(site):
    (site / "out").write_text("not a directory\n")
    proc = play(site, "--limit", "leaf1")
    assert proc.returncode != 0 and f"dest: {site / 'out'} is not a directory; nothing was written" in proc.stdout, proc.stdout


def test_the_example_inventory_renders_every_hop_and_each_file_checks_clean(site):
    """inventories/example as shipped (its switches.yml): leaves with host and fabric ports and a spine
    with fabric ports only, from the one plan; every file written reads back through `qos check`
    with nothing wrong, the host ports get the plan's cable length and the fabric ports keep the
    switch's own."""
    plan = site / "qos.yml"
    plan.write_text(PLAN + "buffer: {cable_length: 5, prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]}\n")
    run = subprocess.run(
        [tool("ansible-playbook"), "-i", str(REPO / "inventories" / "example"),
         str(REPO / "playbooks" / "switch_qos.yml"), "-e", f"switch_qos_plan={plan}",
         "-e", f"switch_qos_dir={site / 'example'}", "-e", f"switch_qos_rocetune_command={site / 'bin' / 'rocetune'}",
         "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=site, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=300)
    assert run.returncode == 0, run.stdout
    written = sorted(p.name for p in (site / "example").iterdir())
    assert written == ["leaf1.fabric.example.json", "leaf2.fabric.example.cfg", "leaf3.fabric.example.nvue",
                       "spine1.fabric.example.json"]
    for name in written:
        checked = subprocess.run([sys.executable, "-m", "rocetune", "--json", "qos", "check", str(site / "example" / name),
                                  "--qos", str(plan)], env={**env(), "PYTHONPATH": str(REPO / "src")},
                                 capture_output=True, text=True)
        data = json.loads(checked.stdout)["data"]
        assert checked.returncode == 0, (name, [f["message"] for f in data["findings"] if f["severity"] != "info"])
    leaf1 = json.loads((site / "example" / "leaf1.fabric.example.json").read_text())
    assert sorted(leaf1["PFC_WD"]) == ["Ethernet0", "Ethernet12", "Ethernet4", "Ethernet48", "Ethernet52", "Ethernet8",
                                       "GLOBAL"]
    assert leaf1["PORT_QOS_MAP"]["Ethernet48"] == leaf1["PORT_QOS_MAP"]["Ethernet0"]
    assert leaf1["CABLE_LENGTH"] == {"AZURE": {p: "5m" for p in ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")}}
    spine1 = json.loads((site / "example" / "spine1.fabric.example.json").read_text())
    assert "CABLE_LENGTH" not in spine1 and sorted(spine1["PORT_QOS_MAP"]) == ["Ethernet0", "Ethernet4", "Ethernet8",
                                                                               "global"]
