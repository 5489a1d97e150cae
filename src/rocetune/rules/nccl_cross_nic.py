"""nccl-cross-nic: NCCL_CROSS_NIC=0 where the compute ports are rails, saying what was seen.

NCCL_CROSS_NIC (default 2 since its introduction, v2.5.6 src/init.cc:431; 2.30.7
src/graph/search.cc:16) says whether a ring or tree may leave a node on one NIC and enter the
next node on another. 0 keeps each channel on one rail; NCCL's env docs recommend it for
"networks with per NIC switches (rails), with a slow inter-rail connection", and GCP's A3 Ultra,
whose RDMA NICs each sit in their own subnet, ships it. It only matters with more than one NET
device (2.30.7 search.cc:1080-1085).

Evidence, in the order it counts:

* the QoS plan's `fabric.rail_optimised` (docs/qos.md): false keeps NCCL's default; true is the
  fabric owner's word that the ports are rails;
* the host's addressing: every chosen RoCE port has its compute address (first IPv4 RoCE v2 GID)
  in a subnet of its own, the layout NCCL's maintainers recommend for rails (NCCL #1109). That is
  rail *addressing*; whether the rails can reach each other is a routing question, so the main
  IPv4 table (Features net.routes) is read: a route on one rail's interface toward another rail's
  subnet (or a default route on a rail interface) means an inter-rail path exists; none means none
  in the main table (policy-routing tables are not read); no routes in the Features means unknown.
  The reason says which, and never claims isolation that was not seen;
* measured reachability, where the node has it (`declared.rail_reach`, from
  /etc/rocetune/rail-reach.json that `fleet validate --tests cross-rail --rail-reach-out` writes):
  pings bound to each rail toward the other rails of other hosts. It replaces the inference from
  routes. `isolated` or `partial` (some rail cannot reach another) sets 0 whatever the addressing
  or the fabric plan says -- a ring that crosses such rails cannot connect; `routed` is reported
  as the rails' reach, and the addressing decides as above.

What NCCL makes of two ports of one adapter (two PCI functions of one card) depends on the release:

* from 2.20.3 NCCL fuses them into one NET device (NCCL_IB_MERGE_NICS=1: v2.20.3
  src/transport/net_ib.cc:165-182, 272-291, matching the PCI path with the function and device
  digits zeroed (117-120), the system-image GUID and the link layer), so CROSS_NIC has nothing to decide between them;
  2.22.3-2.23.x skip the fusion when the devices mix single- and multi-port adapters (v2.22.3
  net_ib.cc:546-557); from 2.24.3 the fusion moved to the topology (ncclTopoMakeVNics, default
  NCCL_NET_MERGE_LEVEL=PORT: v2.24.3 src/graph/topo.cc:1125-1139; 2.30.7 topo.cc:1738-1746);
* unfused (before 2.20.3, or fusion off), CROSS_NIC=0 tells rails apart by the NIC's asic (the
  system-image GUID, shared by sibling functions: v2.12.12 net_ib.cc:211, 2.30.7
  net_ib/init.cc:400) and port number (1 on every function) -- so sibling ports count as one rail
  and a ring may leave on one and come back on the other (NCCL #2097). That comparison is the same
  in every release checked: v2.12.12 search.cc:395, v2.21.5 search.cc:489, v2.23.4 search.cc:545,
  v2.28.9 search.cc:569, 2.30.7 search.cc:611; only 2.30.7's rail ids given in NCCL_IB_HCA take
  precedence over it (2.30.7 search.cc:605-606; 2.30.3 and 2.30.4 leave the rail id undefined, release
  table `rail-ids-in-ib-hca`).

Where every chosen port sits on one adapter and the release fuses them, NCCL sees one NET device
and the setting would do nothing: nothing is set, a note says why.
"""

from __future__ import annotations

import ipaddress
from typing import Dict, List, Optional, Tuple

from ..model.plan import Decision
from ..nccl import defaults, releases

ID = "nccl-cross-nic"
MERGE_NICS = (2, 20, 3)           # v2.20.3 net_ib.cc:108 NCCL_IB_MERGE_NICS=1
MERGE_SKIPS_MIXED = (2, 22, 3)    # v2.22.3 net_ib.cc:546-557
MERGE_IN_TOPOLOGY = (2, 24, 3)    # v2.24.3 topo.cc:1125-1139


def port_networks(ctx, ports) -> Dict[str, Optional[ipaddress.IPv4Network]]:
    """port name -> the IPv4 network of its compute address (the first IPv4 RoCE v2 GID)."""
    out: Dict[str, Optional[ipaddress.IPv4Network]] = {}
    for p in ports:
        net = None
        for g in sorted(p.gids, key=lambda g: g.get("index", 0)):
            if g.get("index") in p.v4_gids and g.get("ipv4"):
                plen = ctx.host.prefixlen_of(g["ipv4"], [g.get("ndev"), p.netdev])
                if plen is not None:
                    net = ipaddress.IPv4Network(f"{g['ipv4']}/{plen}", strict=False)
                break
        out[p.name] = net
    return out


def adapter_of(port) -> Optional[str]:
    """The PCI bus of a port's function (`0000:21:00.1` -> `0000:21`): NCCL's fusion key, the PCI
    path with the function digit and, under NCCL_IB_MERGE_VFS=1 (the default), the device digits
    zeroed (v2.20.3 src/transport/net_ib.cc:117-120)."""
    if not port.pci or port.function != "pci" or port.pci.count(":") != 2:
        return None
    return port.pci.rsplit(":", 1)[0]


def inter_rail_routes(features: dict, ports, nets) -> Tuple[Optional[List[dict]], List[str]]:
    """(routes on a rail interface that reach another rail's subnet, or None when the Features
    carry no routes; the rail interfaces)."""
    routes = (features.get("net") or {}).get("routes")
    rail_ifaces = sorted({p.netdev for p in ports if p.netdev})
    if routes is None:
        return None, rail_ifaces
    mine = {p.netdev: nets[p.name] for p in ports if p.netdev}
    found = []
    for r in routes:
        own = mine.get(r.get("interface"))
        if own is None:
            continue
        try:
            dest = ipaddress.ip_network(f"{r['dest']}/{r['prefixlen']}", strict=False)
        except ValueError:
            continue
        others = sorted(str(n) for n in mine.values() if n is not None and n != own and dest.overlaps(n))
        if others:
            found.append({"interface": r["interface"], "route": str(dest), "gateway": r.get("gateway"),
                          "reaches": others})
    return found, rail_ifaces


def merging(ctx, version, groups: Dict[str, List[str]]) -> Tuple[Optional[bool], str]:
    """Whether NCCL fuses the ports of one adapter here (None: unknown release), and why."""
    declared = ctx.declared
    off = [k for k, v in (("NCCL_IB_MERGE_NICS", "0"), ("NCCL_NET_MERGE_LEVEL", "LOC"))
           if (declared.get(k) or {}).get("value", "").upper() == v]
    if off:
        return False, f"{off[0]} is declared in {declared[off[0]]['source']}"
    if version is None:
        return None, "the NCCL release is unknown (2.20.3 and later fuse them, earlier ones do not)"
    vt = defaults.text(version)
    if version < MERGE_NICS:
        return False, f"NCCL {vt} predates port fusion (NCCL_IB_MERGE_NICS, 2.20.3)"
    sizes = {len(v) for v in groups.values()}
    if MERGE_SKIPS_MIXED <= version < MERGE_IN_TOPOLOGY and len(sizes) > 1:
        return False, (f"NCCL {vt} skips fusion when single- and multi-port adapters are mixed "
                       "(v2.22.3 net_ib.cc:546-557)")
    where = ("NCCL_IB_MERGE_NICS, v2.20.3 net_ib.cc:165-182" if version < MERGE_IN_TOPOLOGY else
             "ncclTopoMakeVNics at NCCL_NET_MERGE_LEVEL=PORT, v2.24.3 topo.cc:1125-1139")
    return True, f"NCCL {vt} fuses the ports of one adapter into one NET device ({where})"


def measured_reach(features: dict) -> Optional[dict]:
    """The rail reachability fleet validate measured, when the node has a readable one."""
    reach = (features.get("declared") or {}).get("rail_reach")
    return reach if isinstance(reach, dict) and reach.get("verdict") else None


def _measured_text(reach: dict) -> str:
    when = f" at {reach['measured_at']}" if reach.get("measured_at") else ""
    hosts = f" over {reach['hosts']} hosts" if reach.get("hosts") else ""
    return (f"measured by `fleet validate --tests cross-rail`{when}{hosts} ({reach['path']}): "
            f"{reach['reached']} of {reach['tested']} rail-to-other-rail paths answered ({reach['verdict']})")


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    ports = sel.roce
    if len(ports) < 2 or len(ports) != len(sel.chosen):
        return []
    fabric = ctx.qos.fabric
    rail_optimised = fabric.rail_optimised if fabric is not None else None
    reach = measured_reach(features)
    if reach is not None and reach["verdict"] in ("isolated", "partial"):
        told = (f"; the fabric plan ({ctx.qos.source}) says the fabric is not rail-optimised, the measurement "
                "shows otherwise" if rail_optimised is False else "")
        return [ctx.decision("NCCL_CROSS_NIC", 0, (
            f"{_measured_text(reach)}: a ring or tree that leaves one node on a rail and enters the next on "
            f"another could not connect; 0 keeps every channel on one rail{told}"),
            rails=[{"port": p.name, "netdev": p.netdev} for p in ports], measured=reach,
            fabric=fabric.to_dict() if fabric else None)]
    if rail_optimised is False:
        ctx.note(f"the fabric plan ({ctx.qos.source}) says the fabric is not rail-optimised: "
                 "NCCL_CROSS_NIC left at NCCL's default (2)")
        return []
    nets = port_networks(ctx, ports)
    known = [n for n in nets.values() if n is not None]
    if len(known) != len(nets):
        return []
    if len({str(n) for n in known}) != len(ports):
        return []
    if any(a != b and a.overlaps(b) for a in known for b in known):
        return []

    version = ctx.host.nccl_version()
    groups: Dict[str, List[str]] = {}
    for p in ports:
        key = adapter_of(p)
        groups.setdefault(key or p.name, []).append(p.name)
    shared = {k: v for k, v in sorted(groups.items()) if len(v) > 1}
    fused, fuse_why = merging(ctx, version, groups) if shared else (False, "")
    if fused and len(groups) == 1:
        ctx.note(f"{fuse_why}: all {len(ports)} compute ports ({', '.join(p.name for p in ports)}) are one "
                 "adapter, so NCCL sees one NET device and NCCL_CROSS_NIC has nothing to decide; left unset")
        return []

    routes, rail_ifaces = inter_rail_routes(features, ports, nets)
    evidence = {"rails": [{"port": p.name, "netdev": p.netdev, "subnet": str(nets[p.name]),
                           "pci_bus": adapter_of(p)} for p in ports],
                "fabric": fabric.to_dict() if fabric else None, "nccl": defaults.text(version)}
    if reach is not None:
        reach_text = _measured_text(reach) + ": the rails reach each other, through the fabric"
        evidence["measured"] = reach
    elif routes is None:
        reach_text = "routes between the rail subnets are unknown (the Features carry no routing table)"
        evidence["inter_rail_routes"] = None
    elif routes:
        reach_text = ("the rails can reach each other: " + "; ".join(
            f"{r['route']} on {r['interface']}" + (f" via {r['gateway']}" if r["gateway"] else "")
            + f" covers {', '.join(r['reaches'])}" for r in routes))
        evidence["inter_rail_routes"] = routes
    else:
        reach_text = ("no route in the main IPv4 table joins the rail subnets (no rail interface has a "
                      "route to another rail's subnet; policy-routing tables were not read)")
        evidence["inter_rail_routes"] = []
    if rail_optimised:
        basis = f"the fabric plan ({ctx.qos.source}) says the fabric is rail-optimised"
    else:
        basis = "no fabric description: rail addressing is the only evidence of rails"
    reason = (f"each of the {len(ports)} compute ports has a subnet of its own (rail addressing); {basis}; "
              f"{reach_text}. 0 keeps a channel on one rail from node to node, as NCCL's docs advise for rails "
              "with a slow inter-rail connection")
    if shared:
        pairs = ", ".join("+".join(v) for v in shared.values())
        evidence["same_adapter"] = list(shared.values())
        if fused:
            reason += (f". {fuse_why}: between {pairs} this setting does nothing, it acts between "
                       "adapters only")
        elif fused is None:
            reason += (f". Ports of one adapter ({pairs}): {fuse_why}; fused, this setting does nothing "
                       "between them; unfused, CROSS_NIC=0 counts them as one rail (same system-image GUID "
                       "and port number, NCCL #2097) and a ring may still cross between their subnets")
        else:
            reason += (f". Ports of one adapter ({pairs}) are not fused ({fuse_why}), and CROSS_NIC=0 counts "
                       "them as one rail (same system-image GUID and port number, NCCL #2097): a ring may "
                       "still leave on one and come back on the other")
            if releases.gate("rail-ids-in-ib-hca", version):
                ctx.note("NCCL >= 2.30.7 reads rail ids from NCCL_IB_HCA (name:port:rail), which CROSS_NIC=0 "
                         f"compares before asic and port: the rail ids nccl-ib-hca gives keep {pairs} apart")
    return [ctx.decision("NCCL_CROSS_NIC", 0, reason, **evidence)]
