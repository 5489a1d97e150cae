"""docs/first-day.md, run as written: every command of its shell blocks, in order, on two copies
of a real 8-rail H100 node (one good, one with a rail at MTU 1500). A stand-in `rocetune` on PATH
adds `--root` for the node at hand (and a stand-in scontrol for the gate); the page's absolute
directories are moved under the test's own."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "first-day.md"
GOOD = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"  # one warning, no failure

COMMANDS = [
    "rocetune probe",
    "rocetune doctor --no-counters",
    "mkdir -p /etc/rocetune",
    "rocetune doctor --no-counters --write-expect /etc/rocetune/expect.yml",
    "rocetune doctor --gate health-check --timeout 45 --no-drain",
    "mkdir -p /shared/rocetune-fleet",
    "rocetune --json doctor -v --no-counters > /shared/rocetune-fleet/$(hostname -s).json",
    "rocetune fleet report /shared/rocetune-fleet",
    "rocetune doctor --gate health-check --timeout 45",
]


def _page_commands():
    text = PAGE.read_text(encoding="utf-8")
    lines = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S) for line in block.splitlines()]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in lines if line.strip()]


def test_the_page_holds_these_commands_in_this_order():
    assert _page_commands() == COMMANDS


class Node:
    """A node of the page: its root, its host name, and a stand-in scontrol that records calls."""

    def __init__(self, tmp: Path, name: str, fleet: Path, broken: bool = False):
        self.name, self.fleet = name, fleet
        self.root = tmp / name / "root"
        shutil.copytree(GOOD, self.root, symlinks=True)
        if broken:
            (self.root / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")
        self.bin = tmp / name / "bin"
        self.bin.mkdir()
        self.calls = tmp / name / "scontrol.calls"
        state = tmp / name / "scontrol.state"
        state.write_text(f"NodeName={name} Arch=x86_64\n   State=IDLE ThreadsPerCore=1\n")
        self._script("scontrol", f'#!/bin/sh\necho "$@" >> {self.calls}\n[ "$1" = show ] && cat {state}\nexit 0\n')
        self._script("hostname", f"#!/bin/sh\necho {name}\n")
        self._script("rocetune", f"#!{sys.executable}\n"
                     "import os, sys\n"
                     f"gate = ['--scontrol', {str(self.bin / 'scontrol')!r}] if '--gate' in sys.argv else []\n"
                     f"os.execv(sys.executable, [sys.executable, '-m', 'rocetune', '--root', {str(self.root)!r},\n"
                     "                          *sys.argv[1:], *gate])\n")

    def _script(self, name: str, text: str) -> None:
        (self.bin / name).write_text(text)
        (self.bin / name).chmod(0o755)

    def run(self, command: str) -> subprocess.CompletedProcess:
        assert command in COMMANDS, command
        line = command.replace("/etc/rocetune", str(self.root / "etc/rocetune")) \
                      .replace("/shared/rocetune-fleet", str(self.fleet))
        env = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}", SLURMD_NODENAME=self.name,
                   PYTHONPATH=str(REPO / "src"))
        return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=300)

    def updates(self):
        return [c for c in self.calls.read_text().splitlines() if c.startswith("update")] \
            if self.calls.exists() else []


@pytest.mark.slow  # a dozen doctor runs over 8-rail hosts
def test_the_first_day_as_the_page_tells_it(tmp_path):
    fleet = tmp_path / "fleet"
    good, bad = Node(tmp_path, "gpu01", fleet), Node(tmp_path, "gpu02", fleet, broken=True)
    one, two, mkdir_etc, write_expect, report_only, mkdir_fleet, collect, report, drain = COMMANDS

    # 1. one node, read only
    assert good.run(one).returncode == 0
    looked = good.run(two)
    assert looked.returncode == 5 and "gdr-not-detected" in looked.stdout
    # 2. its expectations, put on every node of its kind
    assert good.run(mkdir_etc).returncode == 0
    assert good.run(write_expect).returncode == 5
    expect = good.root / "etc/rocetune/expect.yml"
    assert "rails:" in expect.read_text()
    (bad.root / "etc/rocetune").mkdir(parents=True)
    shutil.copy(expect, bad.root / "etc/rocetune/expect.yml")
    # 3. the gate reports and changes nothing
    quiet = good.run(report_only)
    assert quiet.returncode == 0 and quiet.stdout.startswith("rocetune: OK with warnings gpu01")
    failing = bad.run(report_only)
    assert failing.returncode == 1 and failing.stdout.startswith("rocetune: FAIL gpu02: enp64s0np0 doctor-rail-mtu-mismatch:")
    assert bad.updates() == []
    # 4. the fleet: every node's result in one directory, compared
    assert good.run(mkdir_fleet).returncode == 0
    assert good.run(collect).returncode == 5 and bad.run(collect).returncode == 1
    met = json.loads((fleet / "gpu01.json").read_text())["data"]["expect"]
    assert met["verdict"] == "met" and met["source"] == str(expect)
    compared = good.run(report)
    assert compared.returncode == 1 and "gpu02" in compared.stdout, compared.stdout
    # 5. the gate drains the failing node, and only it
    assert good.run(drain).returncode == 0 and good.updates() == []
    drained = bad.run(drain)
    assert drained.returncode == 1 and drained.stdout.rstrip().endswith("[drained]"), drained.stdout
    assert len(bad.updates()) == 1 and "Reason=rocetune: enp64s0np0 doctor-rail-mtu-mismatch:" in bad.updates()[0]
