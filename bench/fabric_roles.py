#!/usr/bin/env python3
"""site.yml with the fabric roles against Ansible's facts-only floor, on the multi-host lab.

    sudo .venv/bin/python bench/fabric_roles.py [--hosts 16] [--fabric-only] [--json FILE] [--keep]

Brings up a fresh lab of N hosts with a fabric interface each (tests/lab/fabric_net.py: rtf0 on
a second bridge, which roce_net and roce_qos configure), then times: the facts-only floor
(ansible.builtin.setup on every host), site.yml's converge, the floor again, the idempotent
rerun (must report changed=0), the floor a third time. Prints seconds, the ratios to the floor
(median of the floor runs), and per role the number of tasks and their seconds (all hosts
together). --fabric-only runs just the fabric roles' tags of site.yml (rdma_core, roce_net,
roce_qos, host_tuning), without the agent.

The lab is CPU-bound (every host shares this machine's cores): compare runs on one machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lab import fabric_net, lab  # noqa: E402
from tests.lab.site_fixtures import ansible_env, run_playbook  # noqa: E402

FACTS_PLAY = """\
- name: Facts only (the floor)
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Gather facts
      ansible.builtin.setup:
"""
FABRIC_TAGS = ("--tags", "rdma_core,roce_net,roce_qos,host_tuning", "--skip-tags", "rocetune_agent_check")


def say(msg: str) -> None:
    print(f"fabric_roles: {msg}", file=sys.stderr, flush=True)


def per_role(tasks):
    """[[ "role : task", seconds ], ...] -> {role: (count, seconds)}; tasks outside a role as "(play)"."""
    out = collections.OrderedDict()
    for name, sec in tasks:
        role = name.split(" : ", 1)[0] if " : " in name else "(play)"
        count, total = out.get(role, (0, 0.0))
        out[role] = (count + 1, total + sec)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=16, help="lab hosts (default 16)")
    p.add_argument("--fabric-only", action="store_true", help="only the fabric roles' tags of site.yml")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    args = p.parse_args()
    if os.geteuid() != 0:
        say("needs root (the lab makes network namespaces and mounts)")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="rocetune-bench-"))
    facts = tmp / "facts.yml"
    facts.write_text(FACTS_PLAY)
    fabric_inv = tmp / "fabric.yml"
    fabric_inv.write_text(fabric_net.inventory_text())
    extra = FABRIC_TAGS if args.fabric_only else ()
    runs = {}
    try:
        info = lab.up(args.hosts)
        fabric_net.add(info)
        warm = run_playbook(info.inventory, tmp, playbook=str(facts))
        if warm.rc != 0:
            say("the lab hosts do not answer Ansible:\n" + warm.explain())
            return 1

        def timed(name: str, playbook: str, *more: str) -> None:
            seconds_file = tmp / f"{name}-{len(runs.get(name, []))}.json"
            env = ansible_env(ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench" / "callback_plugins"),
                              ANSIBLE_CALLBACKS_ENABLED="task_seconds", ROCETUNE_TASK_SECONDS=str(seconds_file))
            r = run_playbook(info.inventory, tmp, *more, playbook=playbook, env=env,
                             extra_inventories=[fabric_inv])
            if r.rc != 0:
                raise SystemExit(f"fabric_roles: {name} failed:\n{r.explain()}")
            r.tasks = json.loads(seconds_file.read_text())["tasks"] if seconds_file.exists() else []
            runs.setdefault(name, []).append(r)
            say(f"{name:<9} {r.seconds:6.1f}s  changed={r.total('changed')}")

        timed("floor", str(facts))
        timed("converge", "site.yml", *extra)
        timed("floor", str(facts))
        timed("rerun", "site.yml", *extra)
        timed("floor", str(facts))
    finally:
        if not args.keep:
            lab.down()

    floors = [r.seconds for r in runs["floor"]]
    floor = statistics.median(floors)
    converge, rerun = runs["converge"][0], runs["rerun"][0]
    what = "site.yml (fabric roles only)" if args.fabric_only else "site.yml"
    figures = {"hosts": args.hosts, "cpus": os.cpu_count(), "playbook": what,
               "floor_s": round(floor, 2), "floor_runs_s": [round(f, 2) for f in floors],
               "converge_s": round(converge.seconds, 2), "converge_ratio": round(converge.seconds / floor, 2),
               "rerun_s": round(rerun.seconds, 2), "rerun_ratio": round(rerun.seconds / floor, 2),
               "rerun_changed": rerun.total("changed")}
    print(f"fabric_roles: {args.hosts} lab hosts with a fabric interface, {figures['cpus']} CPUs, {what}")
    print(f"  facts-only floor  {floor:6.1f}s   (runs: {' '.join(f'{f:.1f}' for f in floors)})")
    print(f"  converge          {converge.seconds:6.1f}s   {figures['converge_ratio']:.2f}x floor")
    print(f"  rerun             {rerun.seconds:6.1f}s   {figures['rerun_ratio']:.2f}x floor, "
          f"changed={figures['rerun_changed']}")
    print("  per role: tasks run, seconds (all hosts together)")
    for label, r in (("converge", converge), ("rerun", rerun)):
        roles = per_role(r.tasks)
        figures[f"{label}_roles"] = {k: {"tasks": c, "seconds": round(s, 2)} for k, s in
                                     ((k, v[1]) for k, v in roles.items()) for c in [roles[k][0]]}
        print(f"    {label}:")
        for role, (count, sec) in roles.items():
            print(f"      {role:<16} {count:3d} tasks {sec:6.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0 if figures["rerun_changed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
