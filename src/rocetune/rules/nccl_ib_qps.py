"""nccl-ib-qps: at least two queue pairs per connection on bonded (RoCE LAG) ports.

A RoCE LAG device (mlx5_bond_N over a Linux bond) hashes each queue pair onto one member link,
so with NCCL's default of one QP per connection a connection uses half the bond (public reports:
~240 Gb/s from NCCL against ~395 Gb/s from ib_write_bw on 2x200G). More QPs are more flows to
hash. rocetune sets two QPs per bond member: with two members a connection then leaves one link
idle only when all four QPs hash to the same side (1 time in 8), where a single QP always does. Messages are round-robined whole
over the QPs (NCCL_IB_SPLIT_DATA_ON_QPS=0, the default since 2.20), so nothing else changes.
Plain, unbonded ports keep NCCL's default.
"""

from __future__ import annotations

from typing import List, Optional

from ..model.plan import Decision

ID = "nccl-ib-qps"
MAX_QPS = 128


def _lag_members(ctx, port) -> Optional[int]:
    """Number of links under a bonded RoCE port, or None when it is not bonded."""
    iface = port.iface or {}
    if iface.get("kind") == "bond":
        return max(2, len(iface.get("slaves") or []))
    if "bond" in port.device:
        return 2  # named like a LAG device but the bond netdev is not visible
    return None


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    bonded = []
    for p in sel.roce:
        n = _lag_members(ctx, p)
        if n:
            bonded.append((p, n))
    if not bonded:
        if sel.roce:
            ctx.note("no bonded RoCE port: NCCL_IB_QPS_PER_CONNECTION left at NCCL's default (1); "
                     "fabrics with poor ECMP entropy may still gain from more QPs")
        return []
    members = max(n for _, n in bonded)
    qps = min(MAX_QPS, 2 * members)
    evidence = {"bonded_ports": [{"port": p.name, "netdev": p.netdev, "members": n,
                                  "slaves": (p.iface or {}).get("slaves") or []} for p, n in bonded]}
    for p, n in bonded:
        if not (p.iface or {}).get("kind") == "bond":
            ctx.note(f"{p.name} is named like a LAG device but its bond netdev was not seen; "
                     "assumed 2 members")
    return [ctx.decision(
        "NCCL_IB_QPS_PER_CONNECTION", qps,
        f"RoCE LAG over {members} links hashes each QP onto one link: {qps} QPs (2 per link) "
        "spread a connection over the bond",
        **evidence)]
