"""Parse the kernel's /proc/net tables: routes and addresses for hosts without `ip`.

* ``/proc/net/route`` (IPv4 main table): ``Iface Destination Gateway Flags ... Metric Mask ...``,
  addresses as the host-order hex of the network-order word (little-endian hosts: ``010200C0`` is
  192.0.2.1).
* ``/proc/net/ipv6_route`` (every table): ``dest plen src splen nexthop metric refcnt use flags
  iface``, all hex. A ``RTF_LOCAL`` /128 entry is one of the host's own addresses.
* ``/proc/net/fib_trie``: the IPv4 trie; a leaf's ``/32 host LOCAL`` line is a local address. It
  names no interface: the connected routes of /proc/net/route map it to one.
* ``/proc/net/if_inet6``: ``address ifindex plen scope flags name``, one IPv6 address a line.

Kernel files are well formed; a line that is not is skipped, never fatal.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Dict, List, Optional, Set, Tuple

RTF_GATEWAY = 0x2
RTF_REJECT = 0x200
RTF_LOCAL = 0x80000000

_FIB_LEAF = re.compile(r"^\s*\|--\s+(\d+\.\d+\.\d+\.\d+)\s*\Z")
_FIB_ENTRY = re.compile(r"^\s*/(\d+)\s+(\w+)\s+(\w+)")


def _v4(word: str) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bytes.fromhex(word)[::-1])


def _v6(word: str) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(bytes.fromhex(word))


def parse_route(text: str) -> List[dict]:
    """IPv4 routes: ``{"interface", "network": IPv4Network, "gateway": str|None, "metric": int}``;
    reject routes are left out."""
    out = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8:
            continue
        try:
            dest, gateway, flags = _v4(cols[1]), _v4(cols[2]), int(cols[3], 16)
            metric, mask = int(cols[6]), _v4(cols[7])
            network = ipaddress.IPv4Network(f"{dest}/{mask}", strict=False)
        except ValueError:
            continue
        if flags & RTF_REJECT:
            continue
        out.append({"interface": cols[0], "network": network,
                    "gateway": str(gateway) if flags & RTF_GATEWAY else None, "metric": metric})
    return out


def parse_ipv6_route(text: str) -> Tuple[List[dict], List[dict]]:
    """(routes, local addresses). Routes as parse_route's, IPv6; local addresses
    ``{"interface", "address": IPv6Address}`` from the RTF_LOCAL /128 entries."""
    routes, local = [], []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) != 10:
            continue
        try:
            dest, plen, nexthop = _v6(cols[0]), int(cols[1], 16), _v6(cols[4])
            metric, flags = int(cols[5], 16), int(cols[8], 16)
            network = ipaddress.IPv6Network(f"{dest}/{plen}", strict=False)
        except ValueError:
            continue
        if flags & RTF_REJECT:
            continue
        if flags & RTF_LOCAL:
            if plen == 128:
                local.append({"interface": cols[9], "address": dest})
            continue
        routes.append({"interface": cols[9], "network": network,
                       "gateway": str(nexthop) if flags & RTF_GATEWAY else None, "metric": metric})
    return routes, local


def parse_fib_trie(text: str) -> List[ipaddress.IPv4Address]:
    """The local IPv4 addresses (leaves with a ``/32 host LOCAL`` entry), sorted, once each."""
    found: Set[ipaddress.IPv4Address] = set()
    leaf: Optional[str] = None
    for line in text.splitlines():
        m = _FIB_LEAF.match(line)
        if m:
            leaf = m.group(1)
            continue
        m = _FIB_ENTRY.match(line)
        if m and leaf is not None and m.group(1) == "32" and m.group(3) == "LOCAL":
            try:
                found.add(ipaddress.IPv4Address(leaf))
            except ValueError:
                pass
        elif not m:
            leaf = None
    return sorted(found)


def parse_if_inet6(text: str) -> Dict[str, List[dict]]:
    """IPv6 addresses per interface, ``{"family": "inet6", "address", "prefixlen"}``."""
    out: Dict[str, List[dict]] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) != 6:
            continue
        try:
            address, plen = _v6(cols[0]), int(cols[2], 16)
        except ValueError:
            continue
        if not 0 <= plen <= 128:
            continue
        entry = {"family": "inet6", "address": str(address), "prefixlen": plen}
        if entry not in out.setdefault(cols[5], []):
            out[cols[5]].append(entry)
    return out
