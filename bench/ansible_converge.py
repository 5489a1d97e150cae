#!/usr/bin/env python3
"""site.yml against Ansible's own floor, on the multi-host lab.

    sudo .venv/bin/python bench/ansible_converge.py [--hosts 16] [--json FILE] [--keep]

Brings up a fresh lab of N hosts (taking down any lab that is up), then times, in one run:
a facts-only play (ansible.builtin.setup on the same hosts: the floor, what any play that
touches every host costs), site.yml's converge on the fresh hosts, the floor again, the
idempotent rerun (which must report changed=0), the floor a third time. Prints the seconds
and the ratios to the floor (the median of the three floor runs). Targets: rerun <= 2x floor,
converge <= 3x floor. The lab goes down at the end (--keep leaves it up).

Untimed: one facts run on every host (so that every timed run finds the same warm SSH master
connections). By default it times the agent's roles (`--tags rocetune_agent,rocetune_env`);
`--tags all` times the whole playbook.

The lab is CPU-bound: every host shares this machine's cores, so node-side work (pip
rocetune probing) adds up across hosts here, where a real cluster
runs it in parallel on separate machines. The figures are for comparing runs on one machine.
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

from tests.lab import lab  # noqa: E402
from tests.lab.site_fixtures import ansible_env, run_playbook, tool  # noqa: E402

FACTS_PLAY = """\
- name: Facts only (the floor)
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Gather facts
      ansible.builtin.setup:
"""
TARGET_RERUN = 2.0
TARGET_CONVERGE = 3.0


def say(msg: str) -> None:
    print(f"ansible_converge: {msg}", file=sys.stderr, flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=16, help="lab hosts (default 16)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    p.add_argument("--tags", default="rocetune_agent,rocetune_env",
                   help="site.yml's roles to time (default: the agent's two; 'all' for the whole playbook, "
                        "bench/fabric_roles.py times the fabric roles)")
    args = p.parse_args()
    if os.geteuid() != 0:
        say("needs root (the lab makes network namespaces and mounts)")
        return 2

    say(f"bringing up {args.hosts} lab hosts; timing site.yml --tags {args.tags}")
    tag_args = () if args.tags == "all" else ("--tags", args.tags)
    tmp = Path(tempfile.mkdtemp(prefix="rocetune-bench-"))
    facts = tmp / "facts.yml"
    facts.write_text(FACTS_PLAY)
    runs = {}
    try:
        info = lab.up(args.hosts)
        inv = info.inventory
        warm = run_playbook(inv, tmp, playbook=str(facts))  # also proves every host answers
        if warm.rc != 0:
            say("the lab hosts do not answer Ansible:\n" + warm.explain())
            return 1

        def timed(name: str, playbook: str, *extra: str) -> None:
            seconds_file = tmp / f"{name}-{len(runs.get(name, []))}.json"
            env = ansible_env(ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench" / "callback_plugins"),
                              ANSIBLE_CALLBACKS_ENABLED="task_seconds",
                              ROCETUNE_TASK_SECONDS=str(seconds_file))
            r = run_playbook(inv, tmp, *extra, playbook=playbook, env=env)
            if r.rc != 0:
                raise SystemExit(f"ansible_converge: {name} failed:\n{r.explain()}")
            r.tasks = json.loads(seconds_file.read_text())["tasks"] if seconds_file.exists() else []
            runs.setdefault(name, []).append(r)
            say(f"{name:<9} {r.seconds:6.1f}s  changed={r.total('changed')}")

        timed("floor", str(facts))
        timed("converge", "site.yml", *tag_args)
        timed("floor", str(facts))
        timed("rerun", "site.yml", *tag_args)
        timed("floor", str(facts))
    finally:
        if not args.keep:
            lab.down()

    floors = [r.seconds for r in runs["floor"]]
    floor = statistics.median(floors)
    converge, rerun = runs["converge"][0], runs["rerun"][0]
    version = subprocess.run([tool("ansible"), "--version"], stdout=subprocess.PIPE, text=True,
                             env=ansible_env(), timeout=60).stdout.split("\n")[0]
    figures = {
        "hosts": args.hosts, "cpus": os.cpu_count(), "ansible": version.strip(),
        "floor_s": round(floor, 2), "floor_runs_s": [round(f, 2) for f in floors],
        "converge_s": round(converge.seconds, 2), "converge_ratio": round(converge.seconds / floor, 2),
        "rerun_s": round(rerun.seconds, 2), "rerun_ratio": round(rerun.seconds / floor, 2),
        "rerun_changed": rerun.total("changed"),
        "targets": {"converge_ratio": TARGET_CONVERGE, "rerun_ratio": TARGET_RERUN},
    }

    def verdict(ratio: float, target: float) -> str:
        return "meets" if ratio <= target else "misses"

    print(f"ansible_converge: {args.hosts} lab hosts, {figures['ansible']}, {figures['cpus']} CPUs")
    print(f"  facts-only floor   {floor:6.1f}s   (runs: {' '.join(f'{f:.1f}' for f in floors)})")
    print(f"  site.yml converge  {converge.seconds:6.1f}s   {figures['converge_ratio']:.2f}x floor "
          f"({verdict(figures['converge_ratio'], TARGET_CONVERGE)} target <= {TARGET_CONVERGE:g}x)")
    print(f"  site.yml rerun     {rerun.seconds:6.1f}s   {figures['rerun_ratio']:.2f}x floor "
          f"({verdict(figures['rerun_ratio'], TARGET_RERUN)} target <= {TARGET_RERUN:g}x), "
          f"changed={figures['rerun_changed']}")
    print("  where the time goes (seconds per task, all hosts; tasks under 0.5s left out):")
    for label, r in (("converge", converge), ("rerun", rerun)):
        tasks = [(n.split(" : ", 1)[-1], sec) for n, sec in r.tasks if sec >= 0.5]
        startup = r.seconds - sum(sec for _, sec in r.tasks)
        print(f"    {label}: ansible startup and small tasks {startup + sum(sec for n, sec in r.tasks if sec < 0.5):.1f}")
        for n, sec in tasks:
            print(f"      {sec:5.1f}  {n}")
        figures[f"{label}_tasks"] = r.tasks
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0 if figures["rerun_changed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
