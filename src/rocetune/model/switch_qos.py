"""What a switch must do for the QoS plan, and what a switch's running QoS was read to do, in one
vendor-neutral shape: the switch OS modules (rocetune.switchos) render the first and read the
second, and rocetune.lint.switch_qos compares them.

A packet goes through three numbers on every switch: its DSCP (or VLAN priority) is classified
into a *priority* (NVUE's switch priority; SONiC's and EOS's traffic class), the priority goes to
an egress *traffic class* (NVUE's egress-queue-mapping; the same number on SONiC and EOS), and
the class to an egress *queue* (SONiC TC_TO_QUEUE_MAP, EOS `qos map traffic-class N to tx-queue
M`). PFC pauses per priority; ECN marks and schedulers act per queue; a lossless priority needs
an ingress buffer with headroom (SONiC's lossless priority group, NVUE's RoCE lossless pool) and
an egress queue that does not drop.

The plan's priority N is the hosts' priority N: the switch classifies the plan's DSCPs into that
priority. SONiC and EOS send priority N to traffic class and queue N (SONiC's own template does
so: TC 3 -> queue 3 -> PG 3); NVUE keeps RoCE on the traffic classes its RoCE mode reserves a
buffer and an ETS share for (3 for data, 6 for CNPs), whatever the switch priority.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .qos import EcnMarking, PfcWatchdog, QosPlan

TRAFFIC_CLASSES = tuple(range(8))


@dataclass(frozen=True)
class RoceClass:
    """One kind of RoCE traffic the plan names: its DSCP and the priority the hosts use for it."""

    name: str        # data | cnp | cts
    dscp: int
    priority: int


@dataclass(frozen=True)
class SwitchIntent:
    """The switch side of a QoS plan."""

    trust: str                  # dscp | pcp
    data: RoceClass
    cnp: RoceClass
    cts: Optional[RoceClass]    # NCCL's credit messages, when the plan gives them a DSCP
    lossless: Tuple[int, ...]   # PFC priorities
    ecn: EcnMarking
    source: str = "built-in defaults"   # the plan's file
    cable_length: Optional[int] = None  # metres (the plan's buffer.cable_length): PFC headroom
    watchdog: Optional[PfcWatchdog] = None  # the plan's pfc_watchdog; None: each OS's stated default

    @classmethod
    def from_plan(cls, plan: QosPlan) -> SwitchIntent:
        cts = None
        if plan.cts_dscp is not None:
            cts = RoceClass("cts", plan.cts_dscp,
                            plan.data.priority if plan.cts_priority is None else plan.cts_priority)
        return cls(trust=plan.trust, data=RoceClass("data", plan.data.dscp, plan.data.priority),
                   cnp=RoceClass("cnp", plan.cnp.dscp, plan.cnp.priority), cts=cts,
                   lossless=tuple(plan.lossless_priorities), ecn=plan.switch_ecn,
                   source=" ".join(str(plan.source).split()),
                   cable_length=plan.buffer.cable_length if plan.buffer is not None else None,
                   watchdog=plan.pfc_watchdog)

    # The names the templates and earlier callers use.
    @property
    def data_dscp(self) -> int:
        return self.data.dscp

    @property
    def data_class(self) -> int:
        return self.data.priority

    @property
    def cnp_dscp(self) -> int:
        return self.cnp.dscp

    @property
    def cnp_class(self) -> int:
        return self.cnp.priority

    @property
    def classes(self) -> Tuple[RoceClass, ...]:
        """data, cnp and (when the plan has it) cts: the DSCPs the switch must classify."""
        return (self.data, self.cnp) + ((self.cts,) if self.cts is not None else ())

    def dscp_map(self) -> Dict[int, int]:
        """DSCP -> priority for all 64 codepoints: the plan's DSCPs to their priorities,
        everything else to priority 0 (what NVUE's RoCE mode does with other traffic)."""
        out = {d: 0 for d in range(64)}
        for c in self.classes:
            out[c.dscp] = c.priority
        return out


@dataclass(frozen=True)
class QueueReading:
    """One egress queue as the switch has it; None where the output does not say."""

    strict: Optional[bool] = None
    ecn: Optional[bool] = None
    min_threshold: Optional[float] = None   # bytes
    max_threshold: Optional[float] = None   # bytes
    probability: Optional[int] = None
    threshold_unit: str = "bytes"           # what the switch stated the thresholds in
    programmed: bool = False                # thresholds as the ASIC holds them (rounded to its granularity)
    lossless: Optional[bool] = None         # the egress buffer does not drop (SONiC egress_lossless_profile)


@dataclass
class SwitchReading:
    """The QoS of one group of ports that share it (or of the whole switch)."""

    ports: List[str]
    trust: Optional[str] = None                    # dscp | pcp | both, None when not stated
    dscp_to_priority: Dict[int, int] = field(default_factory=dict)   # only the codepoints stated
    pcp_to_priority: Dict[int, int] = field(default_factory=dict)    # identity where not stated
    priority_to_tc: Dict[int, int] = field(default_factory=dict)     # identity where not stated
    tc_to_queue: Dict[int, int] = field(default_factory=dict)        # identity where not stated
    pfc: Optional[Tuple[int, ...]] = None          # PFC (no-drop) priorities; None: not stated
    queues: Dict[int, QueueReading] = field(default_factory=dict)
    dscp_default: Optional[str] = None             # what an unstated DSCP does, said in words
    dscp_default_priority: Optional[int] = None    # ... when that is one priority
    # Ingress buffer per PFC priority: True lossless (headroom), False lossy; None: not stated.
    ingress_lossless: Optional[Dict[int, Optional[bool]]] = None
    buffer_note: str = ""                          # why a buffer is not stated, or what it relies on
    routed: Optional[bool] = None                  # the ports route (an IP of their own, `no switchport`)
    # PFC watchdog on these ports: True on, False off, None not stated; its action (drop, forward,
    # errdisable, alert ...) when stated, and what the reading assumes where the output is silent.
    watchdog: Optional[bool] = None
    watchdog_action: Optional[str] = None
    watchdog_note: str = ""
    # Its detection and restoration times in milliseconds, where the output states them.
    watchdog_detection_ms: Optional[int] = None
    watchdog_restoration_ms: Optional[int] = None
    # The cable length the switch sizes these ports' PFC headroom from (metres); None: not stated.
    cable_length: Optional[int] = None
    cable_note: str = ""

    def priority_of_dscp(self, dscp: int) -> Optional[int]:
        if dscp in self.dscp_to_priority:
            return self.dscp_to_priority[dscp]
        return self.dscp_default_priority

    def priority_of_pcp(self, pcp: int) -> int:
        return self.pcp_to_priority.get(pcp, pcp)

    def tc_of(self, priority: int) -> int:
        return self.priority_to_tc.get(priority, priority)

    def queue_of_tc(self, tc: int) -> int:
        return self.tc_to_queue.get(tc, tc)

    def queue_of(self, priority: int) -> int:
        """The egress queue a priority's packets leave by."""
        return self.queue_of_tc(self.tc_of(priority))

    @property
    def subject(self) -> str:
        return subject_of(self.ports)


def subject_of(ports: List[str]) -> str:
    if not ports:
        return "switch"
    if len(ports) <= 4:
        return ",".join(ports)
    return f"{','.join(ports[:3])},... ({len(ports)} ports)"


@dataclass
class SwitchQos:
    """A switch's running QoS as read from one output."""

    kind: str
    source: str
    groups: List[SwitchReading]
    warnings: List[str] = field(default_factory=list)
    priority_word: str = "traffic class"           # what the OS calls the priority (NVUE: switch priority)
    # The switch's ports (its PORT table) that bind no QoS; None when the output lists no ports.
    unbound_ports: Optional[List[str]] = None
    all_ports: Optional[int] = None                # how many ports the output lists
    form: str = ""                                 # which of the OS's outputs this was
    # Ports not judged, by one policy on every OS: administratively down (SONiC admin_status down,
    # EOS `shutdown`) or carrying no configuration of their own; each with the reason.
    inactive_ports: Dict[str, str] = field(default_factory=dict)
    # Why no port binds QoS of its own although the output binds some switch-wide; "" otherwise.
    bound_nowhere: str = ""
    # Counters the output includes (NVUE `nv show interface IF qos roce counters`), per port: name ->
    # value since the counters were last cleared, the names as rocetune.lint.switch_qos reads them.
    counters: Dict[str, Dict[str, int]] = field(default_factory=dict)


def _frozen(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def merged(readings: List[SwitchReading]) -> List[SwitchReading]:
    """Readings of single ports (or port groups) that read alike, folded into one group each,
    in the order first seen."""
    from dataclasses import fields

    groups: Dict[Tuple, SwitchReading] = {}
    for r in readings:
        key = tuple(_frozen(getattr(r, f.name)) for f in fields(r) if f.name != "ports")
        if key in groups:
            groups[key].ports.extend(r.ports)
        else:
            groups[key] = r
    return list(groups.values())
