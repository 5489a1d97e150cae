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
description:
  - For each peer address in a subnet of one of this node's fabric interfaces, runs
    C(ping -M do -s MTU-28 -c 2 -W 1 -I IF ADDR) (in parallel) and reports every pair.
  - On a routed fabric (a /31 per port), a peer interface with the name of one of this node's
    (the same rail) is pinged from it through the routes.
  - A peer that can be reached neither way is reported as not checked, which fails like a
    failed pair (or warns, with I(on_failure)).
  - A failed pair names the peer and, when the peer reported a smaller MTU, says so.
  - Read-only; runs in check mode too.
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
    peer_results: >-
      {{ ansible_play_hosts | difference([inventory_hostname])
      | map('extract', hostvars, 'links') | list }}
    mtu: 9000
"""

RETURN = r"""
pairs:
  description: One entry per peer address, with C(ok) and C(reason), or C(skip).
  type: list
  returned: always
failed_pairs:
  description: One line per failed pair, and one per peer that could not be checked.
  type: list
  returned: always
"""

from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_fabric import (
    pair_message,
    path_pairs,
    ping_size,
    ping_verdict,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            interfaces=dict(type="dict", required=True),
            peer_names=dict(type="list", elements="str", required=True),
            peer_results=dict(type="list", elements="dict", required=True),
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
    pairs = path_pairs(mine, peers)
    size = str(ping_size(p["mtu"]))

    def probe(pair):
        if "skip" in pair:
            return pair
        rc, out, err = module.run_command([ping, "-n", "-M", "do", "-s", size, "-c", "2", "-i", "0.2",
                                           "-W", "1", "-I", pair["interface"], pair["address"]])
        ok, reason = ping_verdict(rc, out + err)
        return dict(pair, ok=ok, reason=reason)

    with ThreadPoolExecutor(max_workers=16) as pool:
        done = list(pool.map(probe, pairs))
    failed = [pair_message(p["host"], d, p["mtu"], d["reason"]) for d in done if d.get("ok") is False]
    # A peer that could not be checked is not a pass.
    failed += ["%s -> %s: not checked: %s" % (p["host"], d["peer"], d["skip"]) for d in done if "skip" in d]
    result = dict(changed=False, pairs=done, failed_pairs=failed)
    if failed:
        msg = "jumbo path check (%d-byte packets, don't fragment) failed for %d pair(s): %s" % (
            p["mtu"], len(failed), " | ".join(failed))
        if p["on_failure"] == "fail":
            module.fail_json(msg=msg, **result)
        module.warn(msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
