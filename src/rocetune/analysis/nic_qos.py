"""Whether the NICs' recorded QoS state carries a RoCE traffic class losslessly.

Under DSCP trust a NIC maps the DSCP of a packet (the traffic class byte >> 2) to a priority; RoCE is
lossless only when PFC is on for that priority (NVIDIA MLNX_OFED documentation, mlnx_qos). Read from the
probe's `qos.interfaces` (mlnx_qos -i IF or dcb), per netdev of a RoCE compute port. Used by rule
traffic-class (a declared NCCL_IB_TC) and by lint (an env file's class, without a QoS plan)."""

from __future__ import annotations

from typing import Dict, List, Optional


def roce_states(features: dict) -> Dict[str, dict]:
    """netdev -> recorded QoS state, for the netdevs of the host's RoCE (Ethernet link layer) ports."""
    table = (features.get("qos") or {}).get("interfaces") or {}
    out = {}
    for d in (features.get("rdma") or {}).get("devices") or []:
        for p in d.get("ports") or []:
            nd = p.get("netdev")
            if p.get("link_layer") == "Ethernet" and nd and isinstance(table.get(nd), dict):
                out[nd] = table[nd]
    return out


def lossy(states: Dict[str, dict], tc: int) -> Optional[str]:
    """Why traffic class `tc` is lossy on these NICs ("the NICs put it in a lossy class: ..."), or None."""
    if tc < 0:
        return None
    dscp = tc >> 2
    bad: List[str] = []
    for nd, s in sorted(states.items()):
        prio = (s.get("dscp_prio") or {}).get(str(dscp))
        if s.get("trust") == "dscp" and prio not in (s.get("pfc_enabled") or []):
            bad.append(f"{nd} maps DSCP {dscp} to priority {prio}, PFC is on {s.get('pfc_enabled')}")
    return ("the NICs put it in a lossy class: " + "; ".join(bad)) if bad else None
