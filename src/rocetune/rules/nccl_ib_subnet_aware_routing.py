"""nccl-ib-subnet-aware-routing: NCCL_IB_SUBNET_AWARE_ROUTING=1 where each RoCE rail has a subnet of
its own and nothing routes between them, for the releases that read it.

NCCL 2.30.7 added NCCL_IB_SUBNET_AWARE_ROUTING (default 0; release gate `ib-subnet-aware-routing`,
v2.30.7-1 src/transport/net_ib/connect.cc:61-62). With 1, a listener puts the GIDs of its NIC's
RoCE ports into its handle (:610-622), and the connecting side -- and then the accepting side with
the sender's GIDs (:1465-1480) -- keeps NCCL's chosen NIC only if every RoCE port of it shares a
subnet with the peer, else takes the first local NIC whose ports all do (ncclIbFindDevBySubnet,
:524-592). IPv4-mapped GIDs compare under NCCL_IB_SUBNET_PREFIX_LEN (default 24, 1..32), IPv6 ones
by their /64 (gidSameSubnet, :489-507).

It is an opt-in of the fabric plan (`fabric: {subnet_aware_routing: true}`, docs/qos.md): upstream
added it for DGX Spark's multi-node rings and keeps it off by default to avoid regressions
(NVIDIA/nccl commit 5c1c4288, "Add subnet-aware routing for DGX Spark multi-node ring connection"; the
variable is not in env.rst at v2.30.7-1 or v2.31.2-1). Without the opt-in a note says it was left off.

That is the per-rail-subnet model: rail k has the same subnet on every node. When nothing routes
between the rail subnets, a connection NCCL makes across rails (a communicator whose GPUs are not
rail-aligned, or CROSS_NIC allowing it) cannot reach its peer; subnet-aware routing moves it onto
the peer's rail. So it is set where:

* every compute port is RoCE and has a subnet of its own (the evidence nccl-cross-nic uses);
* the fabric plan asks for it (`subnet_aware_routing: true`) and does not say the fabric is not
  rail-optimised;
* no route in the main IPv4 table joins the rail subnets (or there is no routing table to tell:
  the reason says so). Where a route does join them, cross-rail connections work through it and
  NCCL's own NIC choice is kept (a note says why);
* the NCCL release reads the variable (2.30.7+); an older or unknown release gets a note.

NCCL_IB_SUBNET_PREFIX_LEN is set too when the rails' IPv4 prefix is not NCCL's default 24, so
NCCL compares addresses over the rails' real subnets; rails with different IPv4 prefix lengths
cannot be described by one value, and nothing is set.
"""

from __future__ import annotations

from typing import List

from ..model.plan import Decision
from ..nccl import releases
from .nccl_cross_nic import inter_rail_routes, port_networks

ID = "nccl-ib-subnet-aware-routing"
NCCL_DEFAULT_PREFIX = 24  # v2.30.7-1 src/transport/net_ib/connect.cc:62


def _own_subnets(ctx, ports) -> bool:
    nets = port_networks(ctx, ports)
    return None not in nets.values() and len({str(n) for n in nets.values()}) == len(ports)


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    ports = sel.roce
    if len(ports) < 2 or len(ports) != len(sel.chosen):
        return []
    fabric = ctx.qos.fabric
    if fabric is not None and fabric.rail_optimised is False:
        return []
    if fabric is None or fabric.subnet_aware_routing is not True:
        if releases.gate("ib-subnet-aware-routing", ctx.host.nccl_version()) and _own_subnets(ctx, ports):
            ctx.note("each rail has a subnet of its own; NCCL_IB_SUBNET_AWARE_ROUTING is left at NCCL's 0: upstream "
                     "added it for DGX Spark and keeps it off to avoid regressions (NVIDIA/nccl commit 5c1c4288; "
                     "not in env.rst): say `fabric: {subnet_aware_routing: true}` in the QoS plan to turn it on")
        return []
    maybe = port_networks(ctx, ports)
    nets = {k: n for k, n in maybe.items() if n is not None}
    if len(nets) != len(maybe) or len({str(n) for n in nets.values()}) != len(ports):
        return []
    if any(a != b and a.overlaps(b) for a in nets.values() for b in nets.values()):
        return []
    version = ctx.host.nccl_version()
    fact = releases.fact("ib-subnet-aware-routing")
    if not releases.gate("ib-subnet-aware-routing", version):
        release = f"NCCL {ctx.host.nccl_version_text()}" if version else "an NCCL of unknown release"
        ctx.note(f"each rail has a subnet of its own, but {release} has no NCCL_IB_SUBNET_AWARE_ROUTING "
                 f"(NCCL {fact.span()}): not set")
        return []
    routes, _ = inter_rail_routes(features, ports, nets)
    subnets = ", ".join(f"{p.name} {nets[p.name]}" for p in ports)
    if routes:
        joined = "; ".join(f"{r['route']} on {r['interface']} covers {', '.join(r['reaches'])}" for r in routes)
        ctx.note(f"NCCL_IB_SUBNET_AWARE_ROUTING not set: a route joins the rail subnets ({joined}), so a "
                 "connection across rails reaches its peer and NCCL's own NIC choice stands")
        return []
    seen = ("no route in the main IPv4 table joins them (policy-routing tables were not read)" if routes == [] else
            "the Features carry no routing table, so whether anything routes between them is unknown")
    lengths = {n.prefixlen for n in nets.values() if n.version == 4}
    if len(lengths) > 1:
        ctx.note(f"NCCL_IB_SUBNET_AWARE_ROUTING not set: the rail subnets have IPv4 prefix lengths "
                 f"{sorted(lengths)}, and NCCL compares them under one NCCL_IB_SUBNET_PREFIX_LEN")
        return []
    reason = (f"each of the {len(ports)} RoCE rails has a subnet of its own ({subnets}) and {seen}: a "
              f"connection NCCL makes across rails could not reach its peer, so NCCL {ctx.host.nccl_version_text()} "
              "is told to take the local NIC in the peer's subnet (ncclIbFindDevBySubnet; "
              f"{fact.source})")
    evidence = {"rails": {p.name: str(nets[p.name]) for p in ports}, "inter_rail_routes": routes,
                "nccl": ctx.host.nccl_evidence()}
    out = [ctx.decision("NCCL_IB_SUBNET_AWARE_ROUTING", 1, reason, **evidence)]
    if lengths and next(iter(lengths)) != NCCL_DEFAULT_PREFIX:
        plen = next(iter(lengths))
        out.append(ctx.decision("NCCL_IB_SUBNET_PREFIX_LEN", plen,
                                f"the rail subnets are /{plen}; NCCL compares IPv4 GIDs under "
                                f"NCCL_IB_SUBNET_PREFIX_LEN (default {NCCL_DEFAULT_PREFIX}, "
                                "v2.30.7-1 src/transport/net_ib/connect.cc:62, 498-501)", **evidence))
    return out
