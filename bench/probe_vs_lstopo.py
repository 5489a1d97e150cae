#!/usr/bin/env python3
"""Probe speed and memory against hwloc's lstopo on the same sysfs root.

    python bench/probe_vs_lstopo.py [--root DIR] [--runs N]

Runs `rocetune probe --root R --json` and `HWLOC_FSROOT=R lstopo-no-graphics --of xml -`
alternately, N times each, and prints the medians, the ratio pair by pair (min and median;
target: <= 2.0), the probe's peak RSS (target: < 60 MB) and the load average, since a shared
machine skews both. The CPU time of each child (user + system, from wait4) is printed beside
the wall time: on a loaded machine it is the steadier of the two. Without --root it uses the
largest fixture host. The probe runs with its bytecode cached (the warm-up writes it even where
PYTHONDONTWRITEBYTECODE is set), as an installed package does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures", "hosts")
RSS_TARGET_MB = 60.0
RATIO_TARGET = 2.0


def largest_fixture() -> str:
    def size(host: str) -> int:
        return sum(len(files) + len(dirs) for _, dirs, files in os.walk(os.path.join(FIXTURES, host, "sys")))
    hosts = [h for h in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, h, "sys"))]
    if not hosts:
        sys.exit("bench: no fixture hosts found; pass --root DIR")
    return os.path.join(FIXTURES, max(sorted(hosts), key=size))


def probe_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(argv, env=None):
    """Wall seconds, peak RSS (MB) and CPU seconds (user + system) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        sys.exit(f"bench: {' '.join(argv)} exited {proc.returncode}: {proc.stderr.read().decode()[:300]}")
    return elapsed, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", help="host root to probe (default: the largest fixture)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    root = os.path.abspath(args.root or largest_fixture())
    lstopo = shutil.which("lstopo-no-graphics")
    if lstopo is None:
        sys.exit("bench: lstopo-no-graphics not found (apt-get install hwloc)")
    probe_argv = [sys.executable, "-m", "rocetune", "probe", "--root", root, "--json"]
    hwloc_argv = [lstopo, "--of", "xml", "-"]
    # -x86: without it hwloc mixes this machine's CPUID into the fixture's topology.
    hwloc_env = {**os.environ, "HWLOC_FSROOT": root, "HWLOC_COMPONENTS": "-x86"}
    penv = probe_env()
    load = os.getloadavg()[0]
    timed(probe_argv, penv)
    timed(hwloc_argv, hwloc_env)  # warm the page cache for both
    probe_t, hwloc_t, rss, probe_cpu, hwloc_cpu = [], [], [], [], []
    for _ in range(args.runs):
        t, r, c = timed(probe_argv, penv)
        probe_t.append(t)
        rss.append(r)
        probe_cpu.append(c)
        t, _, c = timed(hwloc_argv, hwloc_env)
        hwloc_t.append(t)
        hwloc_cpu.append(c)
    p, h = statistics.median(probe_t), statistics.median(hwloc_t)
    pairs = [a / b for a, b in zip(probe_t, hwloc_t)]
    cpu_pairs = [a / b for a, b in zip(probe_cpu, hwloc_cpu) if b > 0]
    ratio = statistics.median(pairs)
    peak = max(rss)
    print(f"root: {root}")
    print(f"load average: {load:.2f} before, {os.getloadavg()[0]:.2f} after ({os.cpu_count()} CPUs)")
    print(f"rocetune probe : median {p * 1000:7.1f} ms over {args.runs} runs")
    print(f"lstopo (hwloc) : median {h * 1000:7.1f} ms over {args.runs} runs")
    print(f"ratio probe/lstopo, pair by pair: min {min(pairs):.2f}, median {ratio:.2f} (target <= {RATIO_TARGET:.1f}) "
          f"{'PASS' if ratio <= RATIO_TARGET else 'MISS'}")
    if cpu_pairs:
        print(f"CPU time (user + system), median: probe {statistics.median(probe_cpu) * 1000:.1f} ms, lstopo "
              f"{statistics.median(hwloc_cpu) * 1000:.1f} ms; ratio pair by pair: min {min(cpu_pairs):.2f}, "
              f"median {statistics.median(cpu_pairs):.2f}")
    print(f"probe peak RSS: {peak:.1f} MB (target < {RSS_TARGET_MB:.0f} MB) "
          f"{'PASS' if peak < RSS_TARGET_MB else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
