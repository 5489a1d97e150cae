#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Jumbo path check from this node to its fabric peers: one don't-fragment ping per pair."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_net_path
short_description: Don't-fragment pings of the full fabric MTU to every peer, reported per pair
version_added: "0.1.0"
description:
  - For each peer address in a subnet of one of this node's fabric interfaces, runs
    C(ping -M do -s MTU-28 -c 1 -W 1 -I IF ADDR) (in parallel; a pair that fails is tried once
    more) and reports every pair.
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
  check_mode:
    support: full
    details: It only pings.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - C(ping) from iputils on the node (C(-M do) for don't-fragment).
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

import json
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_fabric import (
    outside_peer,
    pair_message,
    path_pairs,
    ping_size,
    ping_verdict,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_ip_addr import parse_entries


def outside_peers(entries, interfaces):
    """(peers to ping, lines for those that could not be read) from I(outside)."""
    peers, unread = [], []
    for entry in entries:
        name = str(entry.get("item") or "?")
        if entry.get("unreachable") or entry.get("rc") != 0 or entry.get("skipped"):
            why = "unreachable" if entry.get("unreachable") else (
                entry.get("stderr") or entry.get("msg") or "no answer")
            unread.append("%s (outside this run): not checked: %s" % (name, " ".join(str(why).split())[:200]))
            continue
        try:
            links = parse_entries(json.loads(entry.get("stdout") or "[]"))
        except ValueError as exc:
            unread.append("%s (outside this run): not checked: unreadable ip -j addr show (%s)" % (name, exc))
            continue
        peers.append(outside_peer(name, interfaces.get(name) or [], links))
    return peers, unread


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            interfaces=dict(type="dict", required=True),
            peer_names=dict(type="list", elements="str", required=True),
            peer_results=dict(type="list", elements="dict", required=True),
            outside=dict(type="list", elements="dict", default=[]),
            outside_interfaces=dict(type="dict", default={}),
            later=dict(type="list", elements="str", default=[]),
            unchecked=dict(type="list", elements="str", default=[]),
            mtu=dict(type="int", required=True),
            on_failure=dict(type="str", choices=["fail", "warn"], default="fail"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    ping = module.get_bin_path("ping", required=True)
    mine = {name: info.get("addresses", []) for name, info in p["interfaces"].items()}
    peers = [{"name": name, "interfaces": (res or {}).get("interfaces") or {}}
             for name, res in zip(p["peer_names"], p["peer_results"])]
    more, unread = outside_peers(p["outside"], p["outside_interfaces"])
    pairs = path_pairs(mine, peers + more)
    size = str(ping_size(p["mtu"]))

    def probe(pair):
        if "skip" in pair:
            return pair
        # One echo; a pair that fails is tried once more, so one lost packet is not a finding.
        for dummy in range(2):
            rc, out, err = module.run_command([ping, "-n", "-M", "do", "-s", size, "-c", "1",
                                               "-W", "1", "-I", pair["interface"], pair["address"]])
            ok, reason = ping_verdict(rc, out + err)
            if ok or "route MTU" in reason:
                break
        return dict(pair, ok=ok, reason=reason)

    with ThreadPoolExecutor(max_workers=16) as pool:
        done = list(pool.map(probe, pairs))
    failed = [pair_message(p["host"], d, p["mtu"], d["reason"]) for d in done if d.get("ok") is False]
    # A peer that could not be checked is not a pass.
    failed += ["%s -> %s: not checked: %s" % (p["host"], d["peer"], d["skip"]) for d in done if "skip" in d]
    failed += ["%s -> %s" % (p["host"], line) for line in unread]
    result = dict(changed=False, pairs=done, failed_pairs=failed, later=p["later"], unchecked=p["unchecked"])
    if p["unchecked"]:
        module.warn("jumbo path from %s not checked against: %s" % (p["host"], "; ".join(p["unchecked"])))
    if not peers and not more and not unread:
        module.warn("jumbo path from %s not checked: no peer has its fabric up yet%s" % (
            p["host"], " (the %d host(s) of later batches check against this node when they run)" % len(p["later"])
            if p["later"] else ""))
    if failed:
        msg = "jumbo path check (%d-byte packets, don't fragment) failed for %d pair(s): %s" % (
            p["mtu"], len(failed), " | ".join(failed))
        if p["on_failure"] == "fail":
            module.fail_json(msg=msg, **result)
        module.warn(msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
