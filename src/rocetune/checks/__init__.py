"""The Check type, the one registry of check ids and the one way to declare a check
(`declare(id=..., kind=..., severity=..., title=..., ...)`), with the host's and the
expectations' checks beside their code.

Every other check is declared beside the code that makes its findings: a rule's in its module
under rules/, lint/declarations.py, lint/switch_declarations.py, doctor/declarations.py,
doctor/below_declarations.py, doctor/nccl_findings.py, app/planning.py. Those modules load
when a check is first looked up (registry.get), the ones a probe's findings name first, so a verb
pays only for the checks it reports; `all_checks()` loads them all, and a finding for an id no
module declares fails (rocetune.checks.registry.UnknownCheck)."""

from typing import Any

from .binding import bound, emits
from .registry import Check, UnboundCheck, UnknownCheck, all_checks, declare, finding, get

__all__ = ["Check", "UnboundCheck", "UnknownCheck", "all_checks", "bound", "declare", "emits", "finding", "get",
           "host_findings"]


def __getattr__(name: str) -> Any:
    if name == "host_findings":
        from .host import host_findings

        return host_findings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
