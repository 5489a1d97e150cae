"""nccl-cross-nic: NCCL_CROSS_NIC=0 on a rail-isolated RoCE fabric.

NCCL_CROSS_NIC (default 2 in every release; 2.30.7 src/graph/search.cc:16) says whether a ring
or tree may leave a node on one NIC and enter the next node on another. 0 keeps each channel on
one rail; NCCL's docs recommend it for "networks with per NIC switches (rails), with a slow
inter-rail connection" (env.rst), and GCP's A3 Ultra, whose RDMA NICs each sit in their own
subnet, ships it. With the default 2, rings try the same NIC but may alternate, and traffic
between rails must then cross the spine or fail where rails cannot reach each other at all.

Evidence that rails are isolated: every chosen RoCE port has its compute address in a subnet of
its own (no two ports of this node share one), the layout NCCL's maintainers recommend for rails
(NCCL #1109). Nothing is set when ports share a subnet (the flat case: see arp-isolation) or when
only one port is used (the setting only matters with more than one NET device,
src/graph/search.cc:1080-1085). From NCCL 2.30 CROSS_NIC=0 compares NIC asic and port, which
treats sibling PFs of one adapter as one rail (NCCL #2097): a note says so on those releases.
"""

from __future__ import annotations

import ipaddress
from typing import Dict, List, Optional

from ..model.plan import Decision

ID = "nccl-cross-nic"
RAIL_ID_RELEASE = (2, 30, 0)


def port_networks(ctx, ports) -> Dict[str, Optional[ipaddress.IPv4Network]]:
    """port name -> the IPv4 network of its compute address (the first IPv4 RoCE v2 GID)."""
    out: Dict[str, Optional[ipaddress.IPv4Network]] = {}
    for p in ports:
        net = None
        for g in sorted(p.gids, key=lambda g: g.get("index", 0)):
            if g.get("index") in p.v4_gids and g.get("ipv4"):
                plen = ctx.host.prefixlen_of(g["ipv4"], [g.get("ndev"), p.netdev])
                if plen is not None:
                    net = ipaddress.ip_network(f"{g['ipv4']}/{plen}", strict=False)
                break
        out[p.name] = net
    return out


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    ports = sel.roce
    if len(ports) < 2 or len(ports) != len(sel.chosen):
        return []
    nets = port_networks(ctx, ports)
    if any(n is None for n in nets.values()):
        return []
    distinct = {str(n) for n in nets.values()}
    if len(distinct) != len(ports):
        return []
    if any(a != b and a.overlaps(b) for a in nets.values() for b in nets.values()):
        return []
    version = ctx.host.nccl_version()
    if version is not None and version >= RAIL_ID_RELEASE:
        ctx.note("NCCL >= 2.30 decides rails by NIC asic and port with CROSS_NIC=0: sibling PFs of one "
                 "adapter count as one rail (NCCL #2097)")
    return [ctx.decision(
        "NCCL_CROSS_NIC", 0,
        f"rail-isolated fabric: each of the {len(ports)} compute ports has its own subnet, so a "
        "channel must leave and enter every node on the same rail",
        rails=[{"port": p.name, "netdev": p.netdev, "subnet": str(nets[p.name])} for p in ports])]
