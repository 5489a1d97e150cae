"""RDMA source: devices, ports and GID tables from /sys/class/infiniband."""

from __future__ import annotations

import ipaddress
import re
from typing import Dict, List, Optional, Sequence, Tuple

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ...model.vocab import natural_key
from ..source import Source
from .pci import BDF_RE

IB = "/sys/class/infiniband"
ROCE_MTUS = (4096, 2048, 1024, 512, 256)
# GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4: what the kernel's iboe_get_mtu() subtracts.
ROCE_HEADROOM = 96


_PORT_ATTRS = ("link_layer", "state", "rate", "phys_state")
_DEVICE_ATTRS = ("node_type", "fw_ver", "board_id", "node_guid", "hca_type")


def _port_number(port: dict) -> int:
    return port["port"]


def roce_mtu(netdev_mtu: Optional[int]) -> Optional[int]:
    """The RoCE path MTU the kernel derives from a netdev MTU."""
    if netdev_mtu is None:
        return None
    room = netdev_mtu - ROCE_HEADROOM
    for mtu in ROCE_MTUS:
        if room >= mtu:
            return mtu
    return None


def _state_text(value: Optional[str]) -> Optional[str]:
    """`4: ACTIVE` -> `ACTIVE`."""
    if value is None:
        return None
    return value.split(":", 1)[1].strip() if ":" in value else value.strip()


def _rate_gbps(rate: Optional[str]) -> Optional[float]:
    m = re.match(r"\s*([\d.]+)\s*Gb/sec", rate or "")
    if not m:
        return None
    value = float(m.group(1))
    return int(value) if value.is_integer() else value


def parse_gid(text: str) -> Optional[ipaddress.IPv6Address]:
    try:
        return ipaddress.IPv6Address(text.strip())
    except ValueError:
        return None


ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"  # how sysfs prints an unused GID entry


# How sysfs prints a GID: eight 4-digit hextets. Such text is formatted here directly (ipaddress
# parses and formats ~7 us a GID; a 522-device host has a thousand); any other text, and the
# IPv4-mapped GIDs, whose text form ipaddress owns, go through ipaddress.
_SYSFS_GID_RE = re.compile(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}")
_IPV4_MAPPED_HIGH = 0xFFFF  # ::ffff:0:0/96, the address shifted right by 32
_LINK_LOCAL_HIGH = 0xFE80 >> 6  # fe80::/10, the address shifted right by 118


def compress_hextets(hextets: Sequence[int]) -> str:
    """RFC 5952 text of eight hextets: the longest run (first of equals) of two or more zeros
    becomes `::` -- what ipaddress.IPv6Address prints."""
    best_start, best_len, start, run = -1, 0, -1, 0
    for i, h in enumerate(hextets):
        if h == 0:
            if run == 0:
                start = i
            run += 1
            if run > best_len:
                best_start, best_len = start, run
        else:
            run = 0
    parts = ["%x" % h for h in hextets]
    if best_len < 2:
        return ":".join(parts)
    return ":".join(parts[:best_start]) + "::" + ":".join(parts[best_start + best_len:])


def gid_fields(text: str) -> Optional[Tuple[int, str, Optional[str], Optional[str]]]:
    """(value, text, ipv4, ipv6) of a GID as the Features record it; None when not a GID.

    ipv4 is the address of an IPv4-mapped GID; ipv6 the GID itself when it is neither that nor
    link-local."""
    raw = text.strip()
    if _SYSFS_GID_RE.fullmatch(raw):
        value = int(raw.replace(":", ""), 16)
        if value >> 32 != _IPV4_MAPPED_HIGH:
            gid = compress_hextets([int(raw[i:i + 4], 16) for i in range(0, 39, 5)])
            return value, gid, None, (None if value >> 118 == _LINK_LOCAL_HIGH else gid)
    addr = parse_gid(raw)
    if addr is None:
        return None
    v4 = addr.ipv4_mapped
    return (int(addr), str(addr), str(v4) if v4 is not None else None,
            str(addr) if v4 is None and not addr.is_link_local else None)


def _gids(ctx: ProbeContext, dev: str, port_dir: str) -> List[dict]:
    # A GID table is read in batches (HostRoot.read_texts): the GIDs, then the type and netdev
    # of those in use -- 6k files on a 522-device host.
    names = [n for n in ctx.root.listdir(f"{port_dir}/gids") if n.isdigit()]
    raws = ctx.attrs(f"{port_dir}/gids", names)
    used: List[Tuple[str, int, str, Optional[str], Optional[str]]] = []
    for name in names:
        raw = raws[name]
        if raw is None or raw == ZERO_GID:  # most of a GID table is unused: no parse for those
            continue
        fields = gid_fields(raw)
        if fields is None:
            ctx.warn(f"{dev}: GID {name} is not a GID: {raw[:48]!r}")
            continue
        value, gid, ipv4, ipv6 = fields
        if value != 0:
            used.append((name, value, gid, ipv4, ipv6))
    wanted = [u[0] for u in used]
    types, _ = ctx.root.read_texts(f"{port_dir}/gid_attrs/types", wanted)
    ndevs, _ = ctx.root.read_texts(f"{port_dir}/gid_attrs/ndevs", wanted)
    entries = []
    for name, _value, gid, ipv4, ipv6 in used:
        gid_type = (types.get(name) or "").strip() or None
        ndev = (ndevs.get(name) or "").strip() or None
        entries.append({
            "index": int(name),
            "gid": gid,
            "type": gid_type,
            "ndev": ndev,
            "ipv4": ipv4,
            "ipv6": ipv6,
        })
    return sorted(entries, key=lambda e: e["index"])


def identity(ctx: ProbeContext, base: str, numa_of: Optional[Dict[str, int]] = None) -> dict:
    """What an RDMA device really is: its own PCI function, an auxiliary device (an mlx5
    sub-function) below a PCI function -- the parent PF gives topology and NUMA -- or a
    software device on a netdev (rdma_rxe, siw), which has no PCI function at all.

    `numa_of`: NUMA nodes the PCI source has read already (bdf -> node >= 0)."""
    real = ctx.root.realpath(f"{base}/device") if ctx.root.exists(f"{base}/device") else ""
    parts = [p for p in real.split("/") if p]
    # the last PCI address on the way, looked for from the end
    last = next((i for i in range(len(parts) - 1, -1, -1) if BDF_RE.match(parts[i])), None)
    if last is not None and last == len(parts) - 1:
        function, pci = "pci", parts[-1]
    elif last is not None:
        function, pci = "auxiliary", parts[last]
    else:
        function, pci = "software", None
    if pci and numa_of and pci in numa_of:
        numa: Optional[int] = numa_of[pci]
    else:
        numa = ctx.int_attr(f"/sys/bus/pci/devices/{pci}/numa_node") if pci else None
    return {"pci": pci, "function": function, "numa_node": numa if numa is None or numa >= 0 else None,
            "parent_netdev": ctx.attr(f"{base}/parent") if function == "software" else None,
            "auxiliary": parts[-1] if function == "auxiliary" else None}


def _port_netdev(ctx: ProbeContext, dev_base: str, port: int, gids: List[dict],
                 netdevs_by_pci: Dict[str, List[str]], pci: Optional[str]) -> Optional[str]:
    for g in gids:
        if g["ndev"]:
            return g["ndev"]
    parent = ctx.attr(f"{dev_base}/parent")
    if parent and ctx.root.exists(f"/sys/class/net/{parent}"):
        return parent  # a software RDMA device names the netdev it runs on
    for ifname in netdevs_by_pci.get(pci or "", []):
        dev_port = ctx.int_attr(f"/sys/class/net/{ifname}/dev_port")
        if (dev_port or 0) + 1 == port:
            return ifname
    return None


# Recorded tool outputs that say which RDMA devices a host has when its sysfs is not at hand
# (what a user pasted): the most detailed first.
TOOL_ARGVS = (("ibv_devinfo", "-v"), ("ibv_devinfo",), ("ibstat",), ("ibstatus",))


def _parse_ibstat(text: str) -> list:
    from ..parsers.ibstat import parse_ibstat  # only a root without sysfs needs it

    return parse_ibstat(text)


def _parse_ibstatus(text: str) -> list:
    from ..parsers.ibstat import parse_ibstatus

    return parse_ibstatus(text)


def _parse_ibv_devinfo(text: str) -> List[dict]:
    from ..parsers.ibv_devinfo import parse_ibv_devinfo

    return parse_ibv_devinfo(text)[0]


_TOOL_PARSERS = {"ibv_devinfo": _parse_ibv_devinfo, "ibstat": _parse_ibstat, "ibstatus": _parse_ibstatus}


def _tool_state(state: Optional[str]) -> Optional[str]:
    if not state:
        return None
    state = state[5:] if state.startswith("PORT_") else state
    return state.upper()


def _tool_port(p: dict) -> dict:
    gids = []
    for g in p.get("gids") or []:
        gid = parse_gid(g.get("gid", ""))
        if gid is None or gid.packed == bytes(16):
            continue
        v4 = gid.ipv4_mapped
        gids.append({"index": g["index"], "gid": str(gid), "type": g.get("type"), "ndev": None,
                     "ipv4": str(v4) if v4 is not None else None,
                     "ipv6": str(gid) if v4 is None and not gid.is_link_local else None})
    rate = p.get("rate")
    rate_text = f"{rate} Gb/sec" if rate and str(rate).replace(".", "", 1).isdigit() else rate
    return {"port": p["port"], "state": _tool_state(p.get("state")),
            "phys_state": _tool_state(p.get("phys_state")), "link_layer": p.get("link_layer"),
            "rate": rate_text, "rate_gbps": p.get("rate_gbps") or _rate_gbps(rate_text),
            "netdev": None, "netdev_mtu": None, "roce_mtu": p.get("active_mtu"), "gids": gids,
            "roce_v2_ipv4_gids": [g["index"] for g in gids if g["type"] == "RoCE v2" and g["ipv4"]],
            "roce_v2_ipv6_gids": [g["index"] for g in gids if g["type"] == "RoCE v2" and g["ipv6"]]}


def from_tools(ctx: ProbeContext) -> Optional[dict]:
    """RDMA devices from recorded tool outputs alone (no sysfs): names, port states, link layers,
    rates and, from `ibv_devinfo -v`, GIDs. No PCI address, netdev or NUMA node: unverified."""
    for argv in TOOL_ARGVS:
        result = ctx.runner.run(list(argv))
        if not result.found:
            continue
        try:
            parsed = _TOOL_PARSERS[argv[0]](result.stdout + result.stderr)
        except ParseError as exc:
            ctx.warn(exc.message)
            continue
        devices = [{"name": d["name"], "node_type": None, "fw_ver": d.get("fw_ver"), "board_id": d.get("board_id"),
                    "node_guid": d.get("node_guid"), "hca_type": d.get("ca_type"), "pci": None,
                    "function": "unknown", "numa_node": None, "parent_netdev": None, "auxiliary": None,
                    "ports": sorted((_tool_port(p) for p in d.get("ports") or []), key=lambda p: p["port"])}
                   for d in parsed]
        return {"devices": sorted(devices, key=lambda d: natural_key(d["name"])),
                "from_tools": " ".join(argv)}
    return None


LEGEND_TOOL = "nvidia-smi topo -m"


def from_legend(gpu: Optional[dict]) -> Optional[dict]:
    """RDMA device names from the NIC legend of a recorded `nvidia-smi topo -m` (no sysfs, no
    ibv_devinfo/ibstat): names only, `ports_known: false`. nvidia-smi lists one NIC per RDMA
    device, not per port -- tensorflow's contrib/gdr README shows mlx4_0 once in its topo -m and
    with two ports in its ibv_devinfo -- so port numbers, state and link layer stay unknown."""
    nics = ((gpu or {}).get("matrix") or {}).get("nics") or []
    names = sorted({n["name"] for n in nics if n.get("name")}, key=natural_key)
    if not names:
        return None
    devices = [{"name": name, "node_type": None, "fw_ver": None, "board_id": None, "node_guid": None,
                "hca_type": None, "pci": None, "function": "unknown", "numa_node": None,
                "parent_netdev": None, "auxiliary": None, "ports": [], "ports_known": False}
               for name in names]
    return {"devices": devices, "from_tools": LEGEND_TOOL}


def probe(ctx: ProbeContext, net: Optional[dict] = None, pci_data: Optional[dict] = None,
          gpu: Optional[dict] = None) -> dict:
    if not ctx.root.is_dir("/sys/class"):
        recorded = from_tools(ctx)
        if recorded is not None:
            ctx.warn(f"no /sys/class under the root: RDMA devices from the recorded "
                     f"'{recorded['from_tools']}' output, not verified against sysfs")
            return recorded
        legend = from_legend(gpu)
        if legend is not None:
            ctx.warn("no /sys/class under the root and no recorded ibv_devinfo/ibstat output: RDMA "
                     f"device names from the NIC legend of '{LEGEND_TOOL}' alone (port numbers, "
                     "state and link layer unknown)")
            return legend
        ctx.status.ok = False
        ctx.status.reason = ("no /sys/class under the root and no recorded ibv_devinfo/ibstat output: "
                             "cannot tell whether this host has RDMA devices")
        return {"devices": []}
    names = sorted(ctx.root.listdir(IB), key=natural_key)
    if not names:
        ctx.status.reason = f"no RDMA devices in {IB}"
        return {"devices": []}
    netdevs_by_pci: Dict[str, List[str]] = {}
    mtu_of: Dict[str, Optional[int]] = {}
    for iface in (net or {}).get("interfaces", []):
        mtu_of[iface["name"]] = iface["mtu"]
        if iface["pci"]:
            netdevs_by_pci.setdefault(iface["pci"], []).append(iface["name"])
    # The same numa_node files the PCI source read: a 522-device host need not read them twice.
    numa_of = {d["bdf"]: d["numa_node"] for d in (pci_data or {}).get("devices", [])
               if d.get("numa_node") is not None}
    devices = []
    unreadable: Dict[str, int] = {}
    for dev in names:
        base = f"{IB}/{dev}"
        ident = identity(ctx, base, numa_of)
        pci = ident["pci"] if ident["function"] == "pci" else None
        ports = []
        for pname in ctx.root.listdir(f"{base}/ports"):
            if not pname.isdigit():
                continue
            pdir = f"{base}/ports/{pname}"
            port = int(pname)
            attrs = ctx.attrs(pdir, _PORT_ATTRS)
            link_layer = attrs["link_layer"]
            gids = _gids(ctx, dev, pdir)
            state = _state_text(attrs["state"])
            missing = sum(1 for g in gids if g["type"] is None)
            if missing and state == "ACTIVE":  # an unused port's GIDs matter to nobody
                unreadable[f"{dev}:{port}"] = missing
            netdev = _port_netdev(ctx, base, port, gids, netdevs_by_pci, pci)
            netdev_mtu = mtu_of.get(netdev) if netdev else None
            rate = attrs["rate"]
            roce = link_layer == "Ethernet"
            ports.append({
                "port": port,
                "state": state,
                "phys_state": _state_text(attrs["phys_state"]),
                "link_layer": link_layer,
                "rate": rate,
                "rate_gbps": _rate_gbps(rate),
                "netdev": netdev,
                "netdev_mtu": netdev_mtu,
                "roce_mtu": roce_mtu(netdev_mtu) if roce else None,
                "gids": gids,
                "roce_v2_ipv4_gids": [g["index"] for g in gids if g["type"] == "RoCE v2" and g["ipv4"]],
                "roce_v2_ipv6_gids": [g["index"] for g in gids if g["type"] == "RoCE v2" and g["ipv6"]],
            })
        attrs = ctx.attrs(base, _DEVICE_ATTRS)
        devices.append({
            "name": dev,
            "node_type": _state_text(attrs["node_type"]),
            "fw_ver": attrs["fw_ver"],
            "board_id": attrs["board_id"],
            "node_guid": attrs["node_guid"],
            "hca_type": attrs["hca_type"],
            **ident,
            "ports": sorted(ports, key=_port_number),
        })
    if unreadable:
        names_ = sorted(unreadable, key=natural_key)
        shown = ", ".join(names_[:4]) + (f" and {len(names_) - 4} more" if len(names_) > 4 else "")
        ctx.warn(f"RoCE type of {sum(unreadable.values())} GID(s) unreadable on {len(names_)} active "
                 f"port(s) ({shown}): a container that does not map gid_attrs?")
    return {"devices": devices}


SOURCE = Source("rdma", reads="/sys/class/infiniband (ports, GIDs); without /sys, a recorded ibv_devinfo or "
                "ibstat, or topo -m's legend",
                needs=("net", "pci", "gpu"), order=50)
