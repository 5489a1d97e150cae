"""One home for every check: the Check type, the registry of check ids, and the declarations of
host, rule, lint and doctor checks.

The modules that declare checks load when a check is first looked up (registry.get), the ones a
probe's findings name first, so a verb pays only for the checks it reports; `all_checks()` loads
them all, and a finding for an id no module declares fails (rocetune.checks.registry.UnknownCheck)."""

from typing import Any

from .binding import bound, emits
from .registry import Check, UnboundCheck, UnknownCheck, all_checks, finding, get

__all__ = ["Check", "UnboundCheck", "UnknownCheck", "all_checks", "bound", "emits", "finding", "get",
           "host_findings"]


def __getattr__(name: str) -> Any:
    if name == "host_findings":
        from .host import host_findings

        return host_findings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
