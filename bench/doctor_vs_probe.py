#!/usr/bin/env python3
"""`rocetune doctor` against `rocetune probe` on the same host root: wall and CPU seconds.

    python bench/doctor_vs_probe.py [--runs N] [HOST_OR_DIR ...]

Each round runs `rocetune --root R --json probe` and `rocetune --root R --json doctor` (in
turn, so a shared machine's drift hits both alike), as whole processes with output discarded,
and prints the medians of wall and CPU (user + system of the process) seconds and the ratio
doctor/probe (median and min of the per-round ratios). doctor is in a job's start path, so:

- on every 8-GPU host given: doctor <= 1 s wall and <= 0.3 s CPU;
- on the SR-IOV scale host (sriov-k8s-522, 522 RDMA devices): doctor <= 2x probe.

Default hosts: every 8-GPU fixture host and sriov-k8s-522. Exit 0 when every command ran (a
missed target is reported, not an error).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

REPO = Path(__file__).resolve().parents[1]
HOSTS = REPO / "tests" / "fixtures" / "hosts"
SCALE_HOST = "sriov-k8s-522"
RATIO_TARGET = 2.0
WALL_TARGET = 1.0
CPU_TARGET = 0.3


def timed(argv, env) -> Tuple[float, float]:
    """(wall, CPU) seconds the command took; doctor's 1 and 5 (failures, warnings found) are results."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc not in (0, 1, 5):
        raise SystemExit(f"{' '.join(argv)} exited {rc}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class Pair:
    """The medians of probe's and the other command's wall and CPU seconds over the rounds, and
    the other/probe ratio of wall seconds (median and min of the per-round ratios)."""

    def __init__(self, probe: List[Tuple[float, float]], other: List[Tuple[float, float]]) -> None:
        self.probe_wall, self.probe_cpu = (statistics.median(x[i] for x in probe) for i in (0, 1))
        self.wall, self.cpu = (statistics.median(x[i] for x in other) for i in (0, 1))
        ratios = [o[0] / p[0] for p, o in zip(probe, other)]
        self.ratio, self.min_ratio = statistics.median(ratios), min(ratios)

    def line(self, host: str, label: str, verdict: str) -> str:
        return (f"{host}: probe {self.probe_wall * 1000:.0f} ms wall / {self.probe_cpu * 1000:.0f} ms CPU; "
                f"{label} {self.wall * 1000:.0f} ms wall / {self.cpu * 1000:.0f} ms CPU; {label}/probe median "
                f"{self.ratio:.2f}x, min {self.min_ratio:.2f}x ({verdict})")


def paired(probe_argv, other_argv, env, runs: int) -> Pair:
    """Probe and the other command in turn, so that a shared machine's drift hits both alike; one
    untimed round first (bytecode, page cache, a window's first reading)."""
    timed(probe_argv, env)
    timed(other_argv, env)
    probe, other = [], []
    for _ in range(runs):
        probe.append(timed(probe_argv, env))
        other.append(timed(other_argv, env))
    return Pair(probe, other)


def gpu_count(root: str, env) -> int:
    out = subprocess.run([sys.executable, "-m", "rocetune", "--root", root, "--json", "probe"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True).stdout
    return len(json.loads(out)["data"]["features"]["gpus"])


def default_hosts(env) -> List[str]:
    names = sorted(p.name for p in HOSTS.iterdir() if p.is_dir())
    return [n for n in names if n == SCALE_HOST or gpu_count(str(HOSTS / n), env) == 8]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("hosts", nargs="*")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    hosts = args.hosts or default_hosts(env)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    missed = []
    for host in hosts:
        root = host if os.path.isdir(host) else str(HOSTS / host)
        name = Path(root).name
        base = [sys.executable, "-m", "rocetune", "--root", root, "--json"]
        pair = paired(base + ["probe"], base + ["doctor"], env, args.runs)
        if name == SCALE_HOST:
            ok = pair.ratio <= RATIO_TARGET
            verdict = f"doctor/probe <= {RATIO_TARGET:g}x: {'met' if ok else 'missed'}"
        else:
            ok = pair.wall <= WALL_TARGET and pair.cpu <= CPU_TARGET
            verdict = f"doctor <= {WALL_TARGET:g} s wall, <= {CPU_TARGET:g} s CPU: {'met' if ok else 'missed'}"
        if not ok:
            missed.append(name)
        print(pair.line(name, "doctor", verdict))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print("targets: " + ("all met" if not missed else "missed on " + ", ".join(missed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
