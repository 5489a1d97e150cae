# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The roce_net_links module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight).

Every input and the node's state are read and checked first (names, MTU, the interfaces, the
link-flap guard, the persistence files' targets); a refused or missing interface fails the call
before anything is changed or persisted. In diff mode the diff shows the interfaces' MTU and
the ARP sysctls as they are and as they become, beside the files."""

from __future__ import absolute_import, division, print_function

import os

__metaclass__ = type

try:
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
except ImportError:  # unit tests import the files as plain modules
    from roce_net_fabric import arp_sysctl_file, arp_sysctls, networkd_dropin, networkd_file, plan_links, udev_rule  # pylint: disable=import-error
    from rocetune_files import FileTargetError, apply_changes, plan_files, read_text  # pylint: disable=import-error
    from rocetune_links import interface_name_problems, read_connection_interfaces  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    interfaces=dict(type="list", elements="str", required=True),
    mtu=dict(type="int", required=True),
    allow_link_flap=dict(type="bool", default=False),
    connection_addresses=dict(type="list", elements="str", default=[]),
    arp_isolation=dict(type="str", choices=["auto", "on", "off"], default="auto"),
    networkmanager=dict(type="bool", default=True),
    udev_rule_file=dict(type="path", default=""),
    sysctl_file=dict(type="path", default=""),
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


def _input_problems(p):
    problems = interface_name_problems(p["interfaces"], "roce_net_interfaces")
    if p["mtu"] < MIN_ROCE_MTU:
        problems.append("roce_net_mtu=%d is too small: RoCE runs at most a 4096-byte path MTU and needs a "
                        "netdev MTU of at least %d for it (at 1500 it runs 1024-byte packets)"
                        % (p["mtu"], MIN_ROCE_MTU))
    return problems


def _current_mtus(interfaces):
    current = {}
    for ifname in interfaces:
        mtu = read(os.path.join(SYS_NET, ifname, "mtu"))
        if mtu is not None:
            current[ifname] = int(mtu)
    return current


def run(module):
    p = module.params
    problems = _input_problems(p)
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was changed")
    ip = module.get_bin_path("ip", required=True)
    protected, error, addrs = read_connection_interfaces(module, p["connection_addresses"])
    if error:
        module.fail_json(msg=error)

    current = _current_mtus(p["interfaces"])
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
                nm_changes.append((nm_con, nm_mtu))
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

    changes, diffs = [], []
    result["written"] = []
    if p["udev_rule_file"]:
        files = [{"path": p["udev_rule_file"], "content": udev_rule(p["interfaces"], p["mtu"]), "mode": "0644"}]
        files += [{"path": d["path"], "content": d["content"], "mode": "0644"} for d in result["networkd_dropins"]]
        if p["sysctl_file"]:
            files.append({"path": p["sysctl_file"], "content": arp_sysctl_file(sysctls), "mode": "0644"})
        try:
            changes, diffs = plan_files(files, [])
        except FileTargetError as exc:
            module.fail_json(msg=str(exc))
        result["written"] = [c[1]["path"] for c in changes]
        result["changed"] |= bool(changes)

    if getattr(module, "_diff", False):
        result["diff"] = diffs + node_diff(plan, nm_changes, sysctl_writes, p["mtu"], read)
    if module.check_mode:
        for entry in result["interfaces"].values():
            if entry["action"] == "set":
                entry["mtu"] = entry["mtu_before"]  # what the interface has, for the path check
        module.exit_json(**result)
    apply_links(module, ip, p["mtu"], plan, nm_changes, sysctl_writes, result)
    if changes:
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            # The live change stays (undoing an MTU flaps the link once more): said as made.
            live = ["%s MTU %s" % (name, e["mtu"]) for name, e in sorted(result["interfaces"].items()) if e["changed"]]
            live += ["%s = %s" % (key, value) for key, dummy, value in sysctl_writes]
            result.update(written=[], failed=True)
            module.fail_json(msg="cannot write %s: %s; %s" % (
                ", ".join(c[1]["path"] for c in changes), getattr(exc, "strerror", None) or exc,
                ("made live, not persisted: %s" % "; ".join(live)) if live else "nothing was changed"), **result)
    module.exit_json(**result)


def apply_links(module, ip, mtu, plan, nm_changes, sysctl_writes, result):
    for entry in plan:
        if entry["action"] == "set":
            rc, dummy, err = module.run_command([ip, "link", "set", "dev", entry["interface"], "mtu", str(mtu)])
            if rc != 0:
                module.fail_json(msg="ip link set dev %s mtu %d: %s" % (entry["interface"], mtu, err.strip()),
                                 **result)
    for con, dummy in nm_changes:
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


def node_diff(plan, nm_changes, sysctl_writes, mtu, reader):
    """What changes on the node itself, as a diff: `IF mtu: 1500` -> `IF mtu: 9000`, the ARP
    sysctls, NetworkManager profiles."""
    before, after = [], []
    for entry in plan:
        if entry["action"] == "set":
            before.append("%s mtu: %s\n" % (entry["interface"], entry["mtu_before"]))
            after.append("%s mtu: %s\n" % (entry["interface"], mtu))
    for key, path, value in sysctl_writes:
        before.append("%s = %s\n" % (key, reader(path)))
        after.append("%s = %s\n" % (key, value))
    for con, have in nm_changes:
        before.append("NetworkManager %s: 802-3-ethernet.mtu %s\n" % (con, have or "(auto)"))
        after.append("NetworkManager %s: 802-3-ethernet.mtu %s\n" % (con, mtu))
    if not before:
        return []
    return [{"before_header": "fabric interfaces (node)", "after_header": "fabric interfaces (node, wanted)",
             "before": "".join(before), "after": "".join(after)}]
