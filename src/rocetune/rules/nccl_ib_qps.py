"""nccl-ib-qps: queue pairs per connection from the fabric's shape and the host's bonds.

A routed RoCE v2 fabric forwards each queue pair as one UDP flow: every switch hop with several
equal-cost uplinks hashes it onto one of them (ECMP), and a RoCE LAG device (mlx5_bond_N over a
Linux bond) hashes it onto one member link. NCCL's default is one QP per connection (v2.10.3
src/transport/net_ib.cc:353 ... 2.30.7 src/transport/net_ib/connect.cc:60), so a connection is
one flow. NCCL's tuning guide (docs/userguide troubleshooting/performance_and_tuning.rst,
2.30.7:99-122) names the variable as one that can help "on systems with ECMP routing enabled or
multiple ports per NIC" and "on RoCE fabric", but first says "In general we discourage the use of
these variables in production". Published values differ by fabric: 4 (OCI A100 and GB300, GCP A3
Ultra; Azure NDv5 on InfiniBand) and 1 (OCI H100, H200, B200, GB200-v3, MI300X) -- docs/rules/nccl-ib-qps.md.

So the value comes from what is known, not from a vendor average:

* the QoS plan's `fabric:` (docs/qos.md) says flows are hashed over equal-cost paths (`ecmp`,
  or more than one switch tier): 4 QPs, the value the ECMP fabrics above publish;
* a bonded RoCE port (seen on the host): at least 2 QPs per member link, since with one QP a
  connection uses one link of the bond (NCCL #1015; nccl-tests #191/#265);
* otherwise -- no `fabric:` in the plan, or one that says there is no ECMP (a single switch
  tier, a rail-optimised fabric whose rails are one switch each) -- nothing: NCCL's default 1,
  with a note saying what would change it. InfiniBand: nothing (adaptive routing spreads load).

NCCL_IB_SPLIT_DATA_ON_QPS (new in v2.18.1 src/transport/net_ib.cc:966 with 1; 0 from v2.20.3
net_ib.cc:1301) only matters with more than one QP: where the QPs in effect (this rule's value,
or a value the owner declared) exceed 1 and the release splits by default (2.18.1-2.20.2) or is
unknown, it is set to 0, so whole messages go round-robin over the QPs instead of being cut into
pieces on every QP ("may cause a visible latency degradation if many QPs are used", env.rst).
"""

from __future__ import annotations

from typing import List, Optional

from ..model.plan import Decision
from ..nccl import defaults

ID = "nccl-ib-qps"
MAX_QPS = 128  # NCCL_IB_MAX_QPS
ECMP_QPS = 4
QPS_KEY = "NCCL_IB_QPS_PER_CONNECTION"
SPLIT_KEY = "NCCL_IB_SPLIT_DATA_ON_QPS"


def _lag_members(ctx, port) -> Optional[int]:
    """Number of links under a bonded RoCE port, or None when it is not bonded."""
    iface = port.iface or {}
    if iface.get("kind") == "bond":
        return max(2, len(iface.get("slaves") or []))
    if "bond" in port.device:
        return 2  # named like a LAG device but the bond netdev is not visible
    return None


def _declared_qps(ctx) -> Optional[int]:
    mine = ctx.declared.get(QPS_KEY)
    if mine is None:
        return None
    try:
        return int(mine["value"], 0)
    except ValueError:
        return None


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.roce:
        if sel.chosen and sel.link_layer == "InfiniBand":
            ctx.note(f"InfiniBand ports: {QPS_KEY} left at NCCL's default (1)")
        return []
    version = ctx.host.nccl_version()
    vtext = defaults.text(version)
    fabric = ctx.qos.fabric
    hashes = fabric.hashes_flows if fabric is not None else None
    bonded = [(p, n) for p in sel.roce for n in [_lag_members(ctx, p)] if n]
    evidence = {"roce_ports": [p.name for p in sel.roce], "nccl_release": vtext,
                "nccl_default": defaults.default(QPS_KEY, version),
                "fabric": fabric.to_dict() if fabric else None, "plan": ctx.qos.source}

    qps: Optional[int] = None
    reasons = []
    if hashes:
        qps = ECMP_QPS
        reasons.append(f"the fabric plan ({ctx.qos.source}: {fabric.describe()}) hashes each flow onto one "
                       f"of several equal-cost paths and each QP is one UDP flow: {ECMP_QPS} QPs per "
                       "connection spread a connection over paths (NCCL's tuning guide for ECMP; the value "
                       "published for ECMP RoCE fabrics)")
    if bonded:
        members = max(n for _, n in bonded)
        want = min(MAX_QPS, 2 * members)
        qps = max(qps or 1, want)
        evidence["bonded_ports"] = [{"port": p.name, "netdev": p.netdev, "members": n,
                                     "slaves": (p.iface or {}).get("slaves") or []} for p, n in bonded]
        reasons.append(f"a RoCE LAG over {members} links hashes each QP onto one link: at least 2 QPs per "
                       f"link ({want}) so one connection uses every link")
        for p, _ in bonded:
            if (p.iface or {}).get("kind") != "bond":
                ctx.note(f"{p.name} is named like a LAG device but its bond netdev was not seen; "
                         "assumed 2 members")
    if qps is None:
        if fabric is None:
            ctx.note(f"no fabric description (QoS plan: {ctx.qos.source}): {QPS_KEY} left at NCCL's default "
                     "(1), as NCCL's tuning guide advises for production; state `fabric: {tiers: N, ecmp: "
                     "true}` (docs/qos.md) where flows between nodes are hashed over ECMP paths")
        else:
            ctx.note(f"the fabric plan ({ctx.qos.source}: {fabric.describe()}) has no equal-cost paths to "
                     f"spread over: {QPS_KEY} left at NCCL's default (1)")
    out: List[Decision] = []
    if qps is not None:
        out.append(ctx.decision(QPS_KEY, qps, "; ".join(reasons), **evidence))
    split = _split_decision(ctx, version, vtext, qps)
    if split is not None:
        out.append(split)
    return out


def _split_decision(ctx, version, vtext: str, qps: Optional[int]) -> Optional[Decision]:
    """SPLIT_DATA_ON_QPS=0 where more than one QP is in effect and the release splits by default."""
    declared = _declared_qps(ctx)
    in_effect = declared if declared is not None else (qps or defaults.default(QPS_KEY, version) or 1)
    if in_effect <= 1:
        return None
    split = defaults.default(SPLIT_KEY, version)
    if version is not None and split != 1:
        return None
    whose = f"{in_effect} QPs declared in {ctx.declared[QPS_KEY]['source']}" if declared is not None \
        else f"{in_effect} QPs"
    why = ("the NCCL version is unknown and 2.18.1-2.20.2 split every message over all QPs"
           if version is None else f"NCCL {vtext} splits every message over all QPs by default (1)")
    return ctx.decision(SPLIT_KEY, 0,
                        f"{why}: 0 round-robins whole messages over the {whose}, the default from 2.20.3",
                        nccl=ctx.host.nccl_evidence(), qps_in_effect=in_effect)
