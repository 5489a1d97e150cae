#!/usr/bin/env python3
"""`rocetune doctor --gate health-check` against `rocetune probe` on the same host, with the NIC
counters and the kernel log on: wall and CPU seconds, and their ratio.

    python bench/gate_vs_probe.py [--runs N] [HOST ...]

Each host root is copied to a temporary directory (the gate writes the counters' window under
it) and given a `/proc/uptime` and a recorded `dmesg --kernel` holding the real kernel-log lines
of tests/fixtures/outputs/kernel-log (so the kernel log is read, classified and judged in its
window). Each round runs probe, then the gate (`--no-drain`: no scontrol), as whole processes
with output discarded, and prints the medians and the gate/probe ratio (median and min). The
targets (issue: the gate in front of every job):

- on every 8-GPU fixture host: the gate <= 1 s wall;
- on sriov-k8s-522 (522 RDMA devices): the gate <= 2x probe.

Default hosts: every 8-GPU fixture host and sriov-k8s-522. Exit 0 when every command ran (a
missed target is reported, not an error).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doctor_vs_probe import HOSTS, REPO, SCALE_HOST, default_hosts, paired  # noqa: E402

LOGS = REPO / "tests" / "fixtures" / "outputs" / "kernel-log"
WALL_TARGET = 1.0
RATIO_TARGET = 2.0


def prepared(src: Path, into: Path) -> Path:
    root = into / src.name
    shutil.copytree(src, root, symlinks=True)
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc/uptime").write_text("90000.00 1.00\n")
    lines = "".join(p.read_text() for p in sorted(LOGS.glob("*dmesg.txt")))
    (root / "commands").mkdir(exist_ok=True)
    (root / "commands/dmesg_--kernel.txt").write_text(lines)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("hosts", nargs="*")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    hosts = args.hosts or default_hosts(env)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    missed = []
    with tempfile.TemporaryDirectory(prefix="rocetune-gate-bench-") as tmp:
        for host in hosts:
            root = str(prepared(Path(host) if os.path.isdir(host) else HOSTS / host, Path(tmp)))
            name = Path(root).name
            base = [sys.executable, "-m", "rocetune", "--root", root]
            gate = base + ["doctor", "--gate", "health-check", "--no-drain", "--node", name]
            pair = paired(base + ["--json", "probe"], gate, env, args.runs)
            if name == SCALE_HOST:
                ok = pair.ratio <= RATIO_TARGET
                verdict = f"gate/probe <= {RATIO_TARGET:g}x: {'met' if ok else 'missed'}"
            else:
                ok = pair.wall <= WALL_TARGET
                verdict = f"gate <= {WALL_TARGET:g} s wall: {'met' if ok else 'missed'}"
            if not ok:
                missed.append(name)
            print(pair.line(name, "gate", verdict))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print("targets: " + ("all met" if not missed else "missed on " + ", ".join(missed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
