"""Net source: interfaces from /sys/class/net, addresses, connected networks and default routes."""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional, Tuple

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ..parsers.ip_addr import parse_ip_addr
from ..parsers.proc_net import parse_fib_trie, parse_if_inet6, parse_ipv6_route, parse_route
from ..source import Source
from .pci import BDF_RE

NET = "/sys/class/net"
IP_ADDR_ARGV = ["ip", "-j", "addr", "show"]
FIB_TRIE = "/proc/net/fib_trie"
IF_INET6 = "/proc/net/if_inet6"
ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772


def _number(text: Optional[str]) -> Optional[int]:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


# Each interface's attributes, read in one batch; speed and carrier fail with EINVAL on a down
# link, which means unknown (no warning).
_QUIET = ("speed", "carrier")
_ATTRS = ("type", "operstate", "mtu", *_QUIET)


def _kind(ctx: ProbeContext, name: str, real: str, dev_type: Optional[int], pci: Optional[str],
          bonding: bool) -> str:
    base = f"{NET}/{name}"
    if name == "lo" or dev_type == ARPHRD_LOOPBACK:
        return "loopback"
    if bonding:
        return "bond"
    if ctx.root.exists(f"{base}/bridge"):
        return "bridge"
    uevent = ctx.attr(f"{base}/uevent") or ""
    if "DEVTYPE=vlan" in uevent:
        return "vlan"
    if dev_type == ARPHRD_INFINIBAND:
        return "infiniband"
    if pci or "/devices/virtual/" not in real:
        return "physical" if pci else "virtual"
    return "virtual"


def read_routes(ctx: ProbeContext) -> Tuple[List[dict], List[dict], List[dict]]:
    """(IPv4 routes, IPv6 routes, IPv6 local addresses) from /proc/net/route and ipv6_route."""
    v4 = parse_route(ctx.text("/proc/net/route") or "")
    v6, local6 = parse_ipv6_route(ctx.text("/proc/net/ipv6_route") or "")
    return v4, v6, local6


def default_routes(v4: List[dict], v6: List[dict]) -> List[dict]:
    """Every default route: ``{"interface", "family", "metric"}``, IPv4 first, lowest metric first."""
    out = []
    for family, routes in (("inet", v4), ("inet6", v6)):
        for r in routes:
            if r["network"].prefixlen == 0 and r["interface"] != "lo":
                entry = {"interface": r["interface"], "family": family, "metric": r["metric"]}
                if entry not in out:
                    out.append(entry)
    return sorted(out, key=lambda r: (r["family"], r["metric"], r["interface"]))


def route_table(v4: List[dict]) -> List[dict]:
    """net.routes: the main table's IPv4 routes (policy-routing tables are not in /proc/net/route)."""
    out = [{"interface": r["interface"], "dest": str(r["network"].network_address),
            "prefixlen": r["network"].prefixlen, "gateway": r["gateway"]} for r in v4]
    return sorted(out, key=lambda r: (r["interface"], ipaddress.IPv4Address(r["dest"]), r["prefixlen"],
                                      r["gateway"] or ""))


def ipv4_routes(ctx: ProbeContext) -> Optional[List[dict]]:
    """net.routes of the root; None when /proc/net/route is missing."""
    text = ctx.text("/proc/net/route")
    return None if text is None else route_table(parse_route(text))


def connected_networks(v4: List[dict], v6: List[dict]) -> Dict[str, List[str]]:
    """Networks reached without a gateway, per interface: the kernel puts one there for each
    address, so an interface with one has an address in it even where the address is unknown."""
    out: Dict[str, List[str]] = {}
    for r in v4 + v6:
        net = r["network"]
        if (r["gateway"] or net.prefixlen == 0 or r["interface"] == "lo" or net.is_link_local
                or net.is_multicast or net.is_loopback):
            continue
        nets = out.setdefault(r["interface"], [])
        if str(net) not in nets:
            nets.append(str(net))
    return {k: sorted(v, key=lambda n: (":" in n, n)) for k, v in out.items()}


def _owner(address: Any, routes: List[dict], interface: Optional[str] = None) -> Tuple[List[str], Optional[int]]:
    """The interfaces whose connected route holds the address most specifically, and its prefix."""
    best, names = -1, []  # type: int, List[str]
    for r in routes:
        net = r["network"]
        if r["gateway"] or net.prefixlen == 0 or address not in net:
            continue
        if interface is not None and r["interface"] != interface:
            continue
        if net.prefixlen > best:
            best, names = net.prefixlen, [r["interface"]]
        elif net.prefixlen == best and r["interface"] not in names:
            names.append(r["interface"])
    return sorted(names), (best if best >= 0 else None)


def _fib_addresses(ctx: ProbeContext, text: str, v4: List[dict]) -> Dict[str, List[dict]]:
    """IPv4 addresses from fib_trie, placed on interfaces by the connected routes."""
    out: Dict[str, List[dict]] = {}
    for ip in parse_fib_trie(text):
        plen: Optional[int]
        if ip.is_loopback:
            names, plen = ["lo"], 8
        else:
            names, plen = _owner(ip, v4)
        if len(names) != 1:
            ctx.warn(f"IPv4 address {ip}: " + ("no connected route names its interface" if not names else
                     "connected routes on " + ", ".join(names) + " hold it; its interface is unknown"))
            continue
        out.setdefault(names[0], []).append({"family": "inet", "address": str(ip), "prefixlen": plen})
    return out


def _local6_addresses(local6: List[dict], v6: List[dict]) -> Dict[str, List[dict]]:
    """IPv6 addresses from ipv6_route's local entries, the prefix from the connected route."""
    out: Dict[str, List[dict]] = {}
    for entry in local6:
        ip, name = entry["address"], entry["interface"]
        if name == "lo" and not ip.is_loopback:
            continue  # older kernels list every local route on lo: the interface is unknown
        plen = 128 if ip.is_loopback else _owner(ip, v6, name)[1]
        item = {"family": "inet6", "address": str(ip), "prefixlen": plen}
        if item not in out.setdefault(name, []):
            out[name].append(item)
    return out


def addresses(ctx: ProbeContext, v4: List[dict], v6: List[dict],
              local6: List[dict]) -> Tuple[Dict[str, List[dict]], bool, Optional[str]]:
    """(addresses per interface, whether the IPv4 list is complete, where they came from).

    `ip -j addr show` (live or recorded) first; without it /proc/net: fib_trie for IPv4,
    if_inet6 (or ipv6_route's local entries) for IPv6."""
    result = ctx.runner.run(IP_ADDR_ARGV)
    if result.found and result.ok:
        try:
            return parse_ip_addr(result.stdout), True, "ip -j addr show"
        except ParseError as exc:
            ctx.warn(exc.message)
    elif result.found:
        ctx.warn(f"'ip -j addr show' exited {result.returncode}; addresses read from /proc/net")
    out: Dict[str, List[dict]] = {}
    fib = ctx.text(FIB_TRIE)
    if fib is not None:
        out.update(_fib_addresses(ctx, fib, v4))
    inet6 = ctx.text(IF_INET6)
    six = parse_if_inet6(inet6) if inet6 is not None else _local6_addresses(local6, v6)
    for name, addrs in six.items():
        out.setdefault(name, []).extend(addrs)
    if fib is None:
        ctx.warn("IPv4 addresses unknown: no 'ip -j addr show' output and no " + FIB_TRIE +
                 "; connected routes in /proc/net/route show the networks")
    source = "/proc/net" if fib is not None or inet6 is not None or local6 else None
    return out, fib is not None, source


def probe(ctx: ProbeContext) -> dict:
    names = ctx.root.listdir(NET)
    if not names:
        ctx.status.ok = False
        ctx.status.reason = f"no interfaces under {NET}"
        return {"interfaces": [], "default_route_interfaces": [], "default_routes": []}
    v4, v6, local6 = read_routes(ctx)
    routes = default_routes(v4, v6)
    defaults = sorted({r["interface"] for r in routes})
    connected = connected_networks(v4, v6)
    addrs, known, source = addresses(ctx, v4, v6, local6)
    interfaces = []
    for name in names:
        base = f"{NET}/{name}"
        real = ctx.root.realpath(base)
        dev_real = ctx.root.realpath(f"{base}/device") if ctx.root.exists(f"{base}/device") else ""
        pci = dev_real.rsplit("/", 1)[-1] if dev_real else None
        pci = pci if pci and BDF_RE.match(pci) else None
        a = ctx.attrs(base, _ATTRS, quiet=_QUIET)
        dev_type = ctx.int_of(f"{base}/type", a["type"])
        speed, carrier = _number(a["speed"]), _number(a["carrier"])
        # bonding/ is looked for once, and bonding/slaves read only where bonding/ can be
        loopback = name == "lo" or dev_type == ARPHRD_LOOPBACK
        bonding = not loopback and ctx.root.exists(f"{base}/bonding")
        slaves = (ctx.attr(f"{base}/bonding/slaves") or "").split() if bonding or loopback else []
        interfaces.append({
            "name": name,
            "kind": _kind(ctx, name, real, dev_type, pci, bonding),
            "operstate": a["operstate"],
            "carrier": None if carrier is None else bool(carrier),
            "mtu": ctx.int_of(f"{base}/mtu", a["mtu"]),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "driver": ctx.root.link_name(f"{base}/device/driver") if pci else None,
            "pci": pci,
            "master": ctx.root.link_name(f"{base}/master"),
            "slaves": sorted(slaves),
            "addresses": sorted(addrs.get(name, []),
                                key=lambda a: (a["family"], a["address"], a["prefixlen"] or 0)),
            "connected_networks": connected.get(name, []),
            "default_route": name in defaults,
        })
    out = {"interfaces": interfaces, "default_route_interfaces": defaults, "default_routes": routes,
           "addresses_known": known, "addresses_source": source}
    if ctx.root.exists("/proc/net/route"):
        out["routes"] = route_table(v4)
    return out


SOURCE = Source("net", reads="/sys/class/net, `ip -j addr show` (else /proc/net), /proc/net/route and ipv6_route",
                order=30, sysfs=True, starts=(IP_ADDR_ARGV,), unread={"addresses_known": False})
