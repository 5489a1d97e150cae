"""The gate over time, on a copy of a fixture host: the NIC counters' window is kept by every
health check, so a burst of link flaps fails the check after it and stops failing once it has
left the window; a firmware fault in the kernel log fails the node until the operator marks the
repair; `--since -2h` is read as its help writes it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .clirun import no_traceback, rocetune

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
RAIL = "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed"  # mlx5_0 is at 0000:18:00.0
HEALTH = "mlx5_core 0000:18:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count\n"


def node(tmp_path: Path) -> Path:
    root = tmp_path / "gpu01"
    shutil.copytree(HOSTS / "dgx-h100-roce", root, symlinks=True)
    return root


def at(root: Path, uptime: float, link_downed: int) -> None:
    (root / "proc/uptime").write_text(f"{uptime} 1.0\n")
    target = root / RAIL
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{link_downed}\n")


def gate(root: Path, *extra: str):
    proc = rocetune("--root", str(root), "doctor", "--gate", "health-check", "--no-drain", *extra)
    assert no_traceback(proc), proc.stderr
    return proc.returncode, proc.stdout.strip()


def test_a_burst_of_flaps_fails_the_next_check_and_passes_once_it_left_the_window(tmp_path):
    root = node(tmp_path)
    at(root, 100_000, 0)
    code, line = gate(root)
    assert code == 0 and line.startswith("rocetune: OK"), line
    saved = json.loads((root / "var/lib/rocetune/counters.json").read_text())
    assert saved["kind"] == "rocetune-nic-counter-window" and len(saved["snapshots"]) == 1
    at(root, 100_000 + 1800, 100)  # 100 flaps in the half hour since
    code, line = gate(root)
    assert code == 1 and "nic-link-flaps" in line and "mlx5_0/1" in line, line
    at(root, 100_000 + 1800 + 3 * 3600, 100)  # none in the three hours since
    code, line = gate(root)
    assert code == 0 and "nic-link-flaps" not in line, line


def test_a_firmware_fault_fails_until_the_repair_is_marked_and_a_new_one_fails_again(tmp_path):
    root = node(tmp_path)
    at(root, 5000, 0)
    (root / "commands/dmesg_--kernel.txt").write_text(f"[ 4000.000001] {HEALTH}")
    code, line = gate(root, "--no-counters")
    assert code == 1 and "doctor-kernel-nic-health" in line, line
    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--repaired", "mlxfwreset on mlx5_0")
    assert proc.returncode in (0, 5) and "repair marked at" in proc.stdout, proc.stdout + proc.stderr
    code, line = gate(root, "--no-counters")
    assert code == 0 and "doctor-kernel-nic-health" not in line, line
    at(root, 7000, 0)
    (root / "commands/dmesg_--kernel.txt").write_text(f"[ 4000.000001] {HEALTH}[ 6000.000001] {HEALTH}")
    code, line = gate(root, "--no-counters")
    assert code == 1 and "doctor-kernel-nic-health" in line, line


def test_a_day_old_fault_is_out_of_the_default_window(tmp_path):
    root = node(tmp_path)
    at(root, 4000 + 25 * 3600, 0)
    (root / "commands/dmesg_--kernel.txt").write_text(f"[ 4000.000001] {HEALTH}")
    code, line = gate(root, "--no-counters")
    assert code == 0, line


def test_since_as_the_help_writes_it(tmp_path):
    root = node(tmp_path)
    (root / "commands/dmesg_--kernel_--since_-2h.txt").write_text(f"[ 4000.000001] {HEALTH}")
    for argv in (["--since", "-2h"], ["--since=-2h"]):
        code, line = gate(root, "--no-counters", *argv)
        assert code == 1 and "doctor-kernel-nic-health" in line, (argv, line)
    proc = rocetune("--root", str(root), "doctor", "--since", "-2x")
    assert proc.returncode == 2 and "expected -2h" in proc.stderr and no_traceback(proc)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (package prometheus) is not installed")
def test_metrics_with_counter_rates_pass_promtool_and_unread_checks_are_not_passes(tmp_path):
    root = node(tmp_path)
    prom = tmp_path / "rocetune.prom"
    at(root, 100_000, 0)
    rocetune("--root", str(root), "doctor", "--save-baseline", "--metrics", str(prom))
    text = prom.read_text()
    # no earlier reading yet, no kernel log, no expectations: not checked (-2), never 0
    for check in ("nic-link-flaps", "doctor-kernel-nic-health", "expect-rails"):
        assert f'rocetune_doctor_check_status{{check="{check}"}} -2\n' in text, check
    at(root, 100_000 + 1800, 1)
    rocetune("--root", str(root), "doctor", "--metrics", str(prom))
    text = prom.read_text()
    assert 'rocetune_nic_events_per_hour{check="nic-link-flaps",subject="mlx5_0/1"} 1\n' in text
    assert 'rocetune_doctor_check_status{check="nic-link-flaps"} 1\n' in text
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), check.stdout + check.stderr


def test_a_gpu_lost_without_an_xid_line_fails_the_node(tmp_path):
    root = tmp_path / "gpu02"
    shutil.copytree(HOSTS / "dgx-h100-rails-dmabuf", root, symlinks=True)
    query = root / "commands/nvidia-smi_--query-gpu=index,pci.bus_id,name_--format=csv,noheader.txt"
    rows = query.read_text().splitlines()
    lost = (HOSTS.parent / "outputs/gpu-lost/nvidia-smi-unknown-error-open-gpu-kernel-modules-387.txt").read_text()
    query.write_text("\n".join(rows[:3] + rows[4:]) + "\n" + lost)  # GPU 3 gone, nvidia-smi says so
    code, line = gate(root, "--no-counters")
    assert code == 1 and line.startswith("rocetune: FAIL ") and "0000:0b:00.0 doctor-gpu-lost: " in line, line
