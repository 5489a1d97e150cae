"""The Check type and the one registry of check ids.

A check is declared once, with what its page (docs/checks/<id>.md) says: what it checks, what it
reads, why it matters, the fix and the source. Every finding -- the host's, a rule's, lint's,
doctor's -- is made here from a registered id; an id nobody declared is a programming error.
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ..model.finding import SEVERITIES, Finding
from ..model.record import FrozenRecord

KINDS = ("host", "rule", "lint", "doctor", "switch", "expect")


class UnknownCheck(LookupError):
    """A finding for an id no check declares, or with a severity its check does not take."""


class UnboundCheck(UnknownCheck):
    """A finding for a declared id that the function making it does not bind (checks.binding.emits)."""


class Check(FrozenRecord):
    """`severity` is the usual one; `also` the others it takes, and `severity_note` says when.
    `by` names the rules (kind rule) that leave it. Its page is docs/checks/<id>.md
    (tools/check_docs.py writes it from these fields)."""

    id: str
    kind: str
    severity: str
    title: str
    checks: str
    reads: str
    why: str
    fix: str
    source: str
    also: Tuple[str, ...]
    severity_note: str
    by: Tuple[str, ...]
    _fields = ("id", "kind", "severity", "title", "checks", "reads", "why", "fix", "source", "also",
               "severity_note", "by")

    def __init__(self, id: str, kind: str, severity: str, title: str, checks: str, reads: str, why: str,
                 fix: str, source: str, also: Tuple[str, ...] = (), severity_note: str = "",
                 by: Tuple[str, ...] = ()) -> None:
        self._set(id, kind, severity, title, checks, reads, why, fix, source, also, severity_note, by)

    @property
    def severities(self) -> Tuple[str, ...]:
        return (self.severity,) + self.also


_CHECKS: Dict[str, Check] = {}
_DECLARED_IN: Dict[str, str] = {}  # id -> the module that declared it


def declare(*, id: str, kind: str, severity: str, title: str, checks: str, reads: str, why: str, fix: str,
            source: str, also: Tuple[str, ...] = (), severity_note: str = "", by: Tuple[str, ...] = ()) -> Check:
    """The one way a check is declared: at the top level of a module of the package whose code
    makes its findings, every field by keyword (what its page says). Returns the Check."""
    check = Check(id, kind, severity, title, checks, reads, why, fix, source, tuple(also), severity_note, tuple(by))
    if check.id in _CHECKS:
        raise ValueError(f"check {check.id} is declared twice")
    if check.kind not in KINDS or any(s not in SEVERITIES for s in check.severities):
        raise ValueError(f"check {check.id}: kind {check.kind!r} or severities {check.severities} unknown")
    _CHECKS[check.id] = check
    _DECLARED_IN[check.id] = sys._getframe(1).f_globals.get("__name__", "")
    return check


def declared_in(check_id: str) -> str:
    """The module whose top level declared the check."""
    get(check_id)
    return _DECLARED_IN[check_id]


# The modules that declare checks, in the order lookups load them: a probe's findings are the
# host's, its rules' and its plan's, so it never imports doctor's, lint's or the switch's. A
# module that binds ids of a later group in the same group would find them undeclared.
# `rocetune.rules` imports every rule module, each of which declares the checks it leaves.
_DECLARING = (
    ("rocetune.checks.host", "rocetune.rules", "rocetune.app.planning"),
    ("rocetune.lint.declarations", "rocetune.lint.switch_declarations", "rocetune.checks.expect",
     "rocetune.doctor.declarations", "rocetune.doctor.below_declarations",
     "rocetune.doctor.nccl_findings"),
)
_loaded = [0]  # how many groups of _DECLARING are imported


def _load_next() -> bool:
    """Import the next group of declaring modules; False when all are."""
    group = _loaded[0]
    if group >= len(_DECLARING):
        return False
    import importlib

    for name in _DECLARING[group]:
        importlib.import_module(name)
    _loaded[0] = max(_loaded[0], group + 1)  # a module of the group may have looked an id up
    return True


def get(check_id: str) -> Check:
    while check_id not in _CHECKS:
        if not _load_next():
            raise UnknownCheck(f"no check {check_id!r} is registered (rocetune.checks)")
    return _CHECKS[check_id]


def all_checks() -> List[Check]:
    while _load_next():
        pass
    return sorted(_CHECKS.values(), key=lambda c: c.id)


# The innermost running function bound with checks.binding.emits: its name and its ids.
_ACTIVE: ContextVar[Optional[Tuple[str, FrozenSet[str]]]] = ContextVar("rocetune_check_binding", default=None)


def finding(check_id: str, subject: str, message: str, *, severity: Optional[str] = None,
            evidence: Optional[Dict[str, Any]] = None, fix: Optional[str] = None,
            rule: Optional[str] = None, file: Optional[str] = None, line: Optional[int] = None,
            key: Optional[str] = None) -> Finding:
    """A finding of a registered check: the producer gives what it saw (subject, message,
    evidence) and may give a fix for this instance; the rest is the check's."""
    active = _ACTIVE.get()
    if active is not None and check_id not in active[1]:
        raise UnboundCheck(f"{active[0]} makes a {check_id!r} finding but binds only "
                           f"{', '.join(sorted(active[1]))} (name it in its @emits)")
    check = get(check_id)
    severity = severity or check.severity
    if severity not in check.severities:
        raise UnknownCheck(f"check {check_id} does not take severity {severity!r} "
                           f"(declared: {', '.join(check.severities)})")
    return Finding(check_id, severity, subject, message, check.kind, check.source, fix or check.fix,
                   evidence or None, rule, file, line, key)
