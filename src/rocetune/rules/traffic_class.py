"""traffic-class: RoCE packets carry the DSCP/priority the fabric treats as lossless -- set only
from an explicit QoS plan or from the QoS state the NICs show, never from a guess.

NCCL writes NCCL_IB_TC into the traffic-class byte of every RoCE packet (DSCP in the top six bits,
ECN in the low two) and NCCL_IB_SL into the service level (the VLAN priority under PCP trust).
Unset, the byte is 0 up to NCCL 2.25.x, and from 2.26.2 the application's
ncclConfig_t.trafficClass, else 0 (v2.26.2 src/transport/net_ib.cc:101-102; 2.30.7
src/transport/net_ib/connect.cc:996-1001). A value that does not match the switches is worse
than none, and fabrics differ (OCI uses 41 = DSCP 10 + ECT(1), GCP 52 = DSCP 13): so rocetune
sets these only from one of two sources of truth, in this order:

1. an explicit QoS plan (`--qos FILE` or /etc/rocetune/qos.yml under the root; docs/qos.md),
   which the switch and NIC configuration read too: NCCL_IB_TC = data DSCP << 2 | ECN,
   NCCL_IB_SL = data priority, NCCL_IB_FIFO_TC when the plan gives credit (CTS) messages their
   own DSCP, UCX_IB_TRAFFIC_CLASS = NCCL_IB_TC. Where the NICs' observed state disagrees (the
   plan's DSCP lands on a priority without PFC), a finding says so;
2. the NICs' observed QoS state (the probe's `qos` source: `mlnx_qos -i IF` or `dcb`) on the
   compute ports: under DSCP trust with exactly one PFC-enabled priority P, NCCL_IB_TC is built
   from a DSCP that every port maps to P (DSCP 26, the RoCE convention, when it is one of them,
   else the only or the lowest one) with ECT(0) in the ECN bits, so DCQCN can mark it; under PCP
   trust NCCL_IB_SL = P. The evidence names each port's trust, map entry and PFC set.

Either way only the hosts' half is known: the switches' DSCP-to-queue map and PFC are not
visible from a host, and every reason says they were not checked.

The built-in default plan (DSCP 26, priority 3) sets nothing: it is a convention, not a fact
about this fabric. The sender's values govern both directions of a connection (they travel in
the connection handshake), so every node must agree. Nothing is set for InfiniBand.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..analysis.nic_qos import lossy
from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..model.qos import default_plan

ID = "traffic-class"


declare(
    id="qos-plan-nic-mismatch", kind="rule", severity="warning",
    by=("traffic-class",),
    title="A NIC's QoS does not match the QoS plan",
    checks="Each compute NIC's recorded trust mode, DSCP-to-priority map and PFC priorities "
           "against the QoS plan's data class.",
    reads="The recorded `mlnx_qos -i <if>` output per interface (the Features `qos.interfaces`) "
          "and the QoS plan (--qos, /etc/rocetune/qos.yml, or the default).",
    why="NCCL_IB_TC marks RoCE data with the plan's DSCP; a NIC that trusts PCP, maps that DSCP to "
        "another priority or has no PFC on it sends RoCE lossy: drops become go-back-N "
        "retransmissions and timeouts under load.",
    fix="apply the QoS plan to the NIC with the roce_qos role (trust dscp, the DSCP map, PFC on "
        "the data priority), and the same plan on the switches",
    source="NVIDIA MLNX_OFED documentation, mlnx_qos; NVIDIA/nccl v2.28.9-1 "
           "src/transport/net_ib.cc (NCCL_IB_TC sets the traffic class of each queue pair).",
)

declare(
    id="qos-plan-questionable", kind="rule", severity="warning",
    by=("traffic-class",),
    title="The QoS plan puts RoCE in a questionable class",
    checks="Whether the plan's data priority is lossless, data and CNPs have their own "
           "priorities, and some priority is lossless.",
    reads="The QoS plan (/etc/rocetune/qos.yml or --qos).",
    why="RoCE data outside the lossless priorities drops under congestion; CNPs that queue "
        "behind data slow DCQCN down.",
    fix="correct the plan (docs/qos.md) and apply it with the roce_qos role",
    source="NVIDIA, 'RoCE configuration for ConnectX' (PFC on the RoCE priority, CNP priority 6)",
)

declare(
    id="tc-not-derived", kind="rule", severity="warning",
    by=("traffic-class",),
    title="The NICs' QoS gives no traffic class",
    checks="Where the NICs show QoS state and no QoS plan is given: whether every RoCE port "
           "trusts one field and has one PFC priority in common.",
    reads="`mlnx_qos -i IF` or `dcb` on each compute port (the Features `qos.interfaces`).",
    why="Without a common lossless class NCCL_IB_TC is left unset and RoCE goes out in traffic "
        "class 0: lossy wherever the switches give it no PFC. One rail with PFC off is enough.",
    fix="apply the fabric's QoS to every rail (the roce_qos role), or give the plan with --qos",
    source="NVIDIA/nccl v2.26.2 src/transport/net_ib.cc (NCCL_IB_TC, NCCL_IB_SL); IEEE 802.1Qbb",
)
CONVENTIONAL_DSCP = 26
ECT0 = 2


# What no host-side evidence can show: the switches' own classification.
SWITCH_UNCHECKED = ("the switches' DSCP-to-queue map and PFC were not checked (a host sees neither "
                    "the ToR's classifier nor its lossless queues)")


def explicit_plan(qos) -> bool:
    """A plan file that states QoS classes (a file with only `fabric:` states none)."""
    return (qos is not None and qos.source != default_plan().source
            and getattr(qos, "classes_stated", True))


def observed(features: dict, ports) -> Dict[str, dict]:
    """netdev -> QoS state for the compute ports whose state the probe recorded."""
    table = (features.get("qos") or {}).get("interfaces") or {}
    return {p.netdev: table[p.netdev] for p in ports if p.netdev and p.netdev in table}


def lossless_dscp(states: Dict[str, dict]) -> Tuple[Optional[int], Optional[int], List[int], str]:
    """(dscp, priority, alternatives, why-not) derived from the ports' DSCP trust state."""
    trusts = {s.get("trust") for s in states.values()}
    if trusts != {"dscp"}:
        return None, None, [], f"trust mode is {', '.join(sorted(str(t) for t in trusts))}, not dscp on every port"
    pfc = [set(s.get("pfc_enabled") or []) for s in states.values()]
    common = set.intersection(*pfc) if pfc else set()
    if len(common) != 1:
        what = "no" if not common else f"{len(common)} ({sorted(common)})"
        return None, None, [], f"{what} PFC-enabled priority common to every port"
    prio = common.pop()
    dscps = None
    for s in states.values():
        mine = {int(d) for d, p in (s.get("dscp_prio") or {}).items() if p == prio}
        dscps = mine if dscps is None else dscps & mine
    if not dscps:
        return None, prio, [], f"no DSCP maps to PFC priority {prio} on every port"
    pick = CONVENTIONAL_DSCP if CONVENTIONAL_DSCP in dscps else min(dscps)
    return pick, prio, sorted(dscps), ""


def rule(features: dict, ctx) -> List[Decision]:
    sel = ctx.host.selection()
    if not sel.roce:
        if sel.chosen and sel.link_layer == "InfiniBand":
            ctx.note("InfiniBand fabric: the traffic class is a RoCE setting; the subnet manager's "
                     "SL-to-VL mapping applies instead")
        return []
    states = observed(features, sel.roce)
    _register_check(ctx, states)
    if explicit_plan(ctx.qos):
        return _from_plan(ctx, sel, states)
    if states:
        return _from_nics(ctx, sel, states)
    ctx.note("no QoS plan (--qos or /etc/rocetune/qos.yml) and no NIC QoS state (mlnx_qos/dcb) on "
             "the compute ports: NCCL_IB_TC/NCCL_IB_SL are left to NCCL (traffic class 0, or the "
             "application's ncclConfig_t.trafficClass from NCCL 2.26.2); give the fabric's plan to "
             "put RoCE in its lossless class")
    return []


def _state_evidence(states: Dict[str, dict], prio: Optional[int], dscp: Optional[int]) -> List[Dict[str, Any]]:
    return [{"netdev": nd, "tool": s.get("tool"), "trust": s.get("trust"),
             "pfc_enabled": s.get("pfc_enabled"),
             "dscp_to_priority": None if dscp is None else (s.get("dscp_prio") or {}).get(str(dscp))}
            for nd, s in sorted(states.items())]


@emits("qos-plan-nic-mismatch", "qos-plan-questionable")
def _from_plan(ctx, sel, states) -> List[Decision]:
    q = ctx.qos
    tc = q.traffic_class
    evidence = {"qos": q.to_dict(), "roce_ports": [p.name for p in sel.roce],
                "switch_side": SWITCH_UNCHECKED}
    if states:
        evidence["nic_qos"] = _state_evidence(states, q.data.priority, q.data.dscp)
        for nd, s in sorted(states.items()):
            got = (s.get("dscp_prio") or {}).get(str(q.data.dscp))
            pfc = s.get("pfc_enabled") or []
            if s.get("trust") != q.trust or got != q.data.priority or q.data.priority not in pfc:
                ctx.finding("qos-plan-nic-mismatch", "warning", nd,
                            f"{nd} trusts {s.get('trust')}, maps DSCP {q.data.dscp} to priority {got} and "
                            f"has PFC on {pfc}; the QoS plan ({q.source}) expects {q.trust} trust, DSCP "
                            f"{q.data.dscp} -> priority {q.data.priority} lossless: run the roce_qos role",
                            command=f"mlnx_qos -i {nd}", trust=s.get("trust"), dscp_priority=got,
                            pfc_enabled=pfc)
    out = [
        ctx.decision("NCCL_IB_TC", tc,
                     f"DSCP {q.data.dscp} << 2 | {q.ecn_text} = {tc}: the data class of the QoS plan "
                     f"({q.source}), priority {q.data.priority}; {SWITCH_UNCHECKED}: they must be "
                     "configured from the same plan", **evidence),
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
        ctx.finding("qos-plan-questionable", "warning", q.source,
                    f"the QoS plan puts RoCE data on priority {q.data.priority}, which is not lossless "
                    f"({list(q.lossless_priorities)})", qos=q.to_dict())
    return out


@emits("tc-not-derived")
def _from_nics(ctx, sel, states) -> List[Decision]:
    missing = [p.netdev or p.name for p in sel.roce if p.netdev not in states]
    if missing:
        ctx.note("no QoS state recorded for " + ", ".join(missing) + ": derived from the other ports")
    trusts = {s.get("trust") for s in states.values()}
    if trusts == {"pcp"}:
        pfc = [set(s.get("pfc_enabled") or []) for s in states.values()]
        common = set.intersection(*pfc)
        if len(common) != 1:
            ctx.finding("tc-not-derived", "warning", "NCCL_IB_SL",
                        f"PCP trust with PFC on {sorted(common) or 'no common priority'}: NCCL_IB_SL not derived",
                        nic_qos=_state_evidence(states, None, None))
            return []
        prio = common.pop()
        return [ctx.decision("NCCL_IB_SL", prio,
                             f"the NICs trust PCP and priority {prio} is the one with PFC: RoCE's service "
                             f"level becomes its VLAN priority; {SWITCH_UNCHECKED}",
                             nic_qos=_state_evidence(states, prio, None), switch_side=SWITCH_UNCHECKED)]
    dscp, prio, alternatives, why = lossless_dscp(states)
    if dscp is None:
        ctx.finding("tc-not-derived", "warning", "NCCL_IB_TC",
                    f"NIC QoS state recorded but no lossless class can be derived ({why}): NCCL_IB_TC left "
                    "to NCCL, so RoCE goes out in traffic class 0; apply the fabric's QoS to every rail, "
                    "or give its plan with --qos", nic_qos=_state_evidence(states, None, None))
        return []
    tc = (dscp << 2) | ECT0
    chosen = ("DSCP 26, the RoCE convention" if dscp == CONVENTIONAL_DSCP else
              f"DSCP {dscp}" + (" (the only one)" if len(alternatives) == 1 else " (the lowest)"))
    evidence = {"nic_qos": _state_evidence(states, prio, dscp), "dscps_on_priority": alternatives,
                "roce_ports": [p.name for p in sel.roce], "switch_side": SWITCH_UNCHECKED}
    if len(alternatives) > 1:
        ctx.note(f"DSCPs {alternatives} all map to PFC priority {prio} on the NICs; took {dscp}. The "
                 "switches must classify it the same way: state it in a QoS plan to be sure")
    reason = (f"the NICs trust DSCP and PFC protects only priority {prio}; {chosen} maps to it on "
              f"every compute port: {dscp} << 2 | ECT(0) = {tc}. This is the hosts' side only: "
              f"{SWITCH_UNCHECKED}")
    return [ctx.decision("NCCL_IB_TC", tc, reason, **evidence),
            ctx.decision("UCX_IB_TRAFFIC_CLASS", tc,
                         "the same class for UCX (MPI, UCC) traffic on the RoCE ports", **evidence)]


def _register_check(ctx, states) -> None:
    if not states:
        return

    def check(value: str) -> Optional[str]:
        try:
            tc = int(value, 0)
        except ValueError:
            return f"{value!r} is not a number"
        return lossy(states, tc)

    ctx.check_declared("NCCL_IB_TC", check)
