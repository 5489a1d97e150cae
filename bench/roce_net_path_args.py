#!/usr/bin/env python3
"""What the jumbo path check's arguments cost the controller as the fleet grows.

    .venv/bin/python bench/roce_net_path_args.py [--hosts 50,100,200] [--repo DIR]

No lab: N inventory hosts that never connect (every task here runs on the controller). Each host
gets a roce_net_links result with 8 rails (set_fact), then the role's own vars (roles/roce_net
vars and defaults of DIR, default this checkout) template what the path check task passes:
its peers and their results, plus the ring the role builds once per batch where the role has one.
Prints the seconds per size and the growth ratio from the smallest to the largest size: about
the size ratio for O(n) argument building, its square for O(n^2). Give --repo an older checkout
to compare.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab.playbooks import ansible_env, tool  # noqa: E402

RAILS = 8
PLAY = """\
- name: The path check's arguments, as the role templates them
  hosts: all
  gather_facts: false
  vars_files: [REPO/roles/roce_net/defaults/main.yml, REPO/roles/roce_net/vars/main.yml]
  vars:
    roce_net_interfaces: RAILS
  tasks:
    - name: A roce_net_links result per host
      ansible.builtin.set_fact:
        __roce_net_links: >-
          {%- set ns = namespace(p=[]) -%}
          {%- for r in roce_net_interfaces -%}
          {%-   set ns.p = ns.p + [[r, {'mtu': 9000, 'addresses': ['10.' ~ loop.index0 ~ '.' ~ idx ~ '/16']}]] -%}
          {%- endfor -%}
          {{ {'changed': true, 'failed': false, 'interfaces': dict(ns.p)} }}
    - name: The ring, once (where the role builds one)
      ansible.builtin.set_fact:
        __roce_net_ring: "{{ __roce_net_ring_all }}"
      run_once: true
      when: __roce_net_ring_all is defined
    - name: The arguments of each host's path check
      ansible.builtin.set_fact:
        __args: ARGS
"""
NEW_ARGS = (
    '{peers: "{{ __roce_net_ring_peers }}", '
    "results: \"{{ __roce_net_ring_peers | map('extract', __roce_net_ring.results) | list }}\"}"
)
OLD_ARGS = (
    '{peers: "{{ __roce_net_peer_hosts }}", '
    "results: \"{{ __roce_net_peer_hosts | map('extract', hostvars, '__roce_net_links') | list }}\", "
    'later: "{{ __roce_net_later_hosts }}"}'
)


def run(repo: Path, hosts: int, work: Path) -> float:
    inventory = work / f"hosts-{hosts}.ini"
    inventory.write_text(
        "".join(f"gpu{i:04d} idx={i // 250}.{i % 250} ansible_connection=local\n" for i in range(hosts))
    )
    vars_text = (repo / "roles" / "roce_net" / "vars" / "main.yml").read_text()
    play = work / "play.yml"
    rails = [f"rail{r}" for r in range(RAILS)]
    args = NEW_ARGS if "__roce_net_ring_all" in vars_text else OLD_ARGS
    play.write_text(PLAY.replace("REPO", str(repo)).replace("RAILS", str(rails)).replace("ARGS", args))
    env = ansible_env(ANSIBLE_CONFIG=str(work / "none.cfg"))
    started = time.monotonic()
    proc = subprocess.run(
        [tool("ansible-playbook"), "-i", str(inventory), str(play), "--forks", "16"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=3600,
    )
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{hosts} hosts: ansible-playbook exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", default="50,100,200", help="comma-separated fleet sizes")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose role is measured")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.hosts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        times = {n: run(args.repo.resolve(), n, Path(tmp)) for n in sizes}
    for n in sizes:
        print(f"{n:5d} hosts: {times[n]:7.1f} s")
    first, last = sizes[0], sizes[-1]
    print(
        f"growth {first} -> {last} hosts: x{times[last] / times[first]:.1f} "
        f"(O(n): x{last / first:.1f}, O(n^2): x{(last / first) ** 2:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
