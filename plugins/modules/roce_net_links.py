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
  - Supports check mode and diff.
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
protected:
  description: Interfaces that carry the Ansible connection, with the reason.
  type: dict
  returned: always
arp_sysctls:
  description: The ARP isolation sysctls for the fabric interfaces (empty when not needed).
  type: dict
  returned: always
networkd_dropins:
  description: C(interface), C(path) and C(content) of the systemd-networkd drop-ins that keep the MTU.
  type: list
  returned: always
written:
  description: The files written (or that would be, in check mode).
  type: list
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_fabric import (
    arp_sysctl_file,
    arp_sysctls,
    networkd_dropin,
    networkd_file,
    plan_links,
    udev_rule,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
    read_text,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_links import (
    interface_name_problems,
    read_connection_interfaces,
)

SYS_NET = "/sys/class/net"
MIN_ROCE_MTU = 4200  # RoCE's largest path MTU (4096) plus its headers
PROC_CONF = "/proc/sys/net/ipv4/conf"


def read(path):
    text = read_text(path)
    return None if text is None else text.strip()


def nm_profile(module, ifname):
    """(connection name, its configured MTU) when NetworkManager runs and manages ifname."""
    nmcli = module.get_bin_path("nmcli")
    if not nmcli:
        return None, None
    rc, out, dummy = module.run_command([nmcli, "-t", "-g", "RUNNING", "general"])
    if rc != 0 or out.strip() != "running":
        return None, None
    rc, out, dummy = module.run_command([nmcli, "-g", "GENERAL.CONNECTION", "device", "show", ifname])
    con = out.strip() if rc == 0 else ""
    if not con:
        return None, None
    rc, out, dummy = module.run_command([nmcli, "-g", "802-3-ethernet.mtu", "connection", "show", con])
    return con, out.strip() if rc == 0 else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", required=True),
            mtu=dict(type="int", required=True),
            allow_link_flap=dict(type="bool", default=False),
            connection_addresses=dict(type="list", elements="str", default=[]),
            arp_isolation=dict(type="str", choices=["auto", "on", "off"], default="auto"),
            networkmanager=dict(type="bool", default=True),
            udev_rule_file=dict(type="path", default=""),
            sysctl_file=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = interface_name_problems(p["interfaces"], "roce_net_interfaces")
    if p["mtu"] < MIN_ROCE_MTU:
        problems.append("roce_net_mtu=%d is too small: RoCE runs at most a 4096-byte path MTU and needs a "
                        "netdev MTU of at least %d for it (at 1500 it runs 1024-byte packets)"
                        % (p["mtu"], MIN_ROCE_MTU))
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was changed")
    ip = module.get_bin_path("ip", required=True)
    protected, error, addrs = read_connection_interfaces(module, p["connection_addresses"])
    if error:
        module.fail_json(msg=error)

    current = {}
    for ifname in p["interfaces"]:
        mtu = read(os.path.join(SYS_NET, ifname, "mtu"))
        if mtu is not None:
            current[ifname] = int(mtu)
    plan = plan_links(p["interfaces"], p["mtu"], current, protected, p["allow_link_flap"])
    # Every refusal and every missing interface fails here, before anything is changed or
    # persisted: a refused interface must not reach the udev rule or a networkd drop-in either.
    problems = [e["reason"] for e in plan if e["action"] in ("missing", "refused")]
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was changed", protected=protected, changed=False)

    result = {"changed": False, "interfaces": {}, "protected": protected, "networkd_dropins": []}
    nm_changes = []
    for entry in plan:
        ifname = entry["interface"]
        changed = entry["action"] == "set"
        nm_con = None
        if p["networkmanager"]:
            nm_con, nm_mtu = nm_profile(module, ifname)
            if nm_con and nm_mtu != str(p["mtu"]):
                changed = True
                nm_changes.append(nm_con)
        index = read(os.path.join(SYS_NET, ifname, "ifindex"))
        net_file = networkd_file(read("/run/systemd/netif/links/%s" % index)) if index else None
        if net_file:
            path, content = networkd_dropin(net_file, p["mtu"])
            result["networkd_dropins"].append({"interface": ifname, "path": path, "content": content})
        result["changed"] |= changed
        result["interfaces"][ifname] = dict(entry, changed=changed, addresses=addrs.get(ifname, []),
                                            networkmanager=nm_con, networkd_file=net_file)

    sysctls = arp_sysctls(p["interfaces"], addrs, p["arp_isolation"])
    result["arp_sysctls"] = sysctls
    sysctl_writes = []
    for key, value in sorted(sysctls.items()):
        parts = key.split(".")
        path = os.path.join(PROC_CONF, parts[3].replace("/", "."), parts[4])
        if read(path) != value:
            sysctl_writes.append((key, path, value))
    result["changed"] |= bool(sysctl_writes)

    changes = []
    result["written"], result["diff"] = [], []
    if p["udev_rule_file"]:
        files = [{"path": p["udev_rule_file"], "content": udev_rule(p["interfaces"], p["mtu"]), "mode": "0644"}]
        files += [{"path": d["path"], "content": d["content"], "mode": "0644"} for d in result["networkd_dropins"]]
        if p["sysctl_file"]:
            files.append({"path": p["sysctl_file"], "content": arp_sysctl_file(sysctls), "mode": "0644"})
        try:
            changes, result["diff"] = plan_files(files, [])
        except FileTargetError as exc:
            module.fail_json(msg=str(exc))
        result["written"] = [c[1]["path"] for c in changes]
        result["changed"] |= bool(changes)

    if module.check_mode:
        for entry in result["interfaces"].values():
            if entry["action"] == "set":
                entry["mtu"] = entry["mtu_before"]  # what the interface has, for the path check
        module.exit_json(**result)
    apply_links(module, ip, p["mtu"], plan, nm_changes, sysctl_writes, result)
    if changes:
        apply_changes(changes)
    module.exit_json(**result)


def apply_links(module, ip, mtu, plan, nm_changes, sysctl_writes, result):
    for entry in plan:
        if entry["action"] == "set":
            rc, dummy, err = module.run_command([ip, "link", "set", "dev", entry["interface"], "mtu", str(mtu)])
            if rc != 0:
                module.fail_json(msg="ip link set dev %s mtu %d: %s" % (entry["interface"], mtu, err.strip()),
                                 **result)
    for con in nm_changes:
        nmcli = module.get_bin_path("nmcli")
        rc, dummy, err = module.run_command([nmcli, "connection", "modify", con, "802-3-ethernet.mtu", str(mtu)])
        if rc != 0:
            module.fail_json(msg="nmcli connection modify %s: %s" % (con, err.strip()), **result)
    for key, path, value in sysctl_writes:
        try:
            with open(path, "w") as fh:
                fh.write(value + "\n")
        except OSError as exc:
            module.fail_json(msg="%s = %s: %s" % (key, value, exc), **result)


if __name__ == "__main__":
    main()
