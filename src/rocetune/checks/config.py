"""The check configuration applied: each rule's id is a registered check, and a finding it
matches is skipped (kept aside, with the reason) or takes the rule's severity (and says so)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Dict, List, Optional

from ..errors import ExitCode, RocetuneError
from ..model.check_config import CheckConfig, CheckRule
from ..model.finding import Finding
from .registry import UnknownCheck, all_checks, get


def check_ids(config: CheckConfig) -> None:
    """An id no check declares is an input error naming the id and the closest one (a usage
    error for --skip). The declaring modules are imported only as far as the ids need (none for
    a configuration without rules: an env run imports no doctor or lint code)."""
    from ..text import suggest

    for rule in config.rules:
        try:
            get(rule.id)
        except UnknownCheck:
            known = {c.id for c in all_checks()}
            close = suggest(rule.id, known)
            raise RocetuneError(f"{rule.source}: no check {rule.id!r}" + (f" (did you mean {close}?)" if close else ""),
                                hint="the ids are in docs/checks/README.md",
                                code=ExitCode.USAGE if rule.source == "--skip" else ExitCode.INPUT) from None


@dataclass
class Applied:
    findings: List[Finding]            # graded: what the exit code is made of
    skipped: List[Finding]             # set aside, each with the rule that did it in `graded`
    rules: List[Dict[str, object]]     # every rule with how many findings it matched


def _matches(rule: CheckRule, f: Finding) -> bool:
    return f.id == rule.id and (not rule.subjects or any(fnmatch.fnmatchcase(f.subject, s)
                                                          for s in rule.subjects))


def _rule_for(config: CheckConfig, f: Finding) -> Optional[CheckRule]:
    hit = None
    for rule in config.rules:  # the last matching rule wins (the command line after the file)
        if _matches(rule, f):
            hit = rule
    return hit


def apply(findings: List[Finding], config: Optional[CheckConfig]) -> Applied:
    if config is None or not config.rules:
        return Applied(list(findings), [], [])
    kept: List[Finding] = []
    skipped: List[Finding] = []
    counts: Dict[int, int] = {}
    for f in findings:
        rule = _rule_for(config, f)
        if rule is None:
            kept.append(f)
            continue
        counts[id(rule)] = counts.get(id(rule), 0) + 1
        note = {"action": rule.action, "from": f.severity, "reason": rule.reason, "by": rule.source}
        if rule.severity is None:
            skipped.append(f.replace(graded=note))
        elif rule.severity == f.severity:
            kept.append(f)
        else:
            kept.append(f.replace(severity=rule.severity, graded=note))
    rules = [{**r.to_dict(), "matched": counts.get(id(r), 0)} for r in config.rules]
    return Applied(kept, skipped, rules)
