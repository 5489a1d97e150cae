"""What a switch must do for the QoS plan, and what a switch's running QoS was read to do, in one
vendor-neutral shape: the renderers write the first, the switch parsers read the second and
rocetune.lint.switch_qos compares them.

Classes follow one convention on every vendor: the plan's priority N is the switch's traffic
class N, its egress queue N and (lossless) its priority group N, which is what NVUE's RoCE mode
(switch priority 3 -> traffic class 3) and SONiC's own QoS template (TC 3 -> queue 3 -> PG 3) do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .qos import EcnMarking, QosPlan

KINDS = ("sonic", "nvue", "eos")
TRAFFIC_CLASSES = tuple(range(8))


@dataclass(frozen=True)
class SwitchIntent:
    """The switch side of a QoS plan."""

    trust: str                  # dscp | pcp
    data_dscp: int
    data_class: int             # traffic class = queue = PFC priority of RoCE data
    cnp_dscp: int
    cnp_class: int
    lossless: Tuple[int, ...]   # PFC priorities
    ecn: EcnMarking

    @classmethod
    def from_plan(cls, plan: QosPlan) -> "SwitchIntent":
        return cls(trust=plan.trust, data_dscp=plan.data.dscp, data_class=plan.data.priority,
                   cnp_dscp=plan.cnp.dscp, cnp_class=plan.cnp.priority,
                   lossless=tuple(plan.lossless_priorities), ecn=plan.switch_ecn)

    def dscp_map(self) -> Dict[int, int]:
        """DSCP -> traffic class for all 64 codepoints: RoCE data and CNP to their classes,
        everything else to class 0 (NVUE's RoCE mode sends other traffic to class 0 as well)."""
        out = {d: 0 for d in range(64)}
        out[self.data_dscp] = self.data_class
        out[self.cnp_dscp] = self.cnp_class
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


@dataclass
class SwitchReading:
    """The QoS of one group of ports that share it (or of the whole switch)."""

    ports: List[str]
    trust: Optional[str] = None                    # dscp | pcp | both, None when not stated
    dscp_to_tc: Dict[int, int] = field(default_factory=dict)   # only the codepoints stated
    tc_to_queue: Dict[int, int] = field(default_factory=dict)  # identity where not stated
    pfc: Optional[Tuple[int, ...]] = None          # PFC (no-drop) priorities; None: not stated
    queues: Dict[int, QueueReading] = field(default_factory=dict)
    dscp_default: Optional[str] = None             # what an unstated DSCP does, said in words

    def queue_of(self, tc: int) -> int:
        return self.tc_to_queue.get(tc, tc)

    @property
    def subject(self) -> str:
        if not self.ports:
            return "switch"
        if len(self.ports) <= 4:
            return ",".join(self.ports)
        return f"{','.join(self.ports[:3])},... ({len(self.ports)} ports)"


@dataclass
class SwitchQos:
    """A switch's running QoS as read from one output."""

    kind: str
    source: str
    groups: List[SwitchReading]
    warnings: List[str] = field(default_factory=list)
