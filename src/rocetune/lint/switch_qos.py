"""A switch's running QoS against the QoS plan: one finding per disagreement (the switch-* checks
of rocetune.lint.switch_declarations), per group of ports that share their QoS.

Each RoCE class of the plan (data, CNP, and CTS when the plan has it) is followed through the
switch as rocetune.model.switch_qos describes: its DSCP (or VLAN priority) to a priority, which is
what PFC and the hosts agree on; the priority to a traffic class and a queue, which is where ECN
marking and scheduling are read; and for a lossless priority the ingress and egress buffers."""

from __future__ import annotations

from typing import Dict, List

from ..checks import finding
from ..checks.binding import emits
from ..model.finding import Finding
from ..model.qos import QosPlan
from ..model.switch_qos import QueueReading, RoceClass, SwitchIntent, SwitchQos, SwitchReading, subject_of

# Thresholds printed rounded (NVUE: 146.48 KB) or in decimal kbytes read as binary: within 3% agrees.
TOLERANCE = 0.03
# Thresholds an ASIC reports as programmed may lie above the configured value by its granularity:
# NVIDIA documents 150,000 bytes as 159,744 (156 KB) on Spectrum-4, 6.5% above.
PROGRAMMED_ABOVE = 0.10
_UNBOUND_LISTED = 8


@emits("switch-ports-unbound")
def compare(plan: QosPlan, switch: SwitchQos) -> List[Finding]:
    intent = SwitchIntent.from_plan(plan)
    out: List[Finding] = []
    for group in switch.groups:
        out += _group(intent, group, switch)
    out += _unbound(switch)
    out += _discards(intent, switch)
    if not switch.groups:
        out.append(finding("switch-ports-unbound", "switch", "the output binds QoS to no port (SONiC: no "
                           "PORT_QOS_MAP entry): nothing in it is lossless", severity="error",
                           evidence={"source": switch.source, "kind": switch.kind}))
    elif switch.bound_nowhere:
        out.append(finding("switch-ports-unbound", "switch", switch.bound_nowhere, severity="error",
                           evidence={"source": switch.source, "kind": switch.kind}))
    return out


@emits("switch-cnp-not-strict")
def _group(intent: SwitchIntent, g: SwitchReading, switch: SwitchQos) -> List[Finding]:
    out: List[Finding] = []
    subject = g.subject
    ev = {"source": switch.source, "kind": switch.kind}
    word = switch.priority_word
    out += _trust(intent, g, subject, ev)
    for c in intent.classes:
        out += _class(intent, c, g, subject, ev, word)
    out += _pfc(intent, g, subject, ev)
    out += _buffers(intent, g, subject, ev, word)
    out += _ecn(intent, g, subject, ev, word)
    out += _watchdog(intent, g, subject, ev)
    out += _watchdog_settings(intent, g, subject, ev)
    out += _cable(intent, g, subject, ev)
    cnp_queue = g.queue_of(intent.cnp.priority)
    q = g.queues.get(cnp_queue)
    if q is None or q.strict is None:
        out.append(finding("switch-cnp-not-strict", subject,
                           f"not checked: the output does not say how queue {cnp_queue} is scheduled",
                           severity="info", evidence=ev))
    elif not q.strict:
        out.append(finding("switch-cnp-not-strict", subject,
                           f"queue {cnp_queue} (CNP {word} {intent.cnp.priority}) is weighted, not strict",
                           evidence=dict(ev, queue=cnp_queue)))
    return out


@emits("switch-trust-mismatch")
def _trust(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    if g.trust is None:
        return [finding("switch-trust-mismatch", subject, "not checked: the output states no trust mode",
                        severity="info", evidence=ev)]
    if g.trust == intent.trust == "pcp" and g.routed:
        return [finding("switch-trust-mismatch", subject,
                        "the ports trust the VLAN priority (PCP) but route: RoCE v2 arrives untagged on a routed port "
                        "and carries no PCP, so it is classified by the port's default", severity="warning",
                        evidence=dict(ev, trust=g.trust, routed=True))]
    if g.trust == intent.trust or (g.trust == "both" and intent.trust == "dscp"):
        return []
    if g.trust == "both":  # trusting both classifies IP packets, RoCE v2's, by DSCP
        why = "the switch trusts PCP and DSCP, which classifies IP packets (RoCE v2) by DSCP"
    elif g.trust == "none":
        why = "the switch trusts neither DSCP nor PCP (`no qos trust`)"
    else:
        why = f"the switch trusts {g.trust}"
    return [finding("switch-trust-mismatch", subject, f"{why}; the plan's hosts mark {intent.trust}",
                    evidence=dict(ev, trust=g.trust, plan=intent.trust))]


_CLASS_NAME = {"data": "RoCE data", "cnp": "CNP", "cts": "credit (CTS)"}


def _class(intent: SwitchIntent, c: RoceClass, g: SwitchReading, subject: str, ev, word: str) -> List[Finding]:
    if intent.trust == "pcp":
        if c.name != "data":
            return []  # under PCP trust the hosts tag every RoCE class with its priority directly
        got = g.priority_of_pcp(c.priority)
        said = f"VLAN priority {c.priority}"
    else:
        said = f"DSCP {c.dscp}"
        mapped = g.priority_of_dscp(c.dscp)
        if mapped is None:
            return [_class_finding(c.name, subject,
                                   f"not checked: {said} is {g.dscp_default or 'not in the output'}",
                                   severity="info", evidence=ev)]
        got = mapped
    if got == c.priority:
        return []
    state = ""
    if c.name == "data":
        state = (", lossy (no PFC)" if g.pfc is not None and got not in g.pfc
                 else ", lossless" if g.pfc is not None else ", of unknown PFC state")
    return [_class_finding(c.name, subject,
                           f"{_CLASS_NAME[c.name]} {said} goes to {word} {got}{state}; the plan's hosts send it as "
                           f"priority {c.priority}",
                           evidence=dict(ev, dscp=c.dscp, priority=got, traffic_class=g.tc_of(got),
                                         pfc=None if g.pfc is None else list(g.pfc)))]


@emits("switch-cnp-class-mismatch", "switch-cts-class-mismatch", "switch-data-class-mismatch")
def _class_finding(name: str, subject: str, message: str, **kwargs) -> Finding:
    if name == "cnp":
        return finding("switch-cnp-class-mismatch", subject, message, **kwargs)
    if name == "cts":
        return finding("switch-cts-class-mismatch", subject, message, **kwargs)
    return finding("switch-data-class-mismatch", subject, message, **kwargs)


@emits("switch-pfc-missing", "switch-pfc-extra")
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


@emits("switch-lossless-buffer-missing")
def _buffers(intent: SwitchIntent, g: SwitchReading, subject: str, ev, word: str) -> List[Finding]:
    """A priority with PFC but no lossless buffer pauses nothing in time: the ingress PG (or
    pool) must hold headroom and the egress queue must not drop."""
    pfc = [p for p in intent.lossless if g.pfc is not None and p in g.pfc]
    if not pfc:
        return []
    lossy_in = [p for p in pfc if g.ingress_lossless is not None and g.ingress_lossless.get(p) is False]
    lossy_out = [p for p in pfc if g.queues.get(g.queue_of(p), QueueReading()).lossless is False]
    unknown_in = [p for p in pfc if g.ingress_lossless is None or g.ingress_lossless.get(p) is None]
    unknown_out = [p for p in pfc if g.queues.get(g.queue_of(p), QueueReading()).lossless is None]
    out: List[Finding] = []
    note = f" ({g.buffer_note})" if g.buffer_note else ""
    if lossy_in or lossy_out:
        parts = ([f"no lossless ingress buffer for priority {_list(lossy_in)}"] if lossy_in else []) + \
                ([f"lossy egress queue {_list(sorted(set(g.queue_of(p) for p in lossy_out)))} for priority "
                  f"{_list(lossy_out)}"] if lossy_out else [])
        out.append(finding("switch-lossless-buffer-missing", subject,
                           "PFC is on but " + " and ".join(parts) + note,
                           evidence=dict(ev, ingress=lossy_in, egress=lossy_out)))
    if unknown_in or unknown_out:
        what = ([f"the ingress buffer of priority {_list(unknown_in)}"] if unknown_in else []) + \
               ([f"the egress buffer of queue {_list(sorted(set(g.queue_of(p) for p in unknown_out)))}"]
                if unknown_out else [])
        out.append(finding("switch-lossless-buffer-missing", subject,
                           "not checked: the output does not say " + " or ".join(what) + note,
                           severity="info", evidence=ev))
    return out


@emits("switch-ecn-off", "switch-ecn-thresholds-differ")
def _ecn(intent: SwitchIntent, g: SwitchReading, subject: str, ev, word: str) -> List[Finding]:
    queue = g.queue_of(intent.data.priority)
    q: QueueReading = g.queues.get(queue, QueueReading())
    ev = dict(ev, queue=queue)
    where = f"queue {queue} (data {word} {intent.data.priority})"
    if q.ecn is None:
        return [finding("switch-ecn-off", subject,
                        f"not checked: the output does not say whether queue {queue} marks ECN",
                        severity="info", evidence=ev)]
    if not q.ecn:
        return [finding("switch-ecn-off", subject, f"{where} marks no ECN", evidence=ev)]
    want = intent.ecn
    differ = []
    if q.min_threshold is None or q.max_threshold is None:
        unit = q.threshold_unit
        skipped = f"thresholds in {unit}" if unit not in ("bytes", "kbytes", "mbytes") else "no thresholds"
    else:
        skipped = ""
        for name, have, plan in (("minimum", q.min_threshold, want.min_threshold),
                                 ("maximum", q.max_threshold, want.max_threshold)):
            if not _agrees(have, plan, q.programmed):
                differ.append(f"{name} {int(round(have))} bytes (plan {plan})")
    if q.probability is not None and q.probability != want.probability:
        differ.append(f"probability {q.probability}% (plan {want.probability}%)")
    if differ:
        return [finding("switch-ecn-thresholds-differ", subject, f"queue {queue}: " + ", ".join(differ)
                        + (f"; {skipped} not compared" if skipped else ""),
                        evidence=dict(ev, min_threshold=q.min_threshold, max_threshold=q.max_threshold,
                                      probability=q.probability))]
    if skipped:
        return [finding("switch-ecn-thresholds-differ", subject, f"not checked: queue {queue} states {skipped}",
                        severity="info", evidence=ev)]
    return []


@emits("switch-pfc-watchdog-off")
def _watchdog(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    """A lossless priority needs the PFC watchdog: a NIC that pauses forever otherwise blocks the
    port's lossless traffic and the pause spreads upstream. An action that shuts the port takes
    the GPU's link down where dropping on the stuck queue would do."""
    pfc = [p for p in intent.lossless if g.pfc is not None and p in g.pfc]
    if not pfc:
        return []
    note = f" ({g.watchdog_note})" if g.watchdog_note else ""
    if g.watchdog is None:
        return [finding("switch-pfc-watchdog-off", subject,
                        "not checked: the output does not say whether the PFC watchdog is on" + note,
                        severity="info", evidence=ev)]
    if not g.watchdog:
        return [finding("switch-pfc-watchdog-off", subject,
                        f"PFC is on for priority {_list(pfc)} but the PFC watchdog is off: a NIC that keeps pausing "
                        "blocks the port's lossless traffic and the pauses spread upstream" + note,
                        evidence=dict(ev, pfc=pfc))]
    if g.watchdog_action == "errdisable":
        return [finding("switch-pfc-watchdog-off", subject,
                        "the PFC watchdog's action is errdisable: a pause storm takes the whole link (the GPU's) down "
                        "where dropping on the stuck queue would keep the other classes up" + note,
                        evidence=dict(ev, action=g.watchdog_action))]
    return []


@emits("switch-pfc-watchdog-mismatch")
def _watchdog_settings(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    """Where the plan states pfc_watchdog: the running watchdog's action and times are the plan's,
    as far as the output states them (a time the output does not state is not compared)."""
    w = intent.watchdog
    if w is None or not g.watchdog or not [p for p in intent.lossless if g.pfc is not None and p in g.pfc]:
        return []
    read = {"action": g.watchdog_action, "detection_time": g.watchdog_detection_ms,
            "restoration_time": g.watchdog_restoration_ms}
    if all(v is None for v in read.values()):
        return [finding("switch-pfc-watchdog-mismatch", subject,
                        "not checked: the output states neither the PFC watchdog's action nor its times "
                        "(the plan's pfc_watchdog is not compared)", severity="info", evidence=ev)]
    unit = {"action": "", "detection_time": " ms", "restoration_time": " ms"}
    differ = [f"{k} {v}{unit[k]} (plan: {w.to_dict()[k]}{unit[k]})" for k, v in read.items()
              if v is not None and v != w.to_dict()[k]]
    if not differ:
        return []
    return [finding("switch-pfc-watchdog-mismatch", subject,
                    "the PFC watchdog is not the plan's: " + "; ".join(differ),
                    evidence=dict(ev, watchdog={k: v for k, v in read.items() if v is not None},
                                  plan=w.to_dict()))]


@emits("switch-cable-length")
def _cable(intent: SwitchIntent, g: SwitchReading, subject: str, ev) -> List[Finding]:
    """PFC headroom is sized from the cable length: the bytes in flight while a pause crosses the
    cable. Shorter than the real cable, the headroom overflows before the pause takes effect."""
    pfc = [p for p in intent.lossless if g.pfc is not None and p in g.pfc]
    if not pfc:
        return []
    have, want = g.cable_length, intent.cable_length
    note = f" ({g.cable_note})" if g.cable_note else ""
    if have == 0:
        return [finding("switch-cable-length", subject,
                        "cable length 0m: SONiC's buffermgrd creates no lossless priority group for a 0m cable, so "
                        f"priority {_list(pfc)} has PFC but no headroom" + note, severity="error",
                        evidence=dict(ev, cable_length=have))]
    if want is None:
        return []
    if have is None:
        return [finding("switch-cable-length", subject,
                        f"not checked: the output does not state the cable length (plan {want} m)" + note,
                        severity="info", evidence=ev)]
    if have < want:
        return [finding("switch-cable-length", subject,
                        f"the switch sizes PFC headroom for {have} m of cable, the plan's cables are {want} m: the "
                        "headroom overflows before a pause takes effect", evidence=dict(ev, cable_length=have,
                                                                                        plan=want))]
    return []


def _agrees(have: float, plan: int, programmed: bool) -> bool:
    if abs(have - plan) <= TOLERANCE * plan:
        return True
    return programmed and plan <= have <= plan * (1 + PROGRAMMED_ABOVE)


@emits("switch-ports-unbound")
def _unbound(switch: SwitchQos) -> List[Finding]:
    """Ports of the switch that bind no QoS: PFC, the maps and the queues are per port."""
    if not switch.unbound_ports:
        return []
    ports = switch.unbound_ports
    bound_ports = sum(len(g.ports) for g in switch.groups)
    listed = ", ".join(ports[:_UNBOUND_LISTED]) + (f" and {len(ports) - _UNBOUND_LISTED} more"
                                                   if len(ports) > _UNBOUND_LISTED else "")
    ev: Dict[str, object] = {"source": switch.source, "kind": switch.kind, "unbound": ports,
                             "ports": switch.all_ports}
    if bound_ports == 0:
        return [finding("switch-ports-unbound", subject_of([]),
                        f"none of the switch's {switch.all_ports} ports binds QoS (no PORT_QOS_MAP entry of its own): "
                        "no port has PFC, lossless buffers or RoCE's queues", severity="error", evidence=ev)]
    return [finding("switch-ports-unbound", subject_of(ports),
                    f"{len(ports)} of the switch's {switch.all_ports} ports bind no QoS: {listed}; "
                    "RoCE through them is lossy", evidence=ev)]


@emits("switch-lossless-discards")
def _discards(intent: SwitchIntent, switch: SwitchQos) -> List[Finding]:
    """RoCE discarded on a port whose RoCE priority is lossless: PFC paused too late or not at all
    (headroom, cable length, a peer that ignores pauses), or the watchdog dropped a stuck queue.
    The counts run since the counters were last cleared, so the finding says so and a warning,
    not an error, is the most it is."""
    if not intent.lossless:
        return []
    out = []
    for port, counts in sorted(switch.counters.items()):
        group = next((g for g in switch.groups if port in g.ports), None)
        if group is None and len(switch.groups) == 1 and not switch.groups[0].ports:
            group = switch.groups[0]
        if group is None or not group.pfc or intent.data.priority not in group.pfc:
            continue
        message = _nvue_discards(intent, counts) or _queue_discards(intent, group, counts)
        if message:
            out.append(finding("switch-lossless-discards", port,
                               message, evidence={"source": switch.source, "kind": switch.kind,
                                                  "counters": dict(counts)}))
    return out


def _nvue_discards(intent: SwitchIntent, counts: Dict[str, int]) -> str:
    rx, tx = counts.get("rx_roce_discards", 0), counts.get("tx_roce_discards", 0)
    if not rx and not tx:
        return ""
    return (f"{rx} RoCE packets discarded on receive and {tx} on transmit, on a port where priority "
            f"{intent.data.priority} is lossless (counts since the counters were last cleared; "
            f"pauses received {counts.get('rx_pause', 'not read')}, sent {counts.get('tx_pause', 'not read')})")


def _queue_discards(intent: SwitchIntent, g: SwitchReading, counts: Dict[str, int]) -> str:
    """SONiC's per-queue counters (rocetune.switchos.sonic_counters): drops on the unicast queue
    the lossless data priority leaves by, with that priority's pauses and the queue's ECN marks."""
    prio = intent.data.priority
    queue = g.queue_of(prio)
    drops = {k: counts[f"{k}_q{queue}"] for k in ("drop_pkts", "wred_drop_pkts") if f"{k}_q{queue}" in counts}
    if not any(drops.values()):
        return ""
    words = {"drop_pkts": "dropped", "wred_drop_pkts": "WRED-dropped"}

    def read(name: str) -> str:
        return str(counts[name]) if name in counts else "not read"

    return (f"{' and '.join(f'{v} packets {words[k]}' for k, v in drops.items() if v)} on queue {queue}, which "
            f"lossless priority {prio} leaves by (counts since the counters were last cleared; PFC pauses on "
            f"priority {prio} received {read(f'rx_pause_p{prio}')}, sent {read(f'tx_pause_p{prio}')}; ECN-marked "
            f"on queue {queue} {read(f'ecn_marked_pkts_q{queue}')})")


def _list(values) -> str:
    return ", ".join(map(str, values)) if values else "none"
