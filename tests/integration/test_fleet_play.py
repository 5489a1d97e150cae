"""The collection's fleet play on this machine over Ansible's local connection: each "node" runs
rocetune doctor on a fixture root, one controller task writes the fleet directory, and
`rocetune fleet report` reads it; a node whose doctor cannot run is recorded with its reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixtures.roots import root_of
from tests.integration.test_ansible_static import REPO, env, tool

from .clirun import rocetune
from .sshserver import dead_port


def agent(tmp_path, name: str, root: str):
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune --root {root} \"$@\"\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.slow  # a whole ansible-playbook run
def test_the_fleet_play_gathers_every_node_and_the_report_names_the_one_that_failed(tmp_path):
    good = agent(tmp_path, "good", root_of("dgx-h100-roce"))
    broken = agent(tmp_path, "broken", str(tmp_path / "no-such-root"))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(json.dumps({"gpu_nodes": {"hosts": {
        "node01": {"rocetune_fleet_command": [good]},
        "node02": {"rocetune_fleet_command": [good]},
        "node03": {"rocetune_fleet_command": [broken]},
        "node04": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": dead_port(),
                   "ansible_ssh_common_args": "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/dev/null"}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "ansible_become": False}}}))
    out = tmp_path / "fleet"
    proc = subprocess.run([tool("ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "fleet.yml"),
                           "-e", json.dumps({"rocetune_fleet_dir": str(out)})],
                          cwd=REPO, env=env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["node01.json", "node02.json", "node03.json", "node04.json"]
    down = json.loads((out / "node04.json").read_text())["error"]
    # Which of two messages Ansible gives is a race: its ssh plugin writes the module to ssh's stdin
    # and, when that fails while ssh has not exited yet (1 ms later), reports the write instead of
    # ssh's own "Connection refused" (ansible-core 2.19, plugins/connection/ssh.py, _send_initial_data).
    refused = "ssh: connect to host 127.0.0.1" in down and "Connection refused" in down
    not_sent = "Data could not be sent to remote host" in down and "127.0.0.1" in down
    assert down.startswith("unreachable: ") and (refused or not_sent), down
    failed = json.loads((out / "node03.json").read_text())
    assert failed["error"].startswith("rocetune doctor exited 3 without a result") and "no-such-root" in failed["error"]
    ok = json.loads((out / "node01.json").read_text())
    assert ok["error"] is None and ok["schema"] == "rocetune.fleet-host/1" and ok["doctor"]["command"] == "doctor"
    report = rocetune("--json", "fleet", "report", str(out))
    data = json.loads(report.stdout)
    assert report.returncode == 1, report.stdout
    assert "node03" in json.dumps(data["data"]) and "node01" in json.dumps(data["data"])
