"""nccl-ib-gid-index: which RoCE GID NCCL uses (NCCL_IB_GID_INDEX, or _ADDR_FAMILY/_ADDR_RANGE).

RoCE only: on InfiniBand NCCL does not consult these variables. The right GID on a RoCE port is
the lowest-index IPv4-mapped RoCE v2 GID (routable, unlike the link-local fe80 entries; v2, unlike
v1, crosses L3). NCCL before 2.21.5 used index 0 unless told otherwise; since 2.21.5 it
auto-selects exactly that GID.

* One index is right on every chosen port and each port has a single IPv4 address: pin
  `NCCL_IB_GID_INDEX` -- it works on every NCCL version.
* The index differs between ports, or a port carries several IPv4 addresses (VLANs, secondary
  addresses: the first in the GID table would win): `NCCL_IB_ADDR_RANGE` (the smallest CIDR
  holding the compute address of every port); needs NCCL >= 2.21.5, warned when older.
* Only IPv6 RoCE v2 GIDs: `NCCL_IB_ADDR_FAMILY=AF_INET6` (NCCL looks for IPv4 by default and
  would otherwise fall back to a link-local GID), plus a range when ports carry several.
* GID types unreadable (a container that does not map them): nothing is guessed; a warning says
  how to pin the index by hand.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Tuple

from ..model.plan import Decision

ID = "nccl-ib-gid-index"
AUTO_SELECT = (2, 21, 5)


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.chosen:
        return []
    if sel.link_layer == "InfiniBand":
        ctx.note("InfiniBand ports: NCCL picks the GID itself; no GID variable is set")
        return []
    ports = sel.roce
    if not ports:
        return []
    unreadable = [p for p in ports if not p.v4_gids and not p.v6_gids and p.types_unreadable]
    if unreadable:
        names = ", ".join(p.name for p in unreadable)
        ctx.warn(f"RoCE GID types of {names} are unreadable (a container that does not map "
                 "gid_attrs?): the RoCE v2 GID cannot be identified, nothing is pinned. NCCL before "
                 "2.29.2 aborts on such tables; find the index with show_gids on the host and "
                 "pass --set NCCL_IB_GID_INDEX=N")
        return []
    version = ctx.host.nccl_version()
    vtext = ctx.host.nccl_version_text()
    if all(p.v4_gids for p in ports):
        return _ipv4(ctx, ports, version, vtext)
    if all(p.v6_gids for p in ports):
        return _ipv6(ctx, ports, version, vtext)
    missing = ", ".join(p.name for p in ports if not p.v4_gids)
    ctx.warn(f"no IPv4 RoCE v2 GID on {missing} (and not every port has an IPv6 one): "
             "no single address family fits; give the ports addresses or set the GID by hand")
    return []


def _candidates(ctx, port, family: str) -> List[Tuple[int, Any, Any, bool]]:
    """(index, address, network, on the port's own netdev?) of each routable RoCE v2 GID."""
    out = []
    for g in port.gids:
        idx = g.get("index")
        if family == "inet" and idx in port.v4_gids and g.get("ipv4"):
            addr = g["ipv4"]
        elif family == "inet6" and idx in port.v6_gids and g.get("ipv6"):
            addr = g["ipv6"]
        else:
            continue
        plen = ctx.host.prefixlen_of(addr, [g.get("ndev"), port.netdev])
        width = 32 if family == "inet" else 128
        net = ipaddress.ip_network(f"{addr}/{plen if plen is not None else width}", strict=False)
        primary = g.get("ndev") in (None, port.netdev)
        out.append((idx, ipaddress.ip_address(addr), net, primary))
    return sorted(out, key=lambda c: c[0])


def _gid_evidence(ports, picks: Dict[str, Tuple[int, Any, Any]]) -> List[Dict[str, Any]]:
    out = []
    for p in ports:
        idx, addr, net = picks[p.name]
        out.append({"port": p.name, "index": idx, "address": str(addr), "network": str(net),
                    "roce_v2_gids": p.v4_gids if addr.version == 4 else p.v6_gids})
    return out


def _pick(ctx, ports, family: str) -> Tuple[Dict[str, Tuple[int, Any, Any]], List[str], bool]:
    """One compute address per port: the one whose subnet the most other ports share, then the
    one on the port's own netdev (a VLAN or alias address is the extra one), then the first."""
    cands = {p.name: _candidates(ctx, p, family) for p in ports}
    several = any(len({str(c[1]) for c in cs}) > 1 for cs in cands.values())
    picks: Dict[str, Tuple[int, Any, Any]] = {}
    doubts: List[str] = []
    for p in ports:
        scored = []
        for idx, addr, net, primary in cands[p.name]:
            score = sum(1 for other, cs in cands.items() if other != p.name
                        and any(c[1] in net or addr in c[2] for c in cs))
            scored.append((-score, 0 if primary else 1, idx, addr, net))
        if not scored:
            continue
        scored.sort(key=lambda s: (s[0], s[1], s[2]))
        best = scored[0]
        ties = [s for s in scored[1:] if s[:2] == best[:2] and s[4] != best[4]]
        if ties:
            doubts.append(f"{p.name}: {best[3]} and {ties[0][3]} are equally plausible compute "
                          f"addresses; took {best[3]} (lower GID index)")
        picks[p.name] = (best[2], best[3], best[4])
    return picks, doubts, several


def _cover(nets: List[Any]) -> Any:
    net = nets[0]
    while not all(n.subnet_of(net) for n in nets if n.version == net.version):
        net = net.supernet()
    return net


def _range_decisions(ctx, ports, picks, family: str, version, vtext) -> List[Decision]:
    nets = [picks[p.name][2] for p in ports]
    cover = _cover(nets)
    if cover.prefixlen == 0:
        ctx.warn("the compute addresses share no common prefix: NCCL_IB_ADDR_RANGE would match "
                 "everything; GID left to NCCL's default")
        return []
    # Inside the range NCCL takes the lowest-index GID: it must be the picked one on each port.
    for p in ports:
        idx, addr, _ = picks[p.name]
        inside = [c for c in _candidates(ctx, p, family) if c[1].version == cover.version and c[1] in cover]
        if inside and inside[0][0] != idx:
            ctx.warn(f"{p.name}: {inside[0][1]} (GID {inside[0][0]}) also falls in {cover} and comes "
                     f"first; NCCL would use it instead of {addr}")
    evidence = {"gids": _gid_evidence(ports, picks)}
    out = []
    if family == "inet6":
        out.append(ctx.decision("NCCL_IB_ADDR_FAMILY", "AF_INET6",
                                "the chosen RoCE ports have only IPv6 RoCE v2 GIDs; NCCL looks for "
                                "IPv4 unless told", **evidence))
    out.append(ctx.decision("NCCL_IB_ADDR_RANGE", str(cover),
                            "smallest range holding each port's compute address; NCCL takes the "
                            "first RoCE v2 GID inside it", **evidence))
    _gate(ctx, version, vtext, [d.key for d in out])
    return out


def _gate(ctx, version, vtext, keys: List[str]) -> None:
    names = " and ".join(keys)
    if version is None:
        ctx.note(f"NCCL library not found on this host: {names} need NCCL >= 2.21.5 where the job runs")
    elif version < AUTO_SELECT:
        ctx.warn(f"NCCL {vtext} predates GID auto-selection (2.21.5): it ignores {names} and uses "
                 "GID index 0 (link-local) unless NCCL_IB_GID_INDEX is set; upgrade NCCL")


def _checked_picks(ctx, ports, family):
    """The GID picks per port, or None (with a warning) when a port's table lacks them."""
    picks, doubts, several = _pick(ctx, ports, family)
    if len(picks) < len(ports):
        ctx.warn("the GID table of " + ", ".join(p.name for p in ports if p.name not in picks) +
                 " does not hold the RoCE v2 GIDs the Features list; no GID variable set")
        return None, several
    for d in doubts:
        ctx.warn(f"uncertain GID choice: {d}")
    return picks, several


def _ipv4(ctx, ports, version, vtext) -> List[Decision]:
    picks, several = _checked_picks(ctx, ports, "inet")
    if picks is None:
        return []
    lowest = {p.name: p.v4_gids[0] for p in ports}
    if not several and len(set(lowest.values())) == 1:
        idx = next(iter(lowest.values()))
        return [ctx.decision(
            "NCCL_IB_GID_INDEX", idx,
            f"GID {idx} is the first IPv4 RoCE v2 GID on every chosen port; pinned so every NCCL "
            "version uses it (auto-selection exists only since 2.21.5)",
            gids=_gid_evidence(ports, picks))]
    if several:
        ctx.note("a chosen port carries several IPv4 addresses: the first in its GID table would win, "
                 "so the compute range is given instead of an index")
    else:
        ctx.note("the first IPv4 RoCE v2 GID sits at different indices on different ports ("
                 + ", ".join(f"{k}: {v}" for k, v in lowest.items()) + "): no single index fits")
    return _range_decisions(ctx, ports, picks, "inet", version, vtext)


def _ipv6(ctx, ports, version, vtext) -> List[Decision]:
    picks, several = _checked_picks(ctx, ports, "inet6")
    if picks is None:
        return []
    lowest = {p.name: p.v6_gids[0] for p in ports}
    if version is not None and version < AUTO_SELECT and not several and len(set(lowest.values())) == 1:
        idx = next(iter(lowest.values()))
        ctx.note(f"NCCL {vtext} has no address-family selection; the IPv6 GID index is pinned instead")
        return [ctx.decision("NCCL_IB_GID_INDEX", idx,
                             f"GID {idx} is the only IPv6 RoCE v2 GID on every chosen port and NCCL "
                             f"{vtext} cannot select by family", gids=_gid_evidence(ports, picks))]
    if several:
        return _range_decisions(ctx, ports, picks, "inet6", version, vtext)
    out = [ctx.decision("NCCL_IB_ADDR_FAMILY", "AF_INET6",
                        "the chosen RoCE ports have only IPv6 RoCE v2 GIDs; NCCL looks for IPv4 unless "
                        "told, and would fall back to a link-local GID",
                        gids=_gid_evidence(ports, picks))]
    _gate(ctx, version, vtext, ["NCCL_IB_ADDR_FAMILY"])
    return out
