"""nccl-ib-hca: NCCL_IB_HCA lists exactly the compute RDMA ports.

Which ports are compute is decided once (rocetune.rules.hostview.HostView.selection) from the
Features: ACTIVE InfiniBand/RoCE ports only; never a port whose netdev (or its bond) carries the
front end's default route (rocetune.model.frontend: the IPv4 one decides), unless no other port
is usable: NCCL then takes it (NCCL v2.28.9-1 src/transport/net_ib.cc:736-740, ncclIbInit keeps
every ACTIVE IB/Ethernet port that NCCL_IB_HCA lets through, default route or not), so it is
chosen as a converged port with a warning that explains what sharing the link costs; when
some ports are PIX/PXB to a GPU, the others are storage/front-end and are left out; among
GPU-local ports a different link layer, a much lower speed, a missing RoCE address or an
address on the management subnet marks a storage port. The value uses NCCL's exact-match
syntax (`=dev:port,...`): without `=` every entry is a prefix, so `mlx5_1` would
also select `mlx5_10`..`mlx5_19`. Device names come from /sys/class/infiniband, or from recorded
tool outputs when a root has no sysfs: ibv_devinfo/ibstat, else the NIC legend of
`nvidia-smi topo -m`, which names devices without ports. Those are listed without a port
(`=mlx5_1,mlx5_2`): NCCL then takes every ACTIVE port of each (NCCL 2.28.9 src/misc/utils.cc:174-179
matchPort, a port of -1 matches any; src/transport/net_ib.cc:740; 2.30.7 utils.cc:224,
net_ib/init.cc:370).

Rail ids: where the plan knows rails -- one subnet per compute port, or the fabric plan's
`rail_optimised: true` -- and the NCCL release reads them (2.30.7+, the release gate
`rail-ids-in-ib-hca`: v2.30.7-1 src/misc/utils.cc:203-207, net_ib/init.cc:436), each entry carries
its rail id (`=mlx5_0:1:0,mlx5_1:1:1`), so NCCL_CROSS_NIC=0 keeps a channel on one rail by rail id
(search.cc:605-606) even between sibling functions of one adapter, which it otherwise takes for one
rail (NVIDIA/nccl#2097). Rail k is the k-th rail subnet in address order (the same on every node
of the fabric), or with the fabric plan alone the k-th compute port.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..checks.binding import emits
from ..model.plan import Decision
from ..nccl import releases
from ..nccl.syntax import list_entries

ID = "nccl-ib-hca"


@emits("converged-port", "compute-ports-uncertain", "gpu-without-rail", "rail-port-unusable", "rail-slower")
def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.rdma_visible:
        if sel.names_only:
            ctx.note(f"{sel.hidden_reason}; NCCL_IB_HCA not set")
        elif sel.hidden_reason:
            # The probe's rdma-unknown finding already says why, once.
            ctx.note(f"RDMA devices not visible ({sel.hidden_reason}); NCCL_IB_HCA not set")
        return []
    for text in sel.notes:
        ctx.note(text)
    ports = {p.name: p for p in ctx.host.ports()}
    why_out = {p.name: why for p, why in sel.excluded}
    for d in sel.doubts:
        evidence: Dict[str, Any] = {"chosen": [p.name for p in sel.chosen]}
        if d.subject in ports:
            evidence["port"] = ports[d.subject].summary()
            evidence["excluded"] = why_out.get(d.subject)
        ctx.finding(d.check_id, d.severity, d.subject, f"uncertain compute-port choice: {d.text}"
                    if d.check_id == "compute-ports-uncertain" else d.text, evidence)
    for port, why in sel.excluded:
        ctx.note(f"excluded {port.name}: {why}")
    if not sel.chosen:
        return []
    if sel.converged:
        names = ",".join(p.name for p, _ in sel.converged)
        ctx.finding("converged-port", "warning", names,
                    f"converged port: {names} is the only usable RDMA port and the host's front end "
                    "too (" + "; ".join(why for _, why in sel.converged) + "), "
                    "so NCCL runs RoCE over it, as it would with NCCL_IB_HCA unset. Collectives, "
                    "SSH, storage and the job's own TCP share one link: a bulk all-reduce delays them, "
                    "and the lossless class (PFC/ECN) set for RoCE also governs that port; a separate "
                    "compute NIC avoids both. To run NCCL over sockets instead: --set NCCL_IB_DISABLE=1",
                    converged=[{"port": p.name, "why": why} for p, why in sel.converged])
    rails, rails_why = _rail_ids(features, ctx, sel)
    value = "=" + ",".join(p.name + (f":{rails[p.name]}" if rails else "") for p in sel.chosen)
    layer = sel.link_layer or "mixed"
    how = "GPU-local (PIX/PXB) " if sel.locality_used else ""
    shared = ", the front end's too (converged: no other port is usable)" if sel.converged else ""
    reason = (f"{len(sel.chosen)} active {how}{'RoCE' if layer == 'Ethernet' else layer} port(s){shared}; "
              "'=' makes the names exact (NCCL matches prefixes otherwise)")
    if sel.names_only:
        reason = (f"{len(sel.chosen)} RDMA device(s) PIX/PXB to a GPU in nvidia-smi topo -m, named "
                  "without a port (NCCL takes every ACTIVE port of each); '=' makes the names exact")
    if rails:
        reason += f"; {rails_why}"
    elif rails_why:
        ctx.note(rails_why)
    _register_check(ctx, sel)
    evidence = sel.evidence()
    if rails:
        evidence["rail_ids"] = dict(rails)
    return [ctx.decision("NCCL_IB_HCA", value, reason, **evidence)]


def _rail_ids(features: dict, ctx, sel) -> Tuple[Dict[str, int], str]:
    """(port name -> rail id, why) where the plan knows rails and NCCL reads rail ids from
    NCCL_IB_HCA (2.30.7+: `dev:port:rail`); ({}, a note or "") otherwise. Rails are known from one
    subnet per port (rail k = the k-th rail subnet in address order, the same on every node of the
    fabric) or from the fabric plan's `rail_optimised: true` (rail k = the k-th compute port)."""
    from .nccl_cross_nic import port_networks

    ports = sel.roce
    if sel.names_only or len(ports) < 2 or len(ports) != len(sel.chosen):
        return {}, ""
    fabric = ctx.qos.fabric
    said = fabric.rail_optimised if fabric is not None else None
    if said is False:
        return {}, ""
    maybe = port_networks(ctx, ports)
    nets = {k: n for k, n in maybe.items() if n is not None}
    distinct = len(nets) == len(maybe) and len({str(n) for n in nets.values()}) == len(ports) and \
        not any(a != b and a.overlaps(b) for a in nets.values() for b in nets.values())
    if not distinct and not said:
        return {}, ""
    version = ctx.host.nccl_version()
    gated = releases.gate("rail-ids-in-ib-hca", version)
    fact = releases.fact("rail-ids-in-ib-hca")
    if not gated:
        release = f"NCCL {ctx.host.nccl_version_text()}" if version else "an NCCL of unknown release"
        return {}, (f"rails are known, but {release} does not read rail ids from NCCL_IB_HCA (NCCL "
                    f"{fact.span()} does): NCCL_IB_HCA without them")
    if distinct:
        order = sorted(ports, key=lambda p: (nets[p.name].network_address, nets[p.name].prefixlen))
        basis = "one subnet per rail (rail k = the k-th rail subnet in address order: " + \
            ", ".join(f"{p.name} {nets[p.name]}" for p in order) + ")"
    else:
        order = list(ports)
        basis = (f"the fabric plan ({ctx.qos.source}) says the fabric is rail-optimised (rail k = the k-th "
                 "compute port in this order: nodes of one model list them alike)")
    rails = {p.name: i for i, p in enumerate(order)}
    return rails, (f"rail ids after each port ({basis}): NCCL {ctx.host.nccl_version_text()} reads them and "
                   "NCCL_CROSS_NIC=0 keeps a channel on one rail by rail id, even between two ports of one "
                   f"adapter (NVIDIA/nccl#2097; {fact.source})")


def selects(value: str, ports) -> List[str]:
    """Names of the ports NCCL_IB_HCA=value lets NCCL use (NCCL's list syntax: `^` excludes,
    `=` makes names exact, otherwise prefixes; an entry without a port takes every port)."""
    exclude, exact, entries = list_entries(value)
    parsed = []
    for e in entries:
        name, _, rest = e.partition(":")
        port = rest.split(":")[0]
        parsed.append((name, int(port) if port.isdigit() else None))

    def hit(p) -> bool:
        return any((p.device == n if exact else p.device.startswith(n))
                   and (q is None or p.port is None or q == p.port) for n, q in parsed)

    return [p.name for p in ports if hit(p) != exclude]


def _register_check(ctx, sel) -> None:
    active = [p for p in ctx.host.ports() if p.state == "ACTIVE" and p.link_layer in ("Ethernet", "InfiniBand")]
    if sel.names_only:
        active = ctx.host.ports()  # whole devices, state unknown

    def check(value: str) -> Optional[str]:
        got = set(selects(value, active))
        want = {p.name for p in sel.chosen}
        problems = []
        if want - got:
            problems.append("it leaves out active compute port(s) " + ", ".join(sorted(want - got)))
        if got - want:
            problems.append("it takes port(s) rocetune excluded: " + "; ".join(
                f"{p.name} ({why})" for p, why in sel.excluded if p.name in got - want))
        return " and ".join(problems) or None

    ctx.check_declared("NCCL_IB_HCA", check)
