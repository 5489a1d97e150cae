# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The one reader of `ip -j addr show` (iproute2's JSON): the node agent's probe
(rocetune.probe.parsers.ip_addr) and, through its copy plugins/module_utils/rocetune_ip_addr.py,
and the collection's modules (rocetune_links: which interface carries the Ansible connection;
roce_net_path: the fabric addresses of peers outside the run) read it with this code.

It takes the output already loaded from JSON (each caller keeps its own JSON reader: the agent's
is bounded) and returns {ifname: {"mtu": int or None, "addresses": [{"family", "address",
"prefixlen", "scope"}]}} in iproute2's order. Every interface is a key, with [] when it has no
IPv4/IPv6 address; other families are left out. The `{}` entries some iproute2 versions print for
filtered links are skipped silently; entries that are not well formed are skipped, each named
through `warn(message)`. Standard library only; Python 3.8 and newer.
"""

from __future__ import absolute_import, division, print_function

import ipaddress

__metaclass__ = type

MAX_PREFIX = {"inet": 32, "inet6": 128}


def snippet(text, limit=60):
    """A short, printable rendering of a value for warnings."""
    text = text.strip()
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return repr(text)


def parse_entries(data, warn=None):
    """`ip -j addr show`, loaded, as {ifname: {"mtu", "addresses"}}; ValueError when it is not a
    list of interfaces."""
    warn = warn or (lambda message: None)
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of interfaces, got %s" % type(data).__name__)
    out = {}
    for entry in data:
        if not isinstance(entry, dict):
            warn("skipped a non-object entry (%s)" % type(entry).__name__)
            continue
        if not entry:
            continue
        name = entry.get("ifname")
        if not isinstance(name, str) or not name:
            warn("skipped an entry without ifname")
            continue
        mtu = entry.get("mtu")
        link = out.setdefault(name, {"mtu": None, "addresses": []})
        if isinstance(mtu, int) and not isinstance(mtu, bool):
            link["mtu"] = mtu
        infos = entry.get("addr_info", [])
        if not isinstance(infos, list):
            warn("%s: addr_info is not a list" % name)
            continue
        for info in infos:
            address = _address(name, info, warn)
            if address is not None and not any(_same(address, a) for a in link["addresses"]):
                link["addresses"].append(address)
    return out


def _address(name, info, warn):
    if not isinstance(info, dict) or not info:
        return None
    family = info.get("family")
    if family not in MAX_PREFIX:
        return None  # e.g. link-layer or MPLS entries
    local, prefixlen = info.get("local"), info.get("prefixlen")
    if not isinstance(local, str) or isinstance(prefixlen, bool) or not isinstance(prefixlen, int):
        warn("%s: skipped a malformed %s entry" % (name, family))
        return None
    try:
        parsed = ipaddress.ip_address(local.split("%", 1)[0])
    except ValueError:
        warn("%s: skipped %s address %s" % (name, family, snippet(local, 40)))
        return None
    if (parsed.version == 4) != (family == "inet") or not 0 <= prefixlen <= MAX_PREFIX[family]:
        warn("%s: skipped %s %s/%s" % (name, family, local, prefixlen))
        return None
    scope = info.get("scope")
    return {"family": family, "address": str(parsed), "prefixlen": prefixlen,
            "scope": scope if isinstance(scope, str) else None}


def _same(a, b):
    return (a["family"], a["address"], a["prefixlen"]) == (b["family"], b["address"], b["prefixlen"])


def interface_cidrs(link):
    """An interface's IPv4 and non-link-scope IPv6 addresses as "address/prefixlen"."""
    return ["%s/%s" % (a["address"], a["prefixlen"]) for a in link["addresses"] if a["scope"] != "link"]
