"""The SRE's flow, end to end, on copies of a real 8-GPU RoCE host (dgx-h100-rails-dmabuf): a
golden node writes its env and its expectations; six nodes get both; three are broken -- a rail
lost, a rail at MTU 1500, a GPU fallen off the bus (nvidia-smi says so, no Xid logged) -- and one
healthy node carries an old fault (a firmware health line two days back, repaired since) that must
not drain it. The gate judges each node and `fleet report` names the broken ones. The figures
are counted: no false drain, no false pass."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune

pytestmark = pytest.mark.slow  # 14 doctor runs on the 8-GPU fixture

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
GOLDEN = HOSTS / "dgx-h100-rails-dmabuf"
LOST_GPU = HOSTS.parent / "outputs/gpu-lost/nvidia-smi-gpu-is-lost-owod-81.txt"
QUERY = "commands/nvidia-smi_--query-gpu=index,pci.bus_id,name_--format=csv,noheader.txt"
HEALTH = "mlx5_core 0000:4f:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n"
REASON = re.compile(r"^rocetune: (?P<subject>\S+) (?P<check>[a-z0-9][a-z0-9-]*): (?P<detail>.*?)"
                    r"(?: \(\+(?P<more>[0-9]+) more\))?$")  # docs/gate.md, "The drain reason"


def _node(dst: Path, name: str) -> Path:
    shutil.copytree(GOLDEN, dst, symlinks=True)
    (dst / "proc/sys/kernel/hostname").write_text(name + "\n")
    (dst / "proc/uptime").write_text(f"{3 * 86400} 1.0\n")
    return dst


def _lose_rail(root: Path, dev: str = "mlx5_4") -> None:
    port = Path(os.path.realpath(root / "sys/class/infiniband" / dev))
    shutil.rmtree(port)
    (root / "sys/class/infiniband" / dev).unlink()
    text = (root / "commands/ibv_devinfo.txt").read_text()
    blocks = re.split(r"(?m)^(?=hca_id:)", text)
    (root / "commands/ibv_devinfo.txt").write_text("".join(b for b in blocks if not b.startswith(f"hca_id:\t{dev}\n")))


def _lose_gpu(root: Path, index: int = 5) -> str:
    rows = (root / QUERY).read_text().splitlines()
    bus = rows[index].split(", ")[1]
    (root / QUERY).write_text("\n".join(rows[:index] + rows[index + 1:]) + "\n" + LOST_GPU.read_text().replace(
        "0000:02:00.0", bus[4:]))
    return bus[4:].lower()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("sre")
    golden = _node(base / "golden", "gpu00")
    etc = golden / "etc/rocetune"
    etc.mkdir(parents=True)
    proc = rocetune("--root", str(golden), "-q", "env", "--env-dir", str(etc), "--format", "sh",
                    "-o", str(etc / "nccl.env"))
    assert proc.returncode == 0, proc.stderr
    proc = rocetune("--root", str(golden), "doctor", "--no-counters", "--write-expect", str(etc / "expect.yml"))
    assert proc.returncode in (0, 5) and "expectations written to" in proc.stdout, proc.stdout + proc.stderr
    nodes = {}
    for i in range(1, 7):
        name = f"gpu{i:02d}"
        root = _node(base / name, name)
        shutil.copytree(etc, root / "etc/rocetune")
        nodes[name] = root
    _lose_rail(nodes["gpu02"])
    (nodes["gpu04"] / "sys/class/net/enp79s0np0/mtu").write_text("1500\n")
    lost_bus = _lose_gpu(nodes["gpu06"])
    # gpu05: a firmware fault two days ago, outside the window: healthy now
    (nodes["gpu05"] / "commands/dmesg_--kernel.txt").write_text(f"[ 86400.000001] {HEALTH}")
    return base, nodes, lost_bus


BROKEN = {"gpu02", "gpu04", "gpu06"}


def test_the_gate_drains_exactly_the_broken_nodes_naming_the_device_first(fleet):
    base, nodes, lost_bus = fleet
    lines = {}
    for name, root in nodes.items():
        proc = rocetune("--root", str(root), "doctor", "--gate", "health-check", "--no-drain", "--node", name)
        assert no_traceback(proc), proc.stderr
        lines[name] = (proc.returncode, proc.stdout.strip())
    drained = {n for n, (code, _) in lines.items() if code == 1}
    false_drains, false_passes = drained - BROKEN, BROKEN - drained
    assert not false_drains and not false_passes, lines
    assert all(code == 0 for n, (code, _) in lines.items() if n not in BROKEN), lines
    assert not any("[no expectations]" in line for _, line in lines.values())
    reasons = {n: REASON.match("rocetune: " + line.split(f"FAIL {n}: ", 1)[1]) for n, (_, line) in lines.items()
               if n in BROKEN}
    assert all(m and len(m.group(0)) <= 200 for m in reasons.values()), lines
    assert (reasons["gpu02"]["subject"], reasons["gpu02"]["check"]) == ("mlx5_4:1", "expect-rails")
    assert reasons["gpu04"]["subject"] == "enp79s0np0", lines["gpu04"]
    assert (reasons["gpu06"]["subject"], reasons["gpu06"]["check"]) == (lost_bus, "doctor-gpu-lost")


def test_fleet_report_names_the_broken_nodes_and_a_copied_result_is_not_a_healthy_host(fleet):
    base, nodes, _ = fleet
    results = base / "results"
    results.mkdir()
    for name, root in nodes.items():
        proc = rocetune("--json", "--root", str(root), "doctor", "--no-counters")
        assert proc.returncode in (0, 1, 5), proc.stderr
        (results / f"{name}.json").write_text(proc.stdout)
    shutil.copy(results / "gpu01.json", results / "gpu07.json")  # a copy under another host's name
    proc = rocetune("--json", "fleet", "report", str(results))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1
    failing = {e["host"] for e in doc["data"]["drift"] if e["fact"] == "doctor.errors"}
    assert failing == BROKEN, doc["data"]["drift"]
    failed = {h["host"]: h["error"] for h in doc["data"]["hosts"] if h["status"] == "failed"}
    assert list(failed) == ["gpu07"] and "holds the result of host 'gpu01'" in failed["gpu07"]
