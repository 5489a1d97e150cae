#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Jumbo path check from this node to its fabric peers: one don't-fragment ping per pair.
Documentation only: the action plugin of the same name does the work (no module runs on the node)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_net_path
short_description: Don't-fragment pings of the full fabric MTU to every peer, reported per pair
version_added: "0.1.0"
description:
  - For each peer address in a subnet of one of this node's fabric interfaces, runs
    C(ping -M do -s MTU-28 -c 1 -W 1 -I IF ADDR) (in parallel, 16 at a time; a pair that fails is
    tried once more) and reports every pair.
  - The pairs are worked out on the controller (the action plugin); the node runs only the pings,
    in one shell command, with no Python.
  - On a routed fabric (a /31 per port), a peer interface with the name of one of this node's
    (the same rail) is pinged from it through the routes.
  - Peers come from the play (I(peer_names), I(peer_results); the role gives the next few nodes in a
    ring of those whose fabric is up in this run) and from outside the run (I(outside), the hosts a C(--limit) left out, read
    with C(ip -j addr show)); peers of later batches (I(later)) check against this node when they run.
  - A peer that can be reached neither way, or could not be read, is reported as not checked,
    which fails like a failed pair (or warns, with I(on_failure)). A node with no peer to check
    against says so in a warning; the check is never skipped silently.
  - A failed pair names the peer and, when the peer reported a smaller MTU, says so.
  - Read-only; runs in check mode too.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Everything but the pings runs on the controller.
  check_mode:
    support: full
    details: It only pings.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - C(ping) from iputils on the node (C(-M do) for don't-fragment), C(mktemp) and C(od) (coreutils), a POSIX C(/bin/sh).
options:
  host:
    description: This node's name (for the messages).
    type: str
    required: true
  interfaces:
    description: This node's fabric interfaces, name to C(addresses) (CIDRs).
    type: dict
    required: true
  peer_names:
    description: The peers' names.
    type: list
    elements: str
    required: true
  peer_results:
    description:
      - The peers' C(roce_net_links) results, in the order of I(peer_names); C(interfaces)
        maps each fabric interface to its C(mtu) and C(addresses).
    type: list
    elements: dict
    required: true
  outside:
    description:
      - C(ip -j addr show) run on each peer outside this run, as the results of a looped, delegated
        C(ansible.builtin.command) task (C(item) the peer, C(rc), C(stdout), C(stderr), C(msg),
        C(unreachable)).
    type: list
    elements: dict
    default: []
  outside_interfaces:
    description: Each outside peer's fabric interfaces, peer name to interface names.
    type: dict
    default: {}
  later:
    description: Peers of later batches (they check against this node when they run).
    type: list
    elements: str
    default: []
  unchecked:
    description: Peers left out of the check, each a line saying why (named in the result and a warning).
    type: list
    elements: str
    default: []
  mtu:
    description: The fabric MTU the path must carry.
    type: int
    required: true
  on_failure:
    description: C(fail) the host or C(warn) when a pair fails.
    type: str
    choices: [fail, warn]
    default: fail
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Jumbo pings to every peer in the play, reported per pair
  rocetune.fabric.roce_net_path:
    host: "{{ inventory_hostname }}"
    interfaces: "{{ links['interfaces'] }}"
    peer_names: "{{ ansible_play_hosts | difference([inventory_hostname]) }}"
    peer_results: "{{ ansible_play_hosts | difference([inventory_hostname]) | map('extract', hostvars, 'links') | list }}"
    mtu: 9000
"""

RETURN = r"""
pairs:
  description: One entry per peer address, with C(ok) and C(reason), or C(skip).
  type: list
  elements: dict
  returned: always
  sample: [{"peer": node02, "peer_interface": rtf0, "peer_mtu": 9000, "address": 198.19.0.12, "interface": rtf0,
            "routed": false, "ok": true, "reason": ""}]
failed_pairs:
  description: One line per failed pair, and one per peer that could not be checked.
  type: list
  elements: str
  returned: always
  sample: ["node01 rtf0 -> node04 rtf0 (198.19.0.14): no reply to a don't-fragment jumbo ping; node04 rtf0 is at MTU 1500, not 9000"]
later:
  description: Peers of later batches, which check against this node when they run.
  type: list
  elements: str
  returned: always
  sample: [node05, node06]
"""
