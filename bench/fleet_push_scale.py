#!/usr/bin/env python3
"""Results pushed by the nodes and gathered through srun, on thousands of simulated hosts: time
and peak memory of each path and of the report that reads what it left, and what that gives at
10,000 nodes.

    python bench/fleet_push_scale.py [--hosts 4096]

One real result first: `rocetune --json doctor --no-counters` on the fixture host
tests/fixtures/hosts/dgx-h100-roce (the compact form a node pushes or prints, with its fleet
facts). Then, each in a child process (its own wall time and ru_maxrss):

    push     N calls of app.doctor.push_result (what every node's gate or timer does once per run:
             one atomic write of DIR/NODE.json); the per-node cost is the time over N
    srun     fleet.srun_gather.gather over N nodes, fed by a stand-in srun that prints what
             `srun --label` prints for N tasks (the node's name, its doctor output, its exit
             status; each line in 1 KiB labelled pieces), the tasks interleaved 64 at a time:
             Slurm's fan-out itself is not run here,
             only what rocetune does with the step's output
    report   `rocetune --json fleet report DIR` on the directory each path left

The 10,000-node estimate scales each measured figure linearly by 10000/N (each path's work is
per node: one parse and one write, one file read by the report); for SSH it uses the lab's
measured rate in bench/fleet_gather.py (64 hosts in 4.1 s at 16 forks, 0.064 s a host), which
grows with the hosts' own doctor time, not with rocetune.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
SSH_S_PER_HOST = 4.1 / 64  # bench/fleet_gather.py, 64 lab hosts at --forks 16
ESTIMATE = 10_000

PUSH = """
import json, sys, time
from rocetune.app.doctor import push_result
data = json.loads(open(sys.argv[1]).read())["data"]
n, out = int(sys.argv[2]), sys.argv[3]
start = time.perf_counter()
for i in range(1, n + 1):
    push_result(out, f"gpu{i:05d}", data)
print(time.perf_counter() - start)
"""

SRUN = """
import sys, time
from rocetune.fleet import srun_gather
n, out, fake = int(sys.argv[1]), sys.argv[2], sys.argv[3]
nodes = [f"gpu{i:05d}" for i in range(1, n + 1)]
start = time.perf_counter()
got = srun_gather.gather(nodes, out, srun_gather.Options(timeout=3600, srun=fake))
assert not [o for o in got if o.error], [o.error for o in got if o.error][:3]
print(time.perf_counter() - start)
"""

FAKE_SRUN = """#!/usr/bin/env python3
import sys
n, body = int(sys.argv[1]), open(sys.argv[2]).read().splitlines()
w = sys.stdout.write
for first in range(0, n, 64):
    block = range(first, min(n, first + 64))
    for t in block:
        w(f"{t:05d}: @node gpu{t + 1:05d}\\n")
    for line in body:  # in pieces, as srun passes on a node's messages (1 KiB assumed)
        for start in range(0, len(line), 1024):
            for t in block:
                w(f"{t:05d}: {line[start:start + 1024]}\\n")
    for t in block:
        w(f"{t:05d}: @rc 5\\n")
"""


def run(argv) -> tuple:
    """(wall seconds, peak RSS in MB of that process alone, stdout): os.wait4 gives the child's own usage."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        text, said = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 1):
        sys.exit(f"{argv[1:4]} failed: {said[-2000:]}")
    return wall, usage.ru_maxrss / 1024, text


def child(code: str, *args: str) -> tuple:
    wall, rss, text = run([sys.executable, "-c", code, *args])
    return wall, float(text.strip() or 0), rss


def report(directory: Path) -> tuple:
    wall, rss, text = run([sys.executable, "-m", "rocetune", "--json", "fleet", "report", str(directory)])
    return wall, rss, json.loads(text)["data"]["summary"]["hosts"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=4096)
    n = parser.parse_args().hosts
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    with tempfile.TemporaryDirectory(prefix="rocetune-push-bench-") as tmp_:
        tmp = Path(tmp_)
        one = subprocess.run(
            [sys.executable, "-m", "rocetune", "--json", "doctor", "--root", str(FIXTURE), "--no-counters"],
            env=env,
            capture_output=True,
            text=True,
        )
        (tmp / "doctor.json").write_text(one.stdout)
        (tmp / "body.txt").write_text(one.stdout)
        print(
            f"one node's compact doctor result: {len(one.stdout.encode())} bytes ({len(one.stdout.splitlines())} lines)"
        )
        rows = []
        pushed = tmp / "pushed"
        pushed.mkdir()
        wall, inner, rss = child(PUSH, str(tmp / "doctor.json"), str(n), str(pushed))
        rows.append(("push", wall, inner, rss, pushed))
        fake = tmp / "srun"
        fake.write_text(FAKE_SRUN)
        fake.chmod(0o755)
        wrapper = tmp / "srun-wrapper"
        wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} {n} {tmp / 'body.txt'}\n")
        wrapper.chmod(0o755)
        gathered = tmp / "srun-out"
        gathered.mkdir()
        wall, inner, rss = child(SRUN, str(n), str(gathered), str(wrapper))
        rows.append(("srun", wall, inner, rss, gathered))
        print(f"{n} simulated hosts")
        print(
            f"{'path':<6} {'work s':>8} {'per node ms':>12} {'peak MB':>8} {'report s':>9} {'report MB':>10}"
            f" {'10k work s':>11} {'10k report s':>13}"
        )
        scale = ESTIMATE / n
        for name, _wall, inner, rss, directory in rows:
            r_wall, r_rss, hosts = report(directory)
            assert hosts == n, hosts
            print(
                f"{name:<6} {inner:8.1f} {inner / n * 1000:12.2f} {rss:8.0f} {r_wall:9.1f} {r_rss:10.0f}"
                f" {inner * scale:11.0f} {r_wall * scale:13.0f}"
            )
        ssh_10k = SSH_S_PER_HOST * ESTIMATE
        print(f"ssh    (lab rate {SSH_S_PER_HOST * 1000:.0f} ms a host at 16 forks) 10k: {ssh_10k:.0f} s")
        print(
            "push: each node writes its own file, so the fleet's push time is one node's "
            f"({rows[0][2] / n * 1000:.2f} ms) plus its doctor run; the figure above is N writes in a row"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
