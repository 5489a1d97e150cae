#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Set and persist the MTU (and the ARP isolation sysctls) of all fabric interfaces in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_net_links
short_description: Fabric interface MTU and ARP isolation, all interfaces in one call
version_added: "0.1.0"
description:
  - Reads each interface's MTU from C(/sys/class/net/IF/mtu), sets the ones that differ with
    C(ip link set dev IF mtu N), and reports per interface what changed.
  - Never changes an interface that carries the Ansible connection (it holds the address
    Ansible connects to, sshd's C(SSH_CONNECTION) address, or a default route) unless
    I(allow_link_flap); the refusal names the interface and C(roce_net_allow_link_flap).
  - Every input and the node's state are read and checked first; a refused or missing
    interface fails the call before anything is changed or persisted.
  - Applies the per-interface ARP isolation sysctls and, where NetworkManager manages an
    interface, sets the MTU in its connection profile.
  - Persists them (I(udev_rule_file), I(sysctl_file), and a drop-in for each interface
    systemd-networkd manages), each file only when it differs, atomically.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The interfaces' MTU (C(IF mtu 1500) to C(9000)), the ARP sysctls, NetworkManager profiles, and the files.
  platform:
    platforms: posix
requirements:
  - Linux and iproute2's C(ip) on the node; C(nmcli) where NetworkManager manages an interface.
options:
  interfaces:
    description:
      - The fabric interfaces, each a netdev name (1 to 15 of C(A-Z a-z 0-9 _ . -)); any other
        fails the call before anything changes.
    type: list
    elements: str
    required: true
  mtu:
    description: The MTU they must have; below 4200 fails before anything is read or changed.
    type: int
    required: true
  allow_link_flap:
    description: Allow changing an interface that carries the Ansible connection.
    type: bool
    default: false
  connection_addresses:
    description: Addresses Ansible connects to this node by (names are resolved on the node).
    type: list
    elements: str
    default: []
  arp_isolation:
    description: C(auto), C(on) or C(off); see the role's README.
    type: str
    choices: [auto, "on", "off"]
    default: auto
  networkmanager:
    description: Also set the MTU in NetworkManager's connection profile of an interface it manages.
    type: bool
    default: true
  udev_rule_file:
    description: The udev rule that sets the MTU whenever an interface appears; empty persists nothing.
    type: path
    default: ""
  sysctl_file:
    description: The sysctl.d file for the ARP isolation sysctls; empty writes none.
    type: path
    default: ""
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Fabric ports at 9000, persisted; the management port is refused
  rocetune.fabric.roce_net_links:
    interfaces: [ens1f0np0, ens2f0np0]
    mtu: 9000
    connection_addresses: ["{{ ansible_host | default(inventory_hostname) }}"]
    udev_rule_file: /etc/udev/rules.d/81-rocetune-roce-net.rules
    sysctl_file: /etc/sysctl.d/81-rocetune-arp.conf
  register: links
"""

RETURN = r"""
interfaces:
  description: Per interface C(mtu_before), C(mtu), C(action) (none, set, refused), C(addresses), C(changed).
  type: dict
  returned: always
  sample: {"rtf0": {"interface": "rtf0", "mtu_before": 1500, "mtu": 9000, "action": "set", "reason": "",
           "changed": true, "addresses": ["198.19.0.11/24"], "networkmanager": null, "networkd_file": null}}
protected:
  description: Interfaces that carry the Ansible connection, with the reason.
  type: dict
  returned: always
  sample: {"rtl0": "it holds 198.18.0.11, the address the Ansible connection uses"}
arp_sysctls:
  description: The ARP isolation sysctls for the fabric interfaces (empty when not needed).
  type: dict
  returned: always
  sample: {"net.ipv4.conf.ens4.arp_ignore": "1"}
networkd_dropins:
  description: C(interface), C(path) and C(content) of the systemd-networkd drop-ins that keep the MTU.
  type: list
  elements: dict
  returned: always
  sample: []
written:
  description: The files written (or that would be, in check mode).
  type: list
  elements: str
  returned: always
  sample: [/etc/udev/rules.d/81-rocetune-roce-net.rules]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_links_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
