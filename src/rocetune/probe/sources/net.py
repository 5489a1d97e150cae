"""Net source: interfaces from /sys/class/net, addresses, and the default route."""

from __future__ import annotations

import ipaddress
from typing import Dict, List, Optional, Set

from ...errors import ParseError
from ...hostfs import HostReadError, ProbeContext
from ..parsers.ip_addr import parse_ip_addr
from .pci import BDF_RE

NET = "/sys/class/net"
IP_ADDR_ARGV = ["ip", "-j", "addr", "show"]
ARPHRD_INFINIBAND = 32
ARPHRD_LOOPBACK = 772


def _quiet_attr(ctx: ProbeContext, path: str) -> Optional[str]:
    """Attributes like carrier/speed fail with EINVAL on a down link: that means unknown."""
    try:
        text = ctx.root.read_text(path)
    except HostReadError:
        return None
    if text is None:
        return None
    return text.strip() or None


def _quiet_int(ctx: ProbeContext, path: str) -> Optional[int]:
    text = _quiet_attr(ctx, path)
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


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


def default_route_interfaces(ctx: ProbeContext) -> List[str]:
    found: Set[str] = set()
    for line in (ctx.text("/proc/net/route") or "").splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 8 and cols[1] == "00000000" and cols[7] == "00000000":
            found.add(cols[0])
    for line in (ctx.text("/proc/net/ipv6_route") or "").splitlines():
        cols = line.split()
        if len(cols) == 10 and cols[0] == "0" * 32 and cols[1] == "00" and cols[9] != "lo":
            found.add(cols[9])
    return sorted(found)


RTF_GATEWAY = 0x2


def _hex_ipv4(text: str) -> Optional[str]:
    """`0100140A` (little-endian hex, as /proc/net/route writes it) -> `10.20.0.1`."""
    try:
        return str(ipaddress.IPv4Address(int(text, 16).to_bytes(4, "little")))
    except ValueError:
        return None


def ipv4_routes(ctx: ProbeContext) -> Optional[List[dict]]:
    """The main table's IPv4 routes (/proc/net/route); None when the file is missing.

    Policy-routing rules and other tables are not in this file."""
    text = ctx.text("/proc/net/route")
    if text is None:
        return None
    out = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8:
            continue
        dest, gw, mask = _hex_ipv4(cols[1]), _hex_ipv4(cols[2]), _hex_ipv4(cols[7])
        try:
            flags = int(cols[3], 16)
        except ValueError:
            continue
        plen = _prefixlen(mask)
        if dest is None or plen is None:
            continue
        out.append({"interface": cols[0], "dest": dest, "prefixlen": plen,
                    "gateway": gw if flags & RTF_GATEWAY else None})
    return sorted(out, key=lambda r: (r["interface"], ipaddress.IPv4Address(r["dest"]), r["prefixlen"],
                                      r["gateway"] or ""))


def _prefixlen(netmask: Optional[str]) -> Optional[int]:
    """Prefix length of a dotted or colon netmask (`255.255.255.0` -> 24, `ffff:ffff::` -> 32)."""
    if not netmask:
        return None
    try:
        bits = int(ipaddress.ip_address(netmask))
    except ValueError:
        return None
    width = 32 if "." in netmask else 128
    ones = bin(bits).count("1")
    return ones if bits == ((1 << width) - 1) ^ ((1 << (width - ones)) - 1) else None


def addresses(ctx: ProbeContext) -> Optional[Dict[str, List[dict]]]:
    """Addresses per interface from `ip -j addr show`, live or recorded alike; None when unknown."""
    result = ctx.runner.run(IP_ADDR_ARGV)
    if not result.found:
        ctx.warn(f"addresses unknown: {result.reason or 'no ip -j addr show output'}")
        return None
    if not result.ok:
        ctx.warn(f"addresses unknown: 'ip -j addr show' exited {result.returncode}")
        return None
    try:
        return parse_ip_addr(result.stdout)
    except ParseError as exc:
        ctx.warn(exc.message)
        return None


def probe(ctx: ProbeContext) -> dict:
    names = ctx.root.listdir(NET)
    if not names:
        ctx.status.ok = False
        ctx.status.reason = f"no interfaces under {NET}"
        return {"interfaces": [], "default_route_interfaces": []}
    defaults = default_route_interfaces(ctx)
    addrs = addresses(ctx)
    known = addrs is not None
    addrs = addrs or {}
    interfaces = []
    for name in names:
        base = f"{NET}/{name}"
        real = ctx.root.realpath(base)
        dev_real = ctx.root.realpath(f"{base}/device") if ctx.root.exists(f"{base}/device") else ""
        pci = dev_real.rsplit("/", 1)[-1] if dev_real else None
        pci = pci if pci and BDF_RE.match(pci) else None
        dev_type = ctx.int_attr(f"{base}/type")
        speed = _quiet_int(ctx, f"{base}/speed")
        carrier = _quiet_int(ctx, f"{base}/carrier")
        # bonding/ is looked for once, and bonding/slaves read only where bonding/ can be
        loopback = name == "lo" or dev_type == ARPHRD_LOOPBACK
        bonding = not loopback and ctx.root.exists(f"{base}/bonding")
        slaves = (ctx.attr(f"{base}/bonding/slaves") or "").split() if bonding or loopback else []
        interfaces.append({
            "name": name,
            "kind": _kind(ctx, name, real, dev_type, pci, bonding),
            "operstate": ctx.attr(f"{base}/operstate"),
            "carrier": None if carrier is None else bool(carrier),
            "mtu": ctx.int_attr(f"{base}/mtu"),
            "speed_mbps": speed if speed is not None and speed > 0 else None,
            "driver": ctx.root.link_name(f"{base}/device/driver") if pci else None,
            "pci": pci,
            "master": ctx.root.link_name(f"{base}/master"),
            "slaves": sorted(slaves),
            "addresses": sorted(addrs.get(name, []),
                                key=lambda a: (a["family"], a["address"], a["prefixlen"] or 0)),
            "default_route": name in defaults,
        })
    out = {"interfaces": interfaces, "default_route_interfaces": defaults, "addresses_known": known}
    routes = ipv4_routes(ctx)
    if routes is not None:
        out["routes"] = routes
    return out
