"""`rocetune capture` records what doctor reads too, and `doctor --root` on the unpacked capture
reads the same: the kernel log's fabric lines (and only those: the rest of a live log changes by
the second), lspci's ACS bits, and the readings below NCCL."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

from .clirun import rocetune

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = FIXTURES / "outputs" / "kernel-log"


def doctor(root) -> dict:
    proc = rocetune("--json", "doctor", "-v", "--no-counters", "--root", str(root))
    assert proc.returncode in (0, 1, 5), proc.stderr
    return json.loads(proc.stdout)["data"]


def test_a_capture_replays_doctor_s_readings(tmp_path):
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "hosts" / "dgx-h100-roce", host, symlinks=True)
    noise = "[ 2474.746612] rtlbr0: port 2(rtl-node01) entered disabled state\n"
    (host / "commands" / "dmesg_--kernel.txt").write_text(
        noise + (LOGS / "mlx5-health-compromised-dmesg.txt").read_text() + noise)
    archive = tmp_path / "c.tar.gz"
    proc = rocetune("capture", "--root", str(host), "-o", str(archive))
    assert proc.returncode == 0, proc.stderr
    replay = tmp_path / "replay"
    with tarfile.open(archive) as tar:
        tar.extractall(replay)
    kept = (replay / "commands" / "dmesg_--kernel.txt").read_text()
    assert "rtlbr0" not in kept and kept.count("\n") == 6
    live, again = doctor(host), doctor(replay)
    assert again["readings"]["kernel_log"] == live["readings"]["kernel_log"]
    assert len(live["readings"]["kernel_log"]["events"]) == 6
    assert again["readings"]["acs"] == live["readings"]["acs"]
    ids = lambda data: sorted((f["id"], f["subject"]) for f in data["findings"])  # noqa: E731
    assert ids(again) == ids(live) and ("doctor-kernel-nic-health", "0000:0d:00.0") in ids(live)
