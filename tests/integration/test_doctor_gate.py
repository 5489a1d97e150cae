"""`rocetune doctor --gate` from the command line, the way slurmd runs it: a fixture host for the
node, and a stand-in scontrol (a script that prints the node's state from a file and records what
it is asked) in place of Slurm's. tests/lab/test_slurm_gate.py runs the same against a real Slurm."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
WARNS = FIXTURES / "dgx-h100-roce"  # one warning (GPUDirect not detected by its NCCL), no failure


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken") / "root"
    shutil.copytree(WARNS, root, symlinks=True)
    (root / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")
    return root


class FakeScontrol:
    """scontrol's `show node` and `update` for one node, state in a file, calls in a log."""

    def __init__(self, tmp: Path, state: str = "IDLE", reason: str = ""):
        self.dir = tmp
        self.path = tmp / "scontrol"
        self.calls = tmp / "calls"
        self.set(state, reason)
        self.path.write_text(f"""#!/bin/sh
echo "$@" >> {self.calls}
case "$1" in
  show) cat {tmp / 'state'} ;;
  update) exit 0 ;;
esac
""")
        self.path.chmod(0o755)

    def set(self, state: str, reason: str = "") -> None:
        text = f"NodeName=gpu07 Arch=x86_64\n   State={state} ThreadsPerCore=1\n"
        if reason:
            text += f"   Reason={reason} [root@2026-11-27T20:00:00]\n"
        (self.dir / "state").write_text(text)

    def updates(self):
        lines = self.calls.read_text().splitlines() if self.calls.exists() else []
        return [line for line in lines if line.startswith("update")]


def gate(mode, root, *extra, env=None):
    return rocetune("doctor", "--gate", mode, "--root", str(root), "--no-counters", *extra,
                    env=dict(os.environ, SLURMD_NODENAME="gpu07", **(env or {})))


def test_prolog_exit_codes(broken, tmp_path):
    bad = gate("prolog", broken)
    assert bad.returncode == 1 and no_traceback(bad)
    assert bad.stdout.startswith("rocetune: FAIL gpu07: enp64s0np0 doctor-rail-mtu-mismatch: enp64s0np0 has MTU 1500")
    assert len(bad.stdout.splitlines()) == 1
    warns = gate("prolog", WARNS)
    assert warns.returncode == 0 and warns.stdout.startswith("rocetune: OK with warnings gpu07: nccl gdr-not-detected: ")
    assert gate("prolog", WARNS, "--drain-on-warnings").returncode == 1
    # rocetune's own trouble never drains: a missing root, a bad option, a bad timeout
    for extra in (["--root", str(tmp_path / "nope")], ["--no-such-option"], ["--timeout", "-3"]):
        proc = gate("prolog", WARNS, *extra)
        assert proc.returncode == 0 and no_traceback(proc), (extra, proc.stderr)
        assert "TOOL ERROR, node not judged" in proc.stdout + proc.stderr


def test_health_check_drains_resumes_and_leaves_others_drains(broken, tmp_path):
    sc = FakeScontrol(tmp_path)
    proc = gate("health-check", broken, "--scontrol", str(sc.path))
    assert proc.returncode == 1 and proc.stdout.rstrip().endswith("[drained]"), proc.stdout
    (update,) = sc.updates()
    assert update.startswith("update NodeName=gpu07 State=DRAIN Reason=rocetune: enp64s0np0 doctor-rail-mtu-mismatch: ")

    reason = update.split("Reason=", 1)[1]
    sc.set("IDLE+DRAIN", reason)
    assert gate("health-check", broken, "--scontrol", str(sc.path)).returncode == 1
    assert len(sc.updates()) == 1  # drained already, for this reason: nothing to do

    proc = gate("health-check", WARNS, "--scontrol", str(sc.path))  # repaired (a warning is no failure)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("[resumed]")
    assert sc.updates()[-1] == "update NodeName=gpu07 State=RESUME"

    sc.set("IDLE+DRAIN", "maintenance: fan swap")
    assert gate("health-check", WARNS, "--scontrol", str(sc.path)).returncode == 0
    assert gate("health-check", broken, "--scontrol", str(sc.path)).returncode == 1
    assert len(sc.updates()) == 2  # an operator's drain is neither resumed nor rewritten


def test_health_check_tool_error_changes_nothing_and_keeps_its_code(tmp_path):
    sc = FakeScontrol(tmp_path, "IDLE+DRAIN", "rocetune: old")
    proc = gate("health-check", tmp_path / "nope", "--scontrol", str(sc.path))
    assert proc.returncode == 3 and "TOOL ERROR, node not judged" in proc.stderr and no_traceback(proc)
    assert sc.updates() == []


def test_health_check_without_slurm_still_judges_loudly(broken, tmp_path):
    proc = gate("health-check", broken, "--scontrol", str(tmp_path / "no-scontrol"))
    assert proc.returncode == 1 and "Slurm not told" in proc.stdout
    proc = gate("health-check", WARNS, "--scontrol", str(tmp_path / "no-scontrol"))
    assert proc.returncode == 70 and "Slurm not told" in proc.stdout  # slurmd logs a non-zero status


def test_timeout_is_a_failure_within_the_deadline(broken, tmp_path):
    sc = FakeScontrol(tmp_path)
    proc = gate("health-check", broken, "--scontrol", str(sc.path), "--timeout", "0.05")
    assert proc.returncode == 1 and "did not finish within" in proc.stdout
    assert sc.updates() and "did not finish within" in sc.updates()[0]


def test_gate_json(broken, tmp_path):
    proc = rocetune("--json", "doctor", "--gate", "prolog", "--root", str(broken), "--no-counters", "--node", "n9")
    doc = json.loads(proc.stdout)
    g = doc["data"]["gate"]
    assert proc.returncode == 1 and doc["exit_code"] == 1
    assert (g["mode"], g["node"], g["status"], g["exit_code"]) == ("prolog", "n9", "failing", 1)
    assert g["reason"].startswith("enp64s0np0 doctor-rail-mtu-mismatch: ") and doc["data"]["findings"]


def test_a_skipped_check_is_named_on_the_gates_line(broken):
    proc = rocetune("--json", "doctor", "--gate", "prolog", "--root", str(broken), "--no-counters", "--node", "n9",
                    "--skip", "doctor-rail-mtu-mismatch=rail recabled tonight")
    g = json.loads(proc.stdout)["data"]["gate"]
    assert proc.returncode == 0 and g["status"] == "warnings" and g["skipped"] == ["doctor-rail-mtu-mismatch"]
    assert g["line"].endswith(" [skipped by the check configuration: doctor-rail-mtu-mismatch]"), g["line"]


def test_gate_options_need_gate():
    proc = rocetune("doctor", "--root", str(WARNS), "--timeout", "5")
    assert proc.returncode == 2 and "--gate" in proc.stderr
