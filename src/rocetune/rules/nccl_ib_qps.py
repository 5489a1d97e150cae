"""nccl-ib-qps: several queue pairs per connection on RoCE, so ECMP and LAG hashing spread them.

A routed RoCE v2 fabric forwards each queue pair as one UDP flow: every switch hop hashes it onto
one ECMP path, and a RoCE LAG device (mlx5_bond_N over a Linux bond) hashes it onto one member
link. With NCCL's default of one QP per connection (1 in every release, 2.12.12 .. 2.30.7:
2.30.7 src/transport/net_ib/connect.cc:60) a connection is one flow, and a few elephant flows
collide on one path. NCCL's own guidance: "On RoCE fabric, using multiple QPs per connection is
often necessary to achieve optimal performance" and, for ECMP, more QPs "can improve path
diversity" (docs/userguide troubleshooting/performance_and_tuning.rst). Vendors ship 4 on RoCE
(OCI A100 /etc/nccl.conf, GCP A3 Ultra's gIB set_nccl_env.sh, OCI-OKE GB200) -- rocetune does too:

* RoCE ports: NCCL_IB_QPS_PER_CONNECTION=4; on a bond, at least 2 per member link (with two
  members a connection then leaves a link idle only when all four QPs hash to one side).
* NCCL_IB_SPLIT_DATA_ON_QPS=0 where the release's default is 1 -- 2.18.1 to 2.20.2 (v2.18.1
  src/transport/net_ib.cc:966; 0 from 2.20.3, net_ib.cc:1301) -- or where the release is
  unknown: messages then go round-robin whole over the QPs instead of being cut in pieces on
  every QP (which the docs warn "may cause a visible latency degradation if many QPs are used").
* InfiniBand: nothing (adaptive routing and the subnet manager spread traffic; NCCL's default
  stays) -- set it with --set where a measurement says otherwise.
"""

from __future__ import annotations

from typing import List, Optional

from ..model.plan import Decision
from ..nccl import defaults

ID = "nccl-ib-qps"
MAX_QPS = 128
ROCE_QPS = 4


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
    if not sel.roce:
        if sel.chosen and sel.link_layer == "InfiniBand":
            ctx.note("InfiniBand ports: NCCL_IB_QPS_PER_CONNECTION left at NCCL's default (1)")
        return []
    bonded = [(p, n) for p in sel.roce for n in [_lag_members(ctx, p)] if n]
    version = ctx.host.nccl_version()
    vtext = defaults.text(version)
    qps = ROCE_QPS
    evidence = {"roce_ports": [p.name for p in sel.roce], "nccl_release": vtext,
                "nccl_default": defaults.default("NCCL_IB_QPS_PER_CONNECTION", version)}
    reason = (f"RoCE v2: each QP is one UDP flow that ECMP hashes onto one path; {qps} QPs per "
              "connection give the hash entropy NCCL's guidance asks for on RoCE (vendor value 4)")
    if bonded:
        members = max(n for _, n in bonded)
        if 2 * members > qps:
            qps = min(MAX_QPS, 2 * members)
        evidence["bonded_ports"] = [{"port": p.name, "netdev": p.netdev, "members": n,
                                     "slaves": (p.iface or {}).get("slaves") or []} for p, n in bonded]
        reason = (f"RoCE LAG over {members} links hashes each QP onto one link, and ECMP each QP onto "
                  f"one path: {qps} QPs (at least 2 per link) spread a connection")
        for p, _ in bonded:
            if not (p.iface or {}).get("kind") == "bond":
                ctx.note(f"{p.name} is named like a LAG device but its bond netdev was not seen; "
                         "assumed 2 members")
    out = [ctx.decision("NCCL_IB_QPS_PER_CONNECTION", qps, reason, **evidence)]
    split = defaults.default("NCCL_IB_SPLIT_DATA_ON_QPS", version)
    if version is None or split == 1:
        why = ("the NCCL version is unknown and 2.18.1-2.20.2 split every message over all QPs"
               if version is None else f"NCCL {vtext} splits every message over all QPs by default (1)")
        out.append(ctx.decision("NCCL_IB_SPLIT_DATA_ON_QPS", 0,
                                f"{why}: 0 round-robins whole messages over the {qps} QPs, the "
                                "default from 2.20.3", nccl=ctx.host.nccl_evidence()))
    return out
