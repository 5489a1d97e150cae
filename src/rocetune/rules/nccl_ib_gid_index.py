"""nccl-ib-gid-index: pin NCCL_IB_GID_INDEX only where NCCL's own GID choice fails.

RoCE only: on InfiniBand NCCL does not consult these variables. The right GID on a RoCE port is
the lowest-index IPv4-mapped RoCE v2 GID (routable, unlike the link-local fe80 entries; v2, unlike
v1, crosses L3). Since 2.21.5 NCCL selects exactly that GID itself, per connection, at every
connect and accept (v2.21.5 src/transport/net_ib.cc:292 ncclIbGetGidIndex; 2.30.7
src/transport/net_ib/connect.cc:268-330) -- so a new job picks up a GID table that changed (an
address re-added at another slot), where a pinned index goes stale (NCCL #1333, #2157). Before
2.21.5 NCCL uses index 0 (a link-local RoCE v1 GID) unless told. Hence:

* NCCL >= 2.21.5 and readable GID types: no NCCL_IB_GID_INDEX. A port with several IPv4
  addresses gets `NCCL_IB_ADDR_RANGE` (the smallest CIDR holding each port's compute address;
  NCCL would take the first IPv4 GID); IPv6-only ports get `NCCL_IB_ADDR_FAMILY=AF_INET6`.
* NCCL older than 2.21.5: the index is pinned when one index is right on every chosen port
  (the env is written per node, so it is this node's table; re-run rocetune when addresses
  change). Different indices per port cannot be expressed: these releases query the one
  NCCL_IB_GID_INDEX on every device (v2.20.5 src/transport/net_ib.cc:80, :838, :1028) and have
  no NCCL_IB_ADDR_RANGE (added in v2.21.5 net_ib.cc:131), so the index most ports share is kept
  pinned (the lowest on a tie) and each port where it is not is a failure (`gid-index-odd-port`):
  a range those releases ignore would leave every port on index 0.
* Some GID types unreadable (a container without gid_attrs/types): NCCL 2.21.5-2.25.x abort the
  connection on the failed read; 2.26.2+ skip an EINVAL read but then take the first IPv4 GID
  without checking its version (mlx5 puts RoCE v1 there), and a missing file still aborts in
  every release. The index is pinned -- pinning skips NCCL's scan -- when one index fits every
  port: the first readable IPv4 RoCE v2 GID, or, with no type readable, what the table's layout
  shows (mlx5 creates each address's GIDs as a (v1, v2) pair, so the second entry of the first
  IPv4 pair is its RoCE v2 GID; the reason then says it is inferred).
* NCCL version unknown: decided as for an old NCCL -- pinned where one index fits. A pinned
  index is what NCCL >= 2.21.5 would pick today, so it is right on a new NCCL as long as the
  table does not change, while leaving it unset is certainly wrong on an old one (index 0).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional, Tuple

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..nccl.defaults import GID_AUTO_SELECT, GID_TYPE_EINVAL_TOLERATED

ID = "nccl-ib-gid-index"


declare(
    id="gid-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="The RoCE GID could not be planned with certainty",
    checks="Whether every RoCE compute port has a RoCE v2 GID of one address family, readable "
           "types, a GID table that holds what the Features list, and one GID that is plainly "
           "the compute address.",
    reads="/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types (the Features `rdma`).",
    why="NCCL then picks a GID itself, or the link-local one on older releases: connections "
        "fail or go unrouted.",
    fix="give every compute netdev its IPv4 address; or find the index with show_gids and pass "
        "--set NCCL_IB_GID_INDEX=N",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc ncclIbGetGidIndex; NCCL #1333, #1573, #2157",
)

declare(
    id="gid-range-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="NCCL_IB_ADDR_RANGE cannot single out the compute addresses",
    checks="Whether one address range holds each compute port's address and no other GID that "
           "comes first.",
    reads="The compute ports' GID tables and addresses.",
    why="NCCL takes the first RoCE v2 GID inside the range: another address there wins.",
    fix="give the compute ports their own subnets, or pass --set NCCL_IB_GID_INDEX=N",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc (NCCL_IB_ADDR_RANGE)",
)

declare(
    id="gid-nccl-too-old", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="The NCCL release predates GID auto-selection",
    checks="Whether the NCCL planned for reads NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE (2.21.5 and later).",
    reads="The NCCL release (the Features `kernel.nccl`).",
    why="Older releases use GID index 0 (link-local) unless NCCL_IB_GID_INDEX is set.",
    fix="upgrade NCCL, or pass --nccl-version with the release the jobs load",
    source="NVIDIA/nccl v2.21.5-1 release notes (RoCE GID auto-selection)",
)

declare(
    id="gid-index-odd-port", kind="rule", severity="error",
    by=("nccl-ib-gid-index",),
    title="One RoCE port's GID sits at another index, and this NCCL pins one index for all",
    checks="Below NCCL 2.21.5, whether the first IPv4 RoCE v2 GID sits at one index on every "
           "compute port; the index most ports share is pinned, and each port where it is not is "
           "named.",
    reads="/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types; the NCCL release planned for.",
    why="NCCL before 2.21.5 queries the one NCCL_IB_GID_INDEX on every device and has no "
        "NCCL_IB_ADDR_RANGE: on the odd port the pinned index is a link-local, RoCE v1 or empty "
        "GID, and connections over that rail fail.",
    fix="give the odd port its address back at the index the others use (remove and re-add the "
        "addresses in the same order), or run the jobs with NCCL 2.21.5 or later",
    source="NVIDIA/nccl v2.20.5-1 src/transport/net_ib.cc:80 (IB_GID_INDEX), :838 and :1028 "
           "(ncclParamIbGidIndex() queried on every device); NCCL_IB_ADDR_RANGE from v2.21.5-1 "
           "src/transport/net_ib.cc:131",
)
AUTO_SELECT = GID_AUTO_SELECT


@emits("gid-uncertain")
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
    version = ctx.host.nccl_version()
    vtext = ctx.host.nccl_version_text()
    _register_check(ctx, ports)
    if any(p.types_unreadable for p in ports):
        return _unreadable(ctx, ports, version, vtext)
    if all(p.v4_gids for p in ports):
        return _ipv4(ctx, ports, version, vtext)
    if all(p.v6_gids for p in ports):
        return _ipv6(ctx, ports, version, vtext)
    missing = ", ".join(p.name for p in ports if not p.v4_gids)
    ctx.finding("gid-uncertain", "warning", missing,
                f"no IPv4 RoCE v2 GID on {missing} (and not every port has an IPv6 one): "
                "no single address family fits; give the ports addresses or set the GID by hand",
                ports=_gid_lists(ports))
    return []


def _gid_lists(ports) -> List[Dict[str, Any]]:
    return [{"port": p.name, "roce_v2_ipv4_gids": p.v4_gids, "roce_v2_ipv6_gids": p.v6_gids} for p in ports]


def layout_v2_index(port) -> Optional[int]:
    """With types unreadable: the second entry of the first IPv4 address pair (mlx5 creates each
    address's GIDs as consecutive RoCE v1, RoCE v2 entries), or None when no pair is there."""
    v4 = sorted((g for g in port.gids if g.get("ipv4")), key=lambda g: g["index"])
    for a, b in zip(v4, v4[1:]):
        if a["gid"] == b["gid"] and b["index"] == a["index"] + 1:
            return int(b["index"])
    return None


@emits("gid-uncertain")
def _unreadable(ctx, ports, version, vtext) -> List[Decision]:
    names = ", ".join(p.name for p in ports if p.types_unreadable)
    if version is not None and version < AUTO_SELECT:
        failure = f"NCCL {vtext} uses GID index 0 (link-local) unless told"
    elif version is not None and version < GID_TYPE_EINVAL_TOLERATED:
        failure = (f"NCCL {vtext} aborts the connection when it cannot read gid_attrs/types "
                   "(2.21.5-2.25.x; NCCL #1573)")
    elif version is not None:
        failure = (f"NCCL {vtext} skips a type it cannot read but then takes the first IPv4 GID "
                   "without a RoCE version check (the RoCE v1 entry), and aborts if the types file "
                   "is missing")
    else:
        failure = ("the NCCL version is unknown: 2.21.5-2.25.x abort on unreadable types, older ones "
                   "use index 0, newer ones may take the RoCE v1 entry")
    picks = {p.name: (p.v4_gids[0] if p.v4_gids else layout_v2_index(p)) for p in ports}
    how = ("read from the table" if all(p.v4_gids for p in ports) else
           "the second entry of the first IPv4 GID pair, which mlx5 creates as RoCE v2 (inferred from "
           "the table layout)")
    found = {v for v in picks.values() if v is not None}
    if None in picks.values() or len(found) != 1:
        ctx.finding("gid-uncertain", "warning", names,
                    f"RoCE GID types of {names} are unreadable (a container that does not map "
                    f"gid_attrs?) and {failure}; the GID table does not show one RoCE v2 index for "
                    "every port: find it with show_gids on the host and pass --set NCCL_IB_GID_INDEX=N",
                    picks=picks, nccl=ctx.host.nccl_evidence())
        return []
    idx = found.pop()
    return [ctx.decision(
        "NCCL_IB_GID_INDEX", idx,
        f"GID types of {names} are unreadable and {failure}: pinned to {idx}, the first IPv4 RoCE v2 "
        f"GID ({how}); a pinned index skips NCCL's scan of the types",
        gids=[{"port": p.name, "index": picks[p.name]} for p in ports], nccl=ctx.host.nccl_evidence())]


def _register_check(ctx, ports) -> None:
    """A declared NCCL_IB_GID_INDEX must name a RoCE v2 IPv4/IPv6 GID on every chosen port."""

    def check(value: str) -> Optional[str]:
        try:
            idx = int(value, 0)
        except ValueError:
            return f"{value!r} is not a number"
        if idx < 0:
            return None
        bad = [p.name for p in ports
               if (p.v4_gids or p.v6_gids) and idx not in p.v4_gids + p.v6_gids]
        if not bad:
            return None
        return ("GID " + str(idx) + " is not a routable RoCE v2 GID on " + ", ".join(bad) + " (" +
                "; ".join(f"{p.name}: {p.v4_gids or p.v6_gids}" for p in ports if p.name in bad) + ")")

    ctx.check_declared("NCCL_IB_GID_INDEX", check)


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


@emits("gid-range-uncertain")
def _range_decisions(ctx, ports, picks, family: str, version, vtext) -> List[Decision]:
    nets = [picks[p.name][2] for p in ports]
    cover = _cover(nets)
    if cover.prefixlen == 0:
        ctx.finding("gid-range-uncertain", "warning", "NCCL_IB_ADDR_RANGE",
                    "the compute addresses share no common prefix: NCCL_IB_ADDR_RANGE would match "
                    "everything; GID left to NCCL's default", networks=[str(n) for n in nets])
        return []
    # Inside the range NCCL takes the lowest-index GID: it must be the picked one on each port.
    for p in ports:
        idx, addr, _ = picks[p.name]
        inside = [c for c in _candidates(ctx, p, family) if c[1].version == cover.version and c[1] in cover]
        if inside and inside[0][0] != idx:
            ctx.finding("gid-range-uncertain", "warning", p.name,
                        f"{p.name}: {inside[0][1]} (GID {inside[0][0]}) also falls in {cover} and comes "
                        f"first; NCCL would use it instead of {addr}", range=str(cover), gid=inside[0][0],
                        picked=idx)
    evidence = {"gids": _gid_evidence(ports, picks), "nccl": ctx.host.nccl_evidence()}
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


@emits("gid-nccl-too-old")
def _gate(ctx, version, vtext, keys: List[str]) -> None:
    names = " and ".join(keys)
    if version is None:
        ctx.note(f"NCCL library not found on this host: {names} need NCCL >= 2.21.5 where the job runs")
    elif version < AUTO_SELECT:
        ctx.finding("gid-nccl-too-old", "warning", "nccl",
                    f"NCCL {vtext} predates GID auto-selection (2.21.5): it ignores {names} and uses "
                    "GID index 0 (link-local) unless NCCL_IB_GID_INDEX is set; upgrade NCCL",
                    nccl=ctx.host.nccl_evidence())


@emits("gid-uncertain")
def _checked_picks(ctx, ports, family):
    """The GID picks per port, or None (with a warning) when a port's table lacks them."""
    picks, doubts, several = _pick(ctx, ports, family)
    if len(picks) < len(ports):
        lacking = ", ".join(p.name for p in ports if p.name not in picks)
        ctx.finding("gid-uncertain", "warning", lacking,
                    f"the GID table of {lacking} does not hold the RoCE v2 GIDs the Features list; no GID "
                    "variable set", ports=_gid_lists(ports))
        return None, several
    for d in doubts:
        ctx.finding("gid-uncertain", "warning", "NCCL_IB_GID_INDEX", f"uncertain GID choice: {d}",
                    picks={k: v[0] for k, v in picks.items()})
    return picks, several


def _ipv4(ctx, ports, version, vtext) -> List[Decision]:
    picks, several = _checked_picks(ctx, ports, "inet")
    if picks is None:
        return []
    lowest = {p.name: p.v4_gids[0] for p in ports}
    auto = version is not None and version >= AUTO_SELECT
    if auto and not several:
        ctx.note(f"NCCL {vtext} picks the first IPv4 RoCE v2 GID of each port itself at every job start ("
                 + ", ".join(f"{k}: {v}" for k, v in lowest.items()) + "): NCCL_IB_GID_INDEX is not "
                 "pinned, so a GID table that changes is picked up by the next job (NCCL #1333, #2157)")
        return []
    if not several and len(set(lowest.values())) == 1:
        idx = next(iter(lowest.values()))
        if version is None:
            why = ("the NCCL version is unknown: pinned to the index NCCL >= 2.21.5 would pick today, "
                   "because an older NCCL uses index 0 (link-local RoCE v1) unless told")
            ctx.note("NCCL version unknown: NCCL_IB_GID_INDEX pinned (right on every release while this "
                     "node's GID table stays as probed; with NCCL >= 2.21.5 --unset NCCL_IB_GID_INDEX "
                     "lets NCCL pick at each job start)")
        else:
            why = (f"NCCL {vtext} predates GID auto-selection (2.21.5) and uses index 0 (link-local "
                   "RoCE v1) unless told; re-run rocetune on this node when its addresses change")
        return [ctx.decision(
            "NCCL_IB_GID_INDEX", idx,
            f"GID {idx} is the first IPv4 RoCE v2 GID on every chosen port; {why}",
            gids=_gid_evidence(ports, picks), nccl=ctx.host.nccl_evidence())]
    if version is not None and version < AUTO_SELECT:
        return _majority_pin(ctx, ports, picks, {p.name: picks[p.name][0] for p in ports} if several else lowest,
                             vtext)
    if several:
        ctx.note("a chosen port carries several IPv4 addresses: the first in its GID table would win, "
                 "so the compute range is given")
    else:
        ctx.note("the first IPv4 RoCE v2 GID sits at different indices on different ports ("
                 + ", ".join(f"{k}: {v}" for k, v in lowest.items()) + "): no single index fits")
    return _range_decisions(ctx, ports, picks, "inet", version, vtext)


@emits("gid-index-odd-port")
def _majority_pin(ctx, ports, picks, lowest: Dict[str, int], vtext) -> List[Decision]:
    """Below 2.21.5 where one index is not right on every port (the first IPv4 RoCE v2 GID at
    different indices, or a port with several addresses): one index is all NCCL takes, so the
    one most ports share is pinned and each other port is a failure."""
    counts: Dict[int, int] = {}
    for idx in lowest.values():
        counts[idx] = counts.get(idx, 0) + 1
    idx = min(counts, key=lambda i: (-counts[i], i))
    odd = [p for p in ports if lowest[p.name] != idx]
    for p in odd:
        ctx.finding("gid-index-odd-port", "error", p.name,
                    f"{p.name}: its compute address's IPv4 RoCE v2 GID is at index {lowest[p.name]}, the other "
                    f"ports' at "
                    f"{idx}; NCCL {vtext} uses one NCCL_IB_GID_INDEX on every port and has no NCCL_IB_ADDR_RANGE "
                    f"(2.21.5), so connections over {p.name} use GID {idx} there and fail",
                    port=p.name, index=lowest[p.name], pinned=idx, roce_v2_ipv4_gids=p.v4_gids)
    where = (f"on {len(ports) - len(odd)} of {len(ports)} chosen ports (not on {', '.join(p.name for p in odd)})"
             if odd else "on every chosen port")
    return [ctx.decision(
        "NCCL_IB_GID_INDEX", idx,
        f"GID {idx} is the compute address's IPv4 RoCE v2 GID {where}; NCCL {vtext} predates GID "
        "auto-selection (2.21.5), has no NCCL_IB_ADDR_RANGE and takes one index for every port: pinned to "
        "the one most ports share",
        gids=_gid_evidence(ports, picks), nccl=ctx.host.nccl_evidence())]


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
                             f"{vtext} cannot select by family", gids=_gid_evidence(ports, picks),
                             nccl=ctx.host.nccl_evidence())]
    if several:
        return _range_decisions(ctx, ports, picks, "inet6", version, vtext)
    out = [ctx.decision("NCCL_IB_ADDR_FAMILY", "AF_INET6",
                        "the chosen RoCE ports have only IPv6 RoCE v2 GIDs; NCCL looks for IPv4 unless "
                        "told, and would fall back to a link-local GID",
                        gids=_gid_evidence(ports, picks), nccl=ctx.host.nccl_evidence())]
    _gate(ctx, version, vtext, ["NCCL_IB_ADDR_FAMILY"])
    return out
