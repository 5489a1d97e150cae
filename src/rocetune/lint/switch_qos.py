"""A switch's running QoS against the QoS plan: one finding per disagreement (the switch-* checks
of rocetune.checks.switch), per group of ports that share their QoS."""

from __future__ import annotations

from typing import List, Optional

from ..checks import finding
from ..model.finding import Finding
from ..model.qos import QosPlan
from ..model.switch_qos import QueueReading, SwitchIntent, SwitchQos, SwitchReading

# Thresholds printed rounded (NVUE: 146.48 KB) or in decimal kbytes read as binary: within 3% agrees.
TOLERANCE = 0.03


def compare(plan: QosPlan, switch: SwitchQos) -> List[Finding]:
    intent = SwitchIntent.from_plan(plan)
    out: List[Finding] = []
    for group in switch.groups:
        out += _group(intent, group, switch)
    return out


def _group(intent: SwitchIntent, g: SwitchReading, switch: SwitchQos) -> List[Finding]:
    out: List[Finding] = []
    subject = g.subject
    ev = {"source": switch.source, "kind": switch.kind}
    if g.trust is None:
        out.append(finding("switch-trust-mismatch", subject, "not checked: the output states no trust mode",
                           severity="info", evidence=ev))
    elif g.trust not in (intent.trust, "both"):
        out.append(finding("switch-trust-mismatch", subject,
                           f"the switch trusts {g.trust}, the plan's hosts mark {intent.trust}",
                           evidence=dict(ev, trust=g.trust, plan=intent.trust)))
    data_tc = _class_of(g, intent.data_dscp) if intent.trust == "dscp" else intent.data_class
    if data_tc is None:
        out.append(finding("switch-data-class-mismatch", subject,
                           f"not checked: DSCP {intent.data_dscp} is {g.dscp_default or 'not in the output'}",
                           severity="info", evidence=ev))
    elif data_tc != intent.data_class:
        lossy = "lossy (no PFC)" if g.pfc is not None and data_tc not in g.pfc else (
            "lossless" if g.pfc is not None else "of unknown PFC state")
        out.append(finding("switch-data-class-mismatch", subject,
                           f"DSCP {intent.data_dscp} goes to traffic class {data_tc}, {lossy}; the plan's hosts send "
                           f"RoCE data there expecting class {intent.data_class}",
                           evidence=dict(ev, dscp=intent.data_dscp, traffic_class=data_tc,
                                         pfc=None if g.pfc is None else list(g.pfc))))
    cnp_tc = _class_of(g, intent.cnp_dscp) if intent.trust == "dscp" else intent.cnp_class
    if cnp_tc is None:
        out.append(finding("switch-cnp-class-mismatch", subject,
                           f"not checked: DSCP {intent.cnp_dscp} is {g.dscp_default or 'not in the output'}",
                           severity="info", evidence=ev))
    elif cnp_tc != intent.cnp_class:
        out.append(finding("switch-cnp-class-mismatch", subject,
                           f"CNP DSCP {intent.cnp_dscp} goes to traffic class {cnp_tc}, the plan's is {intent.cnp_class}",
                           evidence=dict(ev, dscp=intent.cnp_dscp, traffic_class=cnp_tc)))
    out += _pfc(intent, g, subject, ev)
    out += _ecn(intent, g, subject, ev)
    cnp_queue = g.queues.get(g.queue_of(intent.cnp_class))
    if cnp_queue is None or cnp_queue.strict is None:
        out.append(finding("switch-cnp-not-strict", subject,
                           f"not checked: the output does not say how queue {g.queue_of(intent.cnp_class)} is scheduled",
                           severity="info", evidence=ev))
    elif not cnp_queue.strict:
        out.append(finding("switch-cnp-not-strict", subject,
                           f"queue {g.queue_of(intent.cnp_class)} (CNP class {intent.cnp_class}) is weighted, not strict",
                           evidence=dict(ev, queue=g.queue_of(intent.cnp_class))))
    return out


def _class_of(g: SwitchReading, dscp: int) -> Optional[int]:
    if dscp in g.dscp_to_tc:
        return g.dscp_to_tc[dscp]
    if g.dscp_default and g.dscp_default.endswith("traffic class 0"):
        return 0
    return None


def _pfc(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    if g.pfc is None:
        return [finding("switch-pfc-missing", subject, "not checked: the output states no PFC priorities",
                        severity="info", evidence=ev)]
    out = []
    missing = [p for p in intent.lossless if p not in g.pfc]
    if missing:
        out.append(finding("switch-pfc-missing", subject,
                           f"PFC is off on priority {', '.join(map(str, missing))} (on: {_list(g.pfc)}); the plan "
                           f"makes {_list(intent.lossless)} lossless",
                           evidence=dict(ev, pfc=list(g.pfc), plan=list(intent.lossless))))
    extra = [p for p in g.pfc if p not in intent.lossless]
    if extra:
        out.append(finding("switch-pfc-extra", subject,
                           f"PFC is on for priority {', '.join(map(str, extra))}, which the plan keeps lossy",
                           evidence=dict(ev, pfc=list(g.pfc), plan=list(intent.lossless))))
    return out


def _ecn(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    queue = g.queue_of(intent.data_class)
    q: QueueReading = g.queues.get(queue, QueueReading())
    ev = dict(ev, queue=queue)
    if q.ecn is None:
        return [finding("switch-ecn-off", subject, f"not checked: the output does not say whether queue {queue} marks ECN",
                        severity="info", evidence=ev)]
    if not q.ecn:
        return [finding("switch-ecn-off", subject, f"queue {queue} (data class {intent.data_class}) marks no ECN",
                        evidence=ev)]
    if q.min_threshold is None or q.max_threshold is None:
        why = f"thresholds in {q.threshold_unit}" if q.threshold_unit not in ("bytes", "kbytes", "mbytes") else "no thresholds"
        return [finding("switch-ecn-thresholds-differ", subject, f"not checked: queue {queue} states {why}",
                        severity="info", evidence=ev)]
    want = intent.ecn
    differ = []
    for name, have, plan in (("minimum", q.min_threshold, want.min_threshold),
                             ("maximum", q.max_threshold, want.max_threshold)):
        if abs(have - plan) > TOLERANCE * plan:
            differ.append(f"{name} {int(round(have))} bytes (plan {plan})")
    if q.probability is not None and q.probability != want.probability:
        differ.append(f"probability {q.probability}% (plan {want.probability}%)")
    if not differ:
        return []
    return [finding("switch-ecn-thresholds-differ", subject, f"queue {queue}: " + ", ".join(differ),
                    evidence=dict(ev, min_threshold=q.min_threshold, max_threshold=q.max_threshold,
                                  probability=q.probability))]


def _list(values) -> str:
    return ", ".join(map(str, values)) if values else "none"
