"""Lint's check of a traffic class or service level against the fabric's QoS plan, and, without one,
against the QoS state the host's NICs recorded (DSCP trust, PFC per priority)."""

from __future__ import annotations

from typing import Dict

from ..analysis.nic_qos import lossy
from ..checks.binding import emits
from ..envfiles.parsed import Assignment
from ..model.qos import QosPlan
from ..nccl.syntax import strtoll


@emits("tc-contradicts-qos", "tc-ecn-differs")
def check_qos(qos: QosPlan, a: Assignment, add) -> None:
    key, v = a.key, a.value or ""
    if key not in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_FIFO_TC", "NCCL_IB_SL", "NCCL_GIN_IB_TC"):
        return
    n, whole = strtoll(v)
    if not whole or v.lower() == "auto":
        return
    if key == "NCCL_GIN_IB_TC" and n == -1:
        return  # -1: GIN takes NCCL_IB_TC's class (v2.30.7-1 src/transport/net_ib/gin.cc:191, 283)
    src = f"the QoS plan ({qos.source})"
    if key in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_GIN_IB_TC"):
        if n >> 2 != qos.data.dscp:
            add("tc-contradicts-qos", "error", a.line, key,
                f"{key}={n} sends DSCP {n >> 2}; {src} has RoCE data on DSCP {qos.data.dscp}",
                f"set {key}={qos.traffic_class}")
        elif n & 3 != qos.ecn:
            add("tc-ecn-differs", "warning", a.line, key,
                f"{key}={n} marks ECN {n & 3}, {src} uses {qos.ecn} ({qos.ecn_text})",
                f"set {key}={qos.traffic_class}")
    elif key == "NCCL_IB_FIFO_TC" and qos.cts_dscp is not None and n >> 2 != qos.cts_dscp:
        add("tc-contradicts-qos", "error", a.line, key,
            f"NCCL_IB_FIFO_TC={n} sends DSCP {n >> 2}; {src} puts credit messages on DSCP {qos.cts_dscp}",
            f"set NCCL_IB_FIFO_TC={qos.fifo_traffic_class}")
    elif key == "NCCL_IB_SL" and qos.trust == "pcp" and (n & 7) != qos.data.priority:
        add("tc-contradicts-qos", "error", a.line, key,
            f"NCCL_IB_SL={n} gives VLAN priority {n & 7}; {src} trusts PCP with data on priority "
            f"{qos.data.priority}", f"set NCCL_IB_SL={qos.data.priority}")


@emits("tc-lossy-on-nics")
def check_nic_qos(states: Dict[str, dict], a: Assignment, add) -> None:
    """A traffic class the host's NICs carry in a class without PFC: what rule traffic-class warns of for
    the env it plans (analysis.nic_qos), said of the file linted too."""
    if a.key not in ("NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS", "NCCL_GIN_IB_TC"):
        return
    n, whole = strtoll(a.value or "")
    if not whole:
        return
    why = lossy(states, n)
    if why:
        add("tc-lossy-on-nics", "warning", a.line, a.key, f"{a.key}={n} (DSCP {n >> 2}): {why}",
            "use the DSCP the NICs give a PFC priority, or apply the fabric's QoS plan (roce_qos role)")
