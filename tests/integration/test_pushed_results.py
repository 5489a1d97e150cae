"""Results pushed by the nodes: `doctor --push DIR` (the timer) and `doctor --gate ... --push DIR`
(Slurm's HealthCheckProgram or Prolog) keep the node's latest result as DIR/NODE.json, and
`fleet report DIR` reads them as it reads gathered results."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
WARNS = FIXTURES / "dgx-h100-roce"  # one warning, no failure


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken") / "root"
    shutil.copytree(WARNS, root, symlinks=True)
    (root / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")
    return root


def gate(mode, root, node, *extra):
    return rocetune(
        "doctor",
        "--gate",
        mode,
        "--root",
        str(root),
        "--no-counters",
        "--no-drain",
        "--node",
        node,
        *extra,
        env=dict(os.environ),
    )


def test_the_gate_and_the_timer_keep_results_that_fleet_report_reads(broken, tmp_path):
    pushed = tmp_path / "results"
    pushed.mkdir()
    assert gate("health-check", broken, "gpu07", "--push", str(pushed)).returncode == 1
    assert gate("prolog", WARNS, "gpu08", "--push", str(pushed)).returncode == 0
    timer = rocetune("--json", "doctor", "--root", str(WARNS), "--no-counters", "--push", str(pushed))
    assert timer.returncode == 5 and no_traceback(timer)
    timer_file = json.loads(timer.stdout)["data"]["pushed"]
    assert sorted(p.name for p in pushed.iterdir()) == sorted(["gpu07.json", "gpu08.json", Path(timer_file).name])
    doc = json.loads((pushed / "gpu07.json").read_text())
    assert doc["schema"] == "rocetune.fleet-host/1" and doc["host"] == "gpu07" and doc["error"] is None
    assert doc["gathered_at"].endswith("Z") and "fleet_facts" in doc["doctor"]
    assert len((pushed / "gpu07.json").read_bytes()) < 40_000  # the compact result, not the Features

    report = rocetune("--json", "fleet", "report", str(pushed))
    data = json.loads(report.stdout)["data"]
    status = {h["host"]: h["status"] for h in data["hosts"]}
    assert report.returncode == 1 and status["gpu07"] == "differs" and status["gpu08"] == "ok", status
    cell = data["facts"]["doctor.errors"]["values"]["gpu07"]
    assert cell["value"] == ["doctor-rail-mtu-mismatch"] and cell["status"] == "failing"


def test_a_gate_that_times_out_leaves_a_result_saying_so(tmp_path):
    pushed = tmp_path / "results"
    pushed.mkdir()
    proc = gate("prolog", WARNS, "gpu09", "--push", str(pushed), "--timeout", "0.01")
    assert proc.returncode == 1 and "did not finish" in proc.stdout
    report = rocetune("--json", "fleet", "report", str(pushed))
    (host,) = json.loads(report.stdout)["data"]["hosts"]
    assert host["status"] == "failed" and host["error"].startswith(
        "gather failed: gate prolog: host gate-timeout: the checks did not finish"
    )


def test_a_push_that_cannot_be_written_is_said_and_judges_nothing(tmp_path):
    missing = tmp_path / "no" / "such"
    proc = gate("prolog", WARNS, "gpu08", "--push", str(missing), "--json")
    gate_doc = json.loads(proc.stdout)["data"]["gate"]
    assert proc.returncode == 0 and gate_doc["status"] == "warnings" and gate_doc["pushed"] is None
    assert gate_doc["push_error"].startswith(f"--push {missing}: cannot write {missing}/gpu08.json")
    plain = rocetune("doctor", "--root", str(WARNS), "--no-counters", "--push", str(missing))
    assert plain.returncode == 4 and no_traceback(plain) and f"--push {missing}: cannot write" in plain.stderr
