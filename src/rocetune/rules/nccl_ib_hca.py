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

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..nccl import releases
from ..nccl.syntax import list_entries
from .base import NCCL_IB_SOURCE, PORTS_READ

ID = "nccl-ib-hca"


declare(
    id="compute-ports-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="The choice of compute ports is uncertain",
    checks="Whether the compute (rail) ports could be told from the front end and storage without "
           "doubt: the default route's owner, as many ports of two fabrics, every port on the "
           "management subnet, GPUs seeing different numbers of local ports, no RoCE port with "
           "an address.",
    reads=PORTS_READ,
    why="NCCL_IB_HCA names the rails; a doubtful choice may give NCCL a storage or front-end "
        "port, or leave a rail out.",
    fix="check the ports with `ibdev2netdev` and `ip addr`; state the rails in the expectations "
        "(rails.devices) or set NCCL_IB_HCA with --set",
    source=NCCL_IB_SOURCE,
)

declare(
    id="rail-port-unusable", kind="rule", severity="error",
    by=("nccl-ib-hca",),
    title="A GPU's own RDMA port cannot be used",
    checks="A port at PIX/PXB to a GPU that the plan leaves out because it is not ACTIVE or has "
           "no IPv4/IPv6 RoCE v2 GID, where that GPU has no other rail of its own.",
    reads=PORTS_READ,
    why="The port is there, next to its GPU, and broken: the GPU's traffic crosses to another "
        "GPU's NIC, halving what both get, while a plan re-derived without it looks consistent.",
    fix="bring the link up (cable, switch port, `ip link set IF up`) or give the netdev its "
        "address (the roce_net role); then rerun the env (the boot unit: `systemctl restart "
        "rocetune-env`)",
    source=NCCL_IB_SOURCE + "; NCCL_NET_GDR_LEVEL (PIX/PXB: GPUDirect RDMA at its default level)",
)

declare(
    id="gpu-without-rail", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="A GPU has no compute port of its own",
    checks="Every GPU has a compute port at PIX/PXB (behind its PCIe switch) where other GPUs "
           "have one.",
    reads=PORTS_READ,
    why="That GPU's traffic crosses the CPU to another GPU's NIC: it shares that rail's "
        "bandwidth and loses GPUDirect RDMA at NCCL's default level. On a rail design, a "
        "vanished NIC looks exactly like this once the env is re-derived.",
    fix="find the missing NIC (`rdma link`, `lspci`, `dmesg`); where the hardware has no NIC per "
        "GPU, state the rails in the expectations (rails.per_gpu: false)",
    source="NCCL user guide, NCCL_NET_GDR_LEVEL; NVIDIA DGX H100 user guide (one ConnectX-7 "
           "per GPU)",
)

declare(
    id="rail-slower", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="A compute port runs slower than the others",
    checks="Every chosen compute port runs at the fastest compute port's rate (ports at half "
           "of it or less are left out as storage).",
    reads=PORTS_READ,
    why="A collective runs at the pace of its slowest rail: one port that trained at a lower "
        "speed or width holds back every GPU.",
    fix="check the cable, transceiver and switch port of the slow port (`ethtool IF`, "
        "`mlxlink -d DEV`)",
    source="/sys/class/infiniband/DEV/ports/N/rate (Linux drivers/infiniband/core/sysfs.c); "
           "NCCL ring and tree algorithms (the slowest link bounds the bus bandwidth)",
)

declare(
    id="converged-port", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="The only RDMA port is the front end too",
    checks="Whether the one usable RDMA port also carries the host's default route.",
    reads=PORTS_READ,
    why="Collectives, SSH, storage and the job's own TCP share one link, and the lossless class "
        "set for RoCE governs that port too.",
    fix="a separate compute NIC; or run NCCL over sockets with --set NCCL_IB_DISABLE=1",
    source=NCCL_IB_SOURCE,
)


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
