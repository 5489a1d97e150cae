"""The jumbo path check's peers as roce_net templates them (its vars/main.yml, the ring built once
per batch): each node pings the next roce_net_path_peers nodes whose fabric is up, every node is
pinged as often as it pings, a node whose roce_net failed is nobody's peer, and a node the
preflight found converged is a peer without running the role. Ten inventory hosts that never
connect: every task here runs on the controller."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

PLAY = """\
- name: The ring of peers, as the role builds it
  hosts: all
  gather_facts: false
  vars_files: [REPO/roles/roce_net/defaults/main.yml, REPO/roles/roce_net/vars/main.yml]
  vars:
    roce_net_interfaces: [rail0, rail1]
  tasks:
    - name: What roce_net_links returned on the nodes that ran it (gpu08 failed)
      ansible.builtin.set_fact:
        __roce_net_links: >-
          {{ {'changed': true, 'failed': inventory_hostname == 'gpu08',
              'interfaces': {'rail0': {'mtu': 9000, 'addresses': ['10.0.0.' ~ idx ~ '/24']},
                             'rail1': {'mtu': 9000, 'addresses': ['10.1.0.' ~ idx ~ '/24']}}} }}
      when: inventory_hostname != 'gpu09'
    - name: What the preflight found on gpu09 (converged, so the role does not run there)
      ansible.builtin.set_fact:
        rocetune_preflight:
          roles:
            roce_net: {failed: false, change: false, result: {interfaces: {rail0: {mtu: 9000, addresses: [10.0.0.9/24]}}}}
      when: inventory_hostname == 'gpu09'
    - name: The ring, once
      ansible.builtin.set_fact:
        __roce_net_ring: "{{ __roce_net_ring_all }}"
      run_once: true
    - name: Each node's peers
      ansible.builtin.set_fact:
        __peers: "{{ __roce_net_ring_peers }}"
        __results: "{{ __roce_net_ring_peers | map('extract', __roce_net_ring.results) | list }}"
    - name: Write them down
      ansible.builtin.copy:
        content: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, '__peers')))
                     | to_json }}"
        dest: OUT
        mode: "0644"
      run_once: true
      delegate_to: localhost
"""


def test_each_node_pings_the_next_three_of_a_ring_of_the_nodes_that_are_up(tmp_path):
    hosts = [f"gpu{i:02d}" for i in range(10)]
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("".join(f"{h} idx={i} ansible_connection=local\n" for i, h in enumerate(hosts)))
    out = tmp_path / "peers.json"
    play = tmp_path / "play.yml"
    play.write_text(PLAY.replace("REPO", str(REPO)).replace("OUT", str(out)))
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inventory), str(play)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    peers = json.loads(out.read_text())
    up = [h for h in hosts if h != "gpu08"]  # gpu08's roce_net failed; gpu09 is up from the preflight
    assert peers["gpu00"] == ["gpu01", "gpu02", "gpu03"]
    assert peers["gpu07"] == ["gpu09", "gpu00", "gpu01"]  # around the ring, past the failed node
    assert peers["gpu08"] == [] and peers["gpu09"] == ["gpu00", "gpu01", "gpu02"]
    assert all(len(peers[h]) == 3 for h in up)
    pinged = Counter(p for h in up for p in peers[h])
    assert set(pinged) == set(up) and set(pinged.values()) == {3}  # every node as often as it pings
