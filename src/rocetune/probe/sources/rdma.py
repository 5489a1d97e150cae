"""RDMA source: devices, ports and GID tables from /sys/class/infiniband."""

from __future__ import annotations

import ipaddress
import re
from typing import Dict, List, Optional

from ...hostfs import HostReadError, ProbeContext
from ...model.vocab import natural_key
from .pci import BDF_RE

IB = "/sys/class/infiniband"
ROCE_MTUS = (4096, 2048, 1024, 512, 256)
# GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4: what the kernel's iboe_get_mtu() subtracts.
ROCE_HEADROOM = 96


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


def _gids(ctx: ProbeContext, dev: str, port_dir: str) -> List[dict]:
    entries = []
    unreadable_types = 0
    for name in ctx.root.listdir(f"{port_dir}/gids"):
        if not name.isdigit():
            continue
        raw = ctx.attr(f"{port_dir}/gids/{name}")
        if raw is None:
            continue
        gid = parse_gid(raw)
        if gid is None:
            ctx.warn(f"{dev}: GID {name} is not a GID: {raw[:48]!r}")
            continue
        if gid.packed == bytes(16):
            continue
        try:
            gid_type = ctx.root.read_text(f"{port_dir}/gid_attrs/types/{name}")
            gid_type = gid_type.strip() or None if gid_type is not None else None
        except HostReadError:
            gid_type = None
        if gid_type is None:
            unreadable_types += 1
        try:
            ndev = ctx.root.read_text(f"{port_dir}/gid_attrs/ndevs/{name}")
            ndev = ndev.strip() or None if ndev is not None else None
        except HostReadError:
            ndev = None
        v4 = gid.ipv4_mapped
        entries.append({
            "index": int(name),
            "gid": str(gid),
            "type": gid_type,
            "ndev": ndev,
            "ipv4": str(v4) if v4 is not None else None,
            "ipv6": str(gid) if v4 is None and not gid.is_link_local else None,
        })
    if unreadable_types:
        ctx.warn(f"{dev}: RoCE type of {unreadable_types} GID(s) unreadable "
                 "(a container that does not map them?)")
    return sorted(entries, key=lambda e: e["index"])


def identity(ctx: ProbeContext, base: str) -> dict:
    """What an RDMA device really is: its own PCI function, an auxiliary device (an mlx5
    sub-function) below a PCI function -- the parent PF gives topology and NUMA -- or a
    software device on a netdev (rdma_rxe, siw), which has no PCI function at all."""
    real = ctx.root.realpath(f"{base}/device") if ctx.root.exists(f"{base}/device") else ""
    parts = [p for p in real.split("/") if p]
    bdfs = [i for i, p in enumerate(parts) if BDF_RE.match(p)]
    if bdfs and bdfs[-1] == len(parts) - 1:
        function, pci = "pci", parts[-1]
    elif bdfs:
        function, pci = "auxiliary", parts[bdfs[-1]]
    else:
        function, pci = "software", None
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


def probe(ctx: ProbeContext, net: Optional[dict] = None) -> dict:
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
    devices = []
    for dev in names:
        base = f"{IB}/{dev}"
        ident = identity(ctx, base)
        pci = ident["pci"] if ident["function"] == "pci" else None
        ports = []
        for pname in ctx.root.listdir(f"{base}/ports"):
            if not pname.isdigit():
                continue
            pdir = f"{base}/ports/{pname}"
            port = int(pname)
            link_layer = ctx.attr(f"{pdir}/link_layer")
            gids = _gids(ctx, dev, pdir)
            netdev = _port_netdev(ctx, base, port, gids, netdevs_by_pci, pci)
            netdev_mtu = mtu_of.get(netdev) if netdev else None
            rate = ctx.attr(f"{pdir}/rate")
            roce = link_layer == "Ethernet"
            ports.append({
                "port": port,
                "state": _state_text(ctx.attr(f"{pdir}/state")),
                "phys_state": _state_text(ctx.attr(f"{pdir}/phys_state")),
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
        devices.append({
            "name": dev,
            "node_type": _state_text(ctx.attr(f"{base}/node_type")),
            "fw_ver": ctx.attr(f"{base}/fw_ver"),
            "board_id": ctx.attr(f"{base}/board_id"),
            "node_guid": ctx.attr(f"{base}/node_guid"),
            "hca_type": ctx.attr(f"{base}/hca_type"),
            **ident,
            "ports": sorted(ports, key=lambda p: p["port"]),
        })
    return {"devices": devices}
