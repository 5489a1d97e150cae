#!/usr/bin/env python3
"""`rocetune fleet gather` (paramiko) against `ansible all -m ansible.builtin.setup`, on the lab.

    sudo .venv/bin/python bench/fleet_gather.py [--hosts 16 64] [--runs 3] [--forks N]

For each host count: brings up a fresh lab of N namespace hosts (taking down any lab that is up),
then times, round by round in turn (so the machine's drift hits both alike), as whole processes:

    setup    ansible all -i LAB_INVENTORY -m ansible.builtin.setup --forks F   (facts of every host)
    gather   rocetune fleet gather HOST... -o DIR --forks F --identity KEY --known-hosts KH
             --command "<this python> -m rocetune"  (doctor on every host, which carries probe's
             Features and plan; strict host keys)

and prints the medians and gather/setup (median of the per-round ratios, and the min). Target:
gather <= 0.5x setup. Every gather must write all N results with no error, and the setup run
must reach every host; either failing is an error (exit 1). The lab goes down at the end.

Measured on 2 shared vCPUs (load average 3.4 at the start, 13.5 at the end, 3 rounds each,
--forks 16): 16 hosts setup 3.7 s, gather 1.1 s, 0.30x; 64 hosts setup 13.0 s, gather 4.1 s,
0.31x (both met). Before gather ran doctor alone (probe, then doctor: two processes per host)
it was 0.49x and 0.53x.

The lab hosts share this machine's cores: each gathered host runs one rocetune process where
setup runs one module, so the figures compare runs on one machine, not a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab import netns  # noqa: E402
from lab.playbooks import ansible_env, tool  # noqa: E402

TARGET = 0.5


def timed(argv, env) -> tuple:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def one_count(n: int, runs: int, forks: int, tmp: Path) -> dict:
    info = netns.up(n)
    ips = [ip for _, ip in info.hosts]
    setup_argv = [tool("ansible"), "all", "-i", str(info.inventory), "-m", "ansible.builtin.setup",
                  "--forks", str(forks), "-o"]
    agent = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m rocetune"
    setup_s, gather_s, ratios = [], [], []
    for r in range(runs):
        s, proc = timed(setup_argv, ansible_env())
        if proc.returncode != 0 or proc.stdout.count("SUCCESS") != n:
            raise SystemExit(f"setup on {n} hosts failed (exit {proc.returncode}): {proc.stdout[-500:]}")
        out = tmp / f"gather-{n}-{r}"
        g, proc = timed([sys.executable, "-m", "rocetune", "--json", "fleet", "gather", *ips, "-o", str(out),
                         "--forks", str(forks), "--identity", str(info.key), "--known-hosts",
                         str(info.known_hosts), "--user", "root", "--command", agent],
                        dict(os.environ, PYTHONPATH=str(REPO / "src")))
        files = sorted(out.glob("*.json")) if out.is_dir() else []
        errors = [json.loads(f.read_text()).get("error") for f in files]
        if proc.returncode != 0 or len(files) != n or any(errors):
            raise SystemExit(f"gather on {n} hosts: exit {proc.returncode}, {len(files)} files, "
                             f"errors {[e for e in errors if e][:3]}; {proc.stderr[-300:]}")
        setup_s.append(s)
        gather_s.append(g)
        ratios.append(g / s)
    return {"hosts": n, "setup": statistics.median(setup_s), "gather": statistics.median(gather_s),
            "ratio": statistics.median(ratios), "min": min(ratios)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--forks", type=int, default=16)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    try:
        with tempfile.TemporaryDirectory(prefix="rocetune-bench-gather-") as tmp:
            for n in args.hosts:
                r = one_count(n, args.runs, args.forks, Path(tmp))
                verdict = "met" if r["ratio"] <= TARGET else "missed"
                print(f"{n} hosts: setup {r['setup']:.1f} s, gather {r['gather']:.1f} s; gather/setup median "
                      f"{r['ratio']:.2f}x, min {r['min']:.2f}x (target <= {TARGET:g}x: {verdict})", flush=True)
    finally:
        netns.down()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
