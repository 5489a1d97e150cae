"""docker: `docker run --env-file`, one K=v per line taken verbatim (no quoting at all)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..parsed import Assignment, ParsedFile, rule_of, template_reason
from .base import Add, Dialect
from .verbatim import verbatim_value_pitfalls

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "docker"


def render(plan: Plan, features: dict) -> str:
    from ..writing import refuse, with_comments

    for d in plan.decisions:
        if "\n" in d.value or "\r" in d.value:
            refuse(NAME, d, "spans lines; docker --env-file takes the rest of the line verbatim "
                            "and has no quoting")
    return with_comments(plan, features, NAME, lambda d: f"{d.key}={d.value}")


def read(text: str, out: ParsedFile) -> None:
    """docker's --env-file: lines (a final CR dropped), leading blanks skipped, the value verbatim."""
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        body = line.lstrip()
        if not body:
            continue
        if body.startswith("#"):
            pending_rule = rule_of(body[1:]) or pending_rule
            continue
        key, sep, value = body.partition("=")
        if not key or re.search(r"\s", key):  # what docker's env-file reader refuses
            out.problems.append((lineno, "docker-bad-name", f"{key!r} is not a variable name "
                                                            "(docker refuses the file)"))
            continue
        if not sep:
            continue  # `KEY` alone passes the caller's value through
        out.assignments.append(Assignment(key, value, value, lineno, NAME, pending_rule,
                                          template_reason(value)))
        pending_rule = None


def lint_value(a: Assignment, add: Add) -> None:
    verbatim_value_pitfalls(a, add, "docker", quoted="docker-quoted-value", spaced="docker-whitespace")


DIALECT = Dialect(NAME, listed=40, precedence=90, read=read, render=render,
                  lint_value=lint_value)
