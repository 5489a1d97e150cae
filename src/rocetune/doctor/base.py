"""What every doctor check shares: its input, the registry a check binds itself to, and the
finding it returns. Both checks.py and below_checks.py declare checks against it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set

from ..analysis.hostview import HostView
from ..checks import emits, finding
from ..model.finding import Finding
from ..model.qos import QosPlan


@dataclass
class DoctorInput:
    features: dict
    readings: dict                      # doctor/readings.py
    view: HostView
    planned: Dict[str, str]             # env dialect -> the text the plan gives now
    qos: Optional[QosPlan]              # the node's QoS plan (None: no plan file, no --qos)
    # Ports the expectations or the deployed env name (`mlx5_4:1`, or a device for all its
    # ports): rails whatever the plan of the node as it is now keeps.
    named: Set[str] = field(default_factory=set)
    # The ports and devices the expectations name: rails, as the plan's chosen ports are.
    expected: Set[str] = field(default_factory=set)


Run = Callable[[DoctorInput], List[Finding]]
CHECKS: Dict[str, Run] = {}


def check(check_id: str, *also: str) -> Callable[[Run], Run]:
    """Bind a function to the doctor check declared in rocetune.doctor.declarations that it runs as, and
    (`also`) to the other ids it makes findings of: checks.emits, plus doctor's table of checks."""
    bind = emits(check_id, *also)

    def register(fn: Run) -> Run:
        CHECKS[check_id] = bound_fn = bind(fn)
        return bound_fn
    return register


def _finding(check_id: str, severity: str, subject: str, message: str, evidence: Optional[dict] = None) -> Finding:
    return finding(check_id, subject, message, severity=severity, evidence=evidence)
