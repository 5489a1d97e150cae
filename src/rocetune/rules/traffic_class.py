"""traffic-class: RoCE packets carry the DSCP and priority the fabric's QoS plan expects.

NCCL writes NCCL_IB_TC into the traffic-class byte of every RoCE packet (DSCP in the top six
bits, ECN in the low two); without it the byte is 0 and RoCE lands in the best-effort, lossy
queue. The values come from the QoS plan (rocetune.qos, /etc/rocetune/qos.yml) that the switch
configuration also reads, so they cannot disagree:

* NCCL_IB_TC = data DSCP << 2 | ECN (106 for DSCP 26 with ECT(0), UCX's own default);
* NCCL_IB_SL = the data priority, so the VLAN priority is right if a port trusts PCP;
* NCCL_IB_FIFO_TC only when the plan gives credit (CTS) messages their own DSCP;
* UCX_IB_TRAFFIC_CLASS = the same byte, so MPI/UCX traffic shares the lossless class.

The sender's values govern both directions of a connection, so every node must agree: ship the
same plan everywhere. Nothing is set for InfiniBand (the traffic class is a RoCE GRH field).
"""

from __future__ import annotations

from typing import List

from ..model.plan import Decision

ID = "traffic-class"


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.roce:
        if sel.chosen:
            ctx.note("InfiniBand fabric: the traffic class is a RoCE setting; the subnet manager's "
                     "SL-to-VL mapping applies instead")
        return []
    q = ctx.qos
    tc = q.traffic_class
    evidence = {"qos": q.to_dict(), "roce_ports": [p.name for p in sel.roce]}
    out = [
        ctx.decision("NCCL_IB_TC", tc,
                     f"DSCP {q.data.dscp} << 2 | {q.ecn_text} = {tc}: the data class of the QoS plan "
                     f"({q.source}), priority {q.data.priority}", **evidence),
        ctx.decision("NCCL_IB_SL", q.data.priority,
                     f"data priority {q.data.priority}: the VLAN priority RoCE gets where a port "
                     f"trusts PCP (trust is {q.trust} in the plan)", **evidence),
        ctx.decision("UCX_IB_TRAFFIC_CLASS", tc,
                     "the same class for UCX (MPI, UCC) traffic on the RoCE ports", **evidence),
    ]
    if q.fifo_traffic_class is not None:
        out.append(ctx.decision(
            "NCCL_IB_FIFO_TC", q.fifo_traffic_class,
            f"credit (CTS) messages get DSCP {q.cts_dscp} as the QoS plan asks", **evidence))
    if q.data.priority not in q.lossless_priorities and q.lossless_priorities:
        ctx.warn(f"the QoS plan puts RoCE data on priority {q.data.priority}, which is not lossless "
                 f"({list(q.lossless_priorities)})")
    return out
