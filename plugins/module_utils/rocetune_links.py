# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Which interfaces carry the Ansible connection: the ones roce_net and roce_qos never change
without an explicit opt-in. Pure functions over `ip -j addr` (read by rocetune_ip_addr, the
reader the agent shares) and `ip -j route` output, plus the resolution of the names Ansible
connects by.

No Ansible imports: unit-tested on recorded outputs."""

from __future__ import absolute_import, division, print_function

import ipaddress
import json
import os
import re
import socket

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_ip_addr import interface_cidrs, parse_entries
except ImportError:  # unit tests import the files as plain modules
    from rocetune_ip_addr import interface_cidrs, parse_entries  # pylint: disable=import-error


# A netdev name the kernel accepts (dev_valid_name() in net/core/dev.c: at most IFNAMSIZ-1 = 15
# bytes, not "." or "..", no "/", ":" or whitespace), narrowed to the characters real names use:
# it is also a path under /sys/class/net, a udev rule's NAME=="..." and a unit name.
_IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}\Z")


def interface_name_problems(names, var):
    """One message per entry of `names` (the inventory variable `var`) that is no interface
    name, naming it; [] when all are."""
    problems = []
    for name in names:
        if not isinstance(name, str) or not _IFNAME_RE.match(name) or name in (".", ".."):
            problems.append("%s: %r is not an interface name (1 to 15 of A-Z a-z 0-9 _ . -)" % (var, name))
    return problems


def parse_ip_addr(text):
    """`ip -j addr show` -> {ifname: ["198.19.0.11/24", ...]} (IPv4 and non-link-scope IPv6),
    read by the one reader the agent shares (rocetune_ip_addr); ValueError when it is not JSON
    or not a list of interfaces."""
    links = parse_entries(json.loads(text or "[]"))
    return dict((name, interface_cidrs(link)) for name, link in links.items())


def parse_default_route_devs(text):
    """`ip -j route show default` -> the devices default routes leave through."""
    return sorted({r["dev"] for r in json.loads(text or "[]") if r.get("dev")})


def connection_interfaces(addrs, connect_addresses, default_devs):
    """{ifname: reason} for every interface that may carry the Ansible connection: one that
    holds an address Ansible connects to (or sshd reports in SSH_CONNECTION), or that a
    default route leaves through (what Ansible's default_ipv4 fact names)."""
    wanted = set()
    for a in connect_addresses:
        try:
            wanted.add(ipaddress.ip_address(str(a)))
        except ValueError:
            continue
    out = {}
    for ifname in sorted(addrs):
        for cidr in addrs[ifname]:
            ip = ipaddress.ip_interface(cidr).ip
            if ip in wanted:
                out[ifname] = "it holds %s, the address the Ansible connection uses" % ip
                break
    for dev in default_devs:
        out.setdefault(dev, "the default route leaves through it")
    return out


def connect_addresses(given, environ=None):
    """The addresses Ansible connects by: the given names resolved on the node, plus the local
    address of sshd's SSH_CONNECTION."""
    out = set()
    for name in given:
        try:
            for info in socket.getaddrinfo(name, None):
                out.add(info[4][0])
        except (socket.gaierror, UnicodeError):
            out.add(name)
    ssh = (environ if environ is not None else os.environ).get("SSH_CONNECTION", "").split()
    if len(ssh) == 4:
        out.add(ssh[2])
    return sorted(out)


def read_connection_interfaces(module, given):
    """{ifname: reason} on this node, read with `ip -j`; (None, error) when ip fails."""
    ip = module.get_bin_path("ip", required=True)
    rc, out, err = module.run_command([ip, "-j", "addr", "show"])
    if rc != 0:
        return None, "ip -j addr show: %s" % err.strip(), {}
    try:
        addrs = parse_ip_addr(out)
    except ValueError as exc:
        return None, "ip -j addr show: unreadable output (%s)" % exc, {}
    rc, out, dummy = module.run_command([ip, "-j", "route", "show", "default"])
    default_devs = parse_default_route_devs(out) if rc == 0 else []
    return connection_interfaces(addrs, connect_addresses(given), default_devs), None, addrs
