#!/usr/bin/env python3
"""site.yml against Ansible's own floor, on the multi-host lab.

    sudo .venv/bin/python bench/ansible_converge.py [--hosts 16] [--tags all] [--json FILE] [--keep]

Brings up a fresh lab of N hosts (taking down any lab that is up), each with a fabric interface
(lab/fabric_net.py: rtf0 on a second bridge, which roce_net and roce_qos configure), then
times, in one run: a facts-only play (ansible.builtin.setup on the same hosts: the floor, what any
play that touches every host costs), site.yml's converge on the fresh hosts, the floor again, the
idempotent rerun (which must report changed=0), the floor a third time. Prints the seconds, the
ratios to the floor (the median of the three floor runs), and per role the tasks run and their
seconds. Targets: rerun <= 2x floor, converge <= 3x floor. The lab goes down at the end (--keep
leaves it up). `--tags` times part of the playbook (e.g. rocetune_agent,rocetune_env).

CPU, beside the wall time: the controller's CPU seconds are those of the ansible-playbook
process tree (its children's rusage once it exits); the node side is the rest of the machine's
busy time over the run (/proc/stat), per host. Targets for the controller's CPU: rerun <= 2x
and converge <= 3x the floor's. The node-side figure is only as clean as the machine is idle:
run it with nothing else busy (the load average is printed).

It waits for the lab lock (/run/rocetune-lab.lock) first, as the lab tests do.

Untimed: one facts run on every host (so that every timed run finds the same warm SSH master
connections).

The lab is CPU-bound: every host shares this machine's cores, so node-side work (rocetune
probing, Python module start-up) adds up across hosts here, where a real cluster runs it in
parallel on separate machines. The figures are for comparing runs on one machine.
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab import fabric_net, netns  # noqa: E402
from lab.playbooks import ansible_env, run_playbook, tool  # noqa: E402

FACTS_PLAY = """\
- name: Facts only (the floor)
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Gather facts
      ansible.builtin.setup:
"""
LAB_LOCK = "/run/rocetune-lab.lock"
TARGET_RERUN = 2.0
TARGET_CONVERGE = 3.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds every core of this machine spent busy since boot (/proc/stat, all but idle
    and iowait)."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / CLOCK_TICKS


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def take_lab_lock() -> None:
    """One lab at a time on a machine (tests/conftest.py): wait for LAB_LOCK, held until exit,
    unless the caller holds it already (ROCETUNE_LAB_LOCKED=1)."""
    if os.environ.get("ROCETUNE_LAB_LOCKED") == "1":
        return
    fd = os.open(LAB_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say(f"waiting for {LAB_LOCK}: another lab is up on this machine")
        fcntl.flock(fd, fcntl.LOCK_EX)


def say(msg: str) -> None:
    print(f"ansible_converge: {msg}", file=sys.stderr, flush=True)


def per_role(tasks):
    """[[ "role : task", seconds ], ...] -> {role: (count, seconds)}; tasks outside a role as "(play)"."""
    out = collections.OrderedDict()
    for name, sec in tasks:
        role = name.split(" : ", 1)[0] if " : " in name else "(play)"
        count, total = out.get(role, (0, 0.0))
        out[role] = (count + 1, total + sec)
    return out


def run_all(args, tmp: Path) -> dict:
    facts = tmp / "facts.yml"
    facts.write_text(FACTS_PLAY)
    fabric_inv = tmp / "fabric.yml"
    fabric_inv.write_text(fabric_net.inventory_text())
    tag_args = () if args.tags == "all" else ("--tags", args.tags)
    runs: dict = {}
    info = netns.up(args.hosts)
    fabric_net.add(info)
    warm = run_playbook(info.inventory, tmp, playbook=str(facts))  # also proves every host answers
    if warm.rc != 0:
        raise SystemExit("ansible_converge: the lab hosts do not answer Ansible:\n" + warm.explain())

    def timed(name: str, playbook: str, *extra: str) -> None:
        seconds_file = tmp / f"{name}-{len(runs.get(name, []))}.json"
        env = ansible_env(
            ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench" / "callback_plugins"),
            ANSIBLE_CALLBACKS_ENABLED="task_seconds",
            ROCETUNE_TASK_SECONDS=str(seconds_file),
        )
        cpu0, busy0 = children_cpu_s(), machine_busy_s()
        r = run_playbook(info.inventory, tmp, *extra, playbook=playbook, env=env, extra_inventories=[fabric_inv])
        r.controller_cpu = children_cpu_s() - cpu0
        r.node_cpu = max(0.0, machine_busy_s() - busy0 - r.controller_cpu) / args.hosts
        if r.rc != 0:
            raise SystemExit(f"ansible_converge: {name} failed:\n{r.explain()}")
        recorded = json.loads(seconds_file.read_text()) if seconds_file.exists() else {}
        r.tasks = recorded.get("tasks", [])
        r.in_one_call = recorded.get("in_one_call", {})
        runs.setdefault(name, []).append(r)
        say(
            f"{name:<9} {r.seconds:6.1f}s  changed={r.total('changed')}  controller CPU {r.controller_cpu:.1f}s"
            f"  node CPU {r.node_cpu:.2f}s/host"
        )

    timed("floor", str(facts))
    timed("converge", "site.yml", *tag_args)
    timed("floor", str(facts))
    timed("rerun", "site.yml", *tag_args)
    timed("floor", str(facts))
    return runs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=16, help="lab hosts (default 16)")
    p.add_argument("--tags", default="all", help="site.yml's tags to time (default all: the whole playbook)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--keep", action="store_true", help="leave the lab up afterwards")
    args = p.parse_args()
    if os.geteuid() != 0:
        say("needs root (the lab makes network namespaces and mounts)")
        return 2
    take_lab_lock()
    say(f"bringing up {args.hosts} lab hosts; timing site.yml --tags {args.tags}")
    try:
        runs = run_all(args, Path(tempfile.mkdtemp(prefix="rocetune-bench-")))
    finally:
        if not args.keep:
            netns.down()

    floors = [r.seconds for r in runs["floor"]]
    floor = statistics.median(floors)
    converge, rerun = runs["converge"][0], runs["rerun"][0]
    floor_cpu = statistics.median(r.controller_cpu for r in runs["floor"])
    floor_node = statistics.median(r.node_cpu for r in runs["floor"])
    version = subprocess.run(
        [tool("ansible"), "--version"], stdout=subprocess.PIPE, text=True, env=ansible_env(), timeout=60
    ).stdout.split("\n")[0]
    figures = {
        "hosts": args.hosts,
        "cpus": os.cpu_count(),
        "ansible": version.strip(),
        "tags": args.tags,
        "floor_s": round(floor, 2),
        "floor_runs_s": [round(f, 2) for f in floors],
        "converge_s": round(converge.seconds, 2),
        "converge_ratio": round(converge.seconds / floor, 2),
        "rerun_s": round(rerun.seconds, 2),
        "rerun_ratio": round(rerun.seconds / floor, 2),
        "rerun_changed": rerun.total("changed"),
        "controller_cpu_s": {
            "floor": round(floor_cpu, 2),
            "converge": round(converge.controller_cpu, 2),
            "rerun": round(rerun.controller_cpu, 2),
        },
        "controller_cpu_ratio": {
            "converge": round(converge.controller_cpu / floor_cpu, 2),
            "rerun": round(rerun.controller_cpu / floor_cpu, 2),
        },
        "node_cpu_s_per_host": {
            "floor": round(floor_node, 2),
            "converge": round(converge.node_cpu, 2),
            "rerun": round(rerun.node_cpu, 2),
        },
        "loadavg_before_summary": os.getloadavg()[0],
        "targets": {
            "converge_ratio": TARGET_CONVERGE,
            "rerun_ratio": TARGET_RERUN,
            "controller_cpu_converge_ratio": TARGET_CONVERGE,
            "controller_cpu_rerun_ratio": TARGET_RERUN,
        },
    }

    def verdict(ratio: float, target: float) -> str:
        return "meets" if ratio <= target else "misses"

    print(
        f"ansible_converge: {args.hosts} lab hosts, {figures['ansible']}, {figures['cpus']} CPUs, "
        f"site.yml --tags {args.tags}"
    )
    print(f"  facts-only floor   {floor:6.1f}s   (runs: {' '.join(f'{f:.1f}' for f in floors)})")
    print(
        f"  site.yml converge  {converge.seconds:6.1f}s   {figures['converge_ratio']:.2f}x floor "
        f"({verdict(figures['converge_ratio'], TARGET_CONVERGE)} target <= {TARGET_CONVERGE:g}x)"
    )
    print(
        f"  site.yml rerun     {rerun.seconds:6.1f}s   {figures['rerun_ratio']:.2f}x floor "
        f"({verdict(figures['rerun_ratio'], TARGET_RERUN)} target <= {TARGET_RERUN:g}x), "
        f"changed={figures['rerun_changed']}"
    )
    cr = figures["controller_cpu_ratio"]
    print(
        f"  controller CPU     floor {floor_cpu:5.1f}s  converge {converge.controller_cpu:5.1f}s "
        f"({cr['converge']:.2f}x, {verdict(cr['converge'], TARGET_CONVERGE)} <= {TARGET_CONVERGE:g}x)  "
        f"rerun {rerun.controller_cpu:5.1f}s ({cr['rerun']:.2f}x, {verdict(cr['rerun'], TARGET_RERUN)} "
        f"<= {TARGET_RERUN:g}x)"
    )
    nc = figures["node_cpu_s_per_host"]
    print(
        f"  node CPU per host  floor {nc['floor']:5.2f}s  converge {nc['converge']:5.2f}s "
        f"({nc['converge'] / max(nc['floor'], 0.01):.2f}x)  rerun {nc['rerun']:5.2f}s "
        f"({nc['rerun'] / max(nc['floor'], 0.01):.2f}x)   load average {os.getloadavg()[0]:.2f}"
    )
    print("  per role: tasks run, seconds (all hosts together); then tasks of 0.5 s or more")
    for label, r in (("converge", converge), ("rerun", rerun)):
        roles = per_role(r.tasks)
        figures[f"{label}_roles"] = {k: {"tasks": c, "seconds": round(s, 2)} for k, (c, s) in roles.items()}
        figures[f"{label}_tasks"] = r.tasks
        outside = r.seconds - sum(sec for _, sec in r.tasks)
        print(f"    {label}: (ansible start-up and between tasks {outside:.1f}s)")
        for role, (count, sec) in roles.items():
            print(f"      {role:<16} {count:3d} tasks {sec:6.1f}s")
        for n, sec in r.tasks:
            if sec >= 0.5:
                print(f"        {sec:5.1f}  {n}")
        figures[f"{label}_in_one_call"] = r.in_one_call
        if r.in_one_call:
            print("      inside the one-call steps (preflight check, converge apply): hosts, node seconds summed"
                  " (wall on shared cores; CPU of the module and the commands it ran)")
            for key, (count, sec, cpu) in r.in_one_call.items():
                print(f"        {key:<24} {count:3d} {sec:6.1f}s  CPU {cpu:5.2f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    return 0 if figures["rerun_changed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
