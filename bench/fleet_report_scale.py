#!/usr/bin/env python3
"""`rocetune fleet report` on thousands of hosts' results: wall time and peak memory, the HTML
page included, against the targets (4,096 hosts in at most 15 s and 1 GB).

    python bench/fleet_report_scale.py [--hosts 4096] [--form gathered|doctor|features] [--runs 1]

Builds, in a temporary directory, one result per host made from real doctor runs on the
fixture host tests/fixtures/hosts/dgx-h100-roce and three drifted copies of it (a rail at MTU
1500, a rail's device gone, 8 MiB memlock), spread through the fleet, plus a few failed
gathers, in one of three forms:

    gathered   what `fleet gather` and playbooks/fleet.yml write: `doctor -v` (Features, plan,
               findings and the node's fleet facts, ~95 KB a host) in the fleet-host form
    doctor     what `rocetune --json doctor > HOST.json` leaves on a node (~10 KB a host)
    features   the gathered form from a doctor without fleet facts (an older release): the
               report checks every host's Features and computes the facts itself

then runs `rocetune --json fleet report DIR --html PAGE` in a child process and prints its wall
time and peak RSS (the child's own ru_maxrss), the ratios to the targets, and the page's size.

Measured on 2 shared vCPUs (load average 3-5), 4,096 hosts, one run each: see docs/fleet.md
("Scale") for the figures of this tree.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
TARGET_S, TARGET_MB = 15.0, 1024.0
MEMLOCK_8M = {"etc/systemd/system.conf": "[Manager]\nDefaultLimitMEMLOCK=8M\n",
              "etc/security/limits.conf": "* soft memlock 8192\n* hard memlock 8192\n"}


def rocetune(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocetune", *args], stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), check=False)


def variants(tmp: Path) -> dict:
    """{name: doctor -v data} of the fixture host and three drifted copies of it."""
    roots = {}
    for name in ("good", "mtu", "rail", "memlock"):
        root = tmp / "roots" / name
        shutil.copytree(FIXTURE, root, symlinks=True)
        roots[name] = root
    (roots["mtu"] / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")
    (roots["rail"] / "sys/class/infiniband/mlx5_4").unlink()
    for rel, text in MEMLOCK_8M.items():
        (roots["memlock"] / rel).parent.mkdir(parents=True, exist_ok=True)
        (roots["memlock"] / rel).write_text(text)
    out = {}
    for name, root in roots.items():
        proc = rocetune("--json", "doctor", "-v", "--no-counters", "--root", str(root))
        out[name] = json.loads(proc.stdout)["data"]
    return out


def kind_of(i: int) -> str:
    for every, kind in ((509, "failed"), (211, "rail"), (131, "memlock"), (97, "mtu")):
        if i % every == every - 1:
            return kind
    return "good"


def build(directory: Path, hosts: int, form: str, data: dict) -> int:
    """Write the hosts' files; returns their total size in bytes."""
    templates = {}
    for name, d in data.items():
        d = json.loads(json.dumps(d))
        d["features"]["host"]["hostname"] = "@HOST@"
        d["summary"]["host"] = "@HOST@"
        if form == "features":
            del d["fleet_facts"]
        if form == "doctor":
            from_cli = {"schema": "rocetune.result/1", "command": "doctor", "status": "findings",
                        "exit_code": d["summary"]["exit_code"], "warnings": [], "errors": [],
                        "data": compact(d)}
            templates[name] = json.dumps(from_cli, sort_keys=True)
        else:
            templates[name] = json.dumps({"schema": "rocetune.fleet-host/1", "host": "@HOST@", "probe": None,
                                          "doctor": d, "gathered_at": "2026-11-27T12:00:00Z", "error": None},
                                         sort_keys=True)
    total = 0
    for i in range(hosts):
        host = f"gpu{i + 1:04d}"
        kind = kind_of(i)
        if kind == "failed":
            text = json.dumps({"schema": "rocetune.fleet-host/1", "host": host, "probe": None, "doctor": None,
                               "gathered_at": None, "error": f"ssh: connect to host {host} port 22: No route to host"})
        else:
            text = templates[kind].replace("@HOST@", host)
        (directory / f"{host}.json").write_text(text)
        total += len(text)
    return total


def compact(data: dict) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from rocetune.doctor.report import compact as doctor_compact

    return doctor_compact(data)


def run_report(directory: Path, page: Path) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "report", str(directory),
                           "--html", str(page)], capture_output=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), check=False)
    wall = time.monotonic() - start
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        raise SystemExit(f"fleet report exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    summary = json.loads(proc.stdout)["data"]["summary"]
    # ru_maxrss of the children is the largest child so far: the report is the largest by far
    return wall, max(rss_kb, before) / 1024, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=4096)
    ap.add_argument("--form", choices=("gathered", "doctor", "features"), default="gathered")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", metavar="DIR", help="build the results here and keep them")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rocetune-fleet-bench-"))
    try:
        data = variants(tmp)
        directory = Path(args.keep) if args.keep else tmp / "results"
        directory.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        size = build(directory, args.hosts, args.form, data)
        print(f"built {args.hosts} {args.form} results, {size / 1e6:.0f} MB, in {time.monotonic() - start:.1f}s")
        page = tmp / "report.html"
        for run in range(args.runs):
            wall, rss_mb, summary = run_report(directory, page)
            scale = args.hosts / 4096
            print(f"run {run + 1}: fleet report --html on {args.hosts} hosts: {wall:.1f} s, peak RSS {rss_mb:.0f} MB "
                  f"({wall / (TARGET_S * scale):.2f}x of {TARGET_S * scale:.1f} s, "
                  f"{rss_mb / TARGET_MB:.2f}x of {TARGET_MB:.0f} MB); page {page.stat().st_size / 1024:.0f} KB; "
                  f"{summary['failed']} failed, {summary['differ']} differ")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
