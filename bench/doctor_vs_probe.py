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
        timed(base + ["probe"], env)  # bytecode and page cache warm
        timed(base + ["doctor"], env)
        probe, doctor, ratios = [], [], []
        for _ in range(args.runs):
            p = timed(base + ["probe"], env)
            d = timed(base + ["doctor"], env)
            probe.append(p)
            doctor.append(d)
            ratios.append(d[0] / p[0])
        p_wall, p_cpu = (statistics.median(x[i] for x in probe) for i in (0, 1))
        d_wall, d_cpu = (statistics.median(x[i] for x in doctor) for i in (0, 1))
        ratio = statistics.median(ratios)
        verdicts = []
        if name == SCALE_HOST:
            verdicts.append(f"doctor/probe <= {RATIO_TARGET:g}x: {'met' if ratio <= RATIO_TARGET else 'missed'}")
            if ratio > RATIO_TARGET:
                missed.append(name)
        else:
            ok = d_wall <= WALL_TARGET and d_cpu <= CPU_TARGET
            verdicts.append(f"doctor <= {WALL_TARGET:g} s wall, <= {CPU_TARGET:g} s CPU: {'met' if ok else 'missed'}")
            if not ok:
                missed.append(name)
        print(f"{name}: probe {p_wall * 1000:.0f} ms wall / {p_cpu * 1000:.0f} ms CPU; doctor "
              f"{d_wall * 1000:.0f} ms wall / {d_cpu * 1000:.0f} ms CPU; doctor/probe median {ratio:.2f}x, "
              f"min {min(ratios):.2f}x ({'; '.join(verdicts)})")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print("targets: " + ("all met" if not missed else "missed on " + ", ".join(missed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
