"""nccl-conf: NCCL's own config file (/etc/nccl.conf, ~/.nccl.conf, $NCCL_CONF_FILE), NAME=value
lines read as NCCL reads them: the rest of the line verbatim, quotes and spaces included, the first
setting of a variable kept. Only NCCL reads it, so only NCCL_* variables are written.

Its file names are `*nccl*.conf`: a `.conf` without nccl in its name is as often a systemd drop-in
or another program's configuration, which NCCL's reader would misread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..parsed import NAME_RE, Assignment, ParsedFile, rule_of, template_reason
from .base import Add, Dialect
from .verbatim import verbatim_value_pitfalls

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "nccl-conf"
MAX_VALUE = 1023  # NCCL reads nccl.conf values into a 1024-byte buffer


def render(plan: Plan, features: dict) -> str:
    from ...model.plan import Plan
    from ..writing import refuse, with_comments

    # Only NCCL reads this file (at communicator init, without overwriting the environment):
    # UCX, Gloo and MPI read their variables earlier, from the process environment.
    kept = Plan(**{**plan.__dict__, "decisions": [d for d in plan.decisions if d.key.startswith("NCCL_")]})
    for d in kept.decisions:
        if "\n" in d.value or "\r" in d.value:
            refuse(NAME, d, "spans lines; nccl.conf has one VAR=value per line and no quoting")
        if len(d.value.encode("utf-8")) > MAX_VALUE:
            refuse(NAME, d, f"is longer than the {MAX_VALUE} bytes NCCL reads per value")
    skipped = [d.key for d in plan.decisions if not d.key.startswith("NCCL_")]
    extra = ["not written here (only NCCL reads nccl.conf; put them in the job environment, "
             "e.g. --format sh): " + ", ".join(skipped)] if skipped else []
    return with_comments(kept, features, NAME, lambda d: f"{d.key}={d.value}", extra)


def read(text: str, out: ParsedFile) -> None:
    """Read as NCCL does (rocetune.nccl.conf), keeping the '# rule:' comments."""
    from ...nccl.conf import conf_lines

    rules = {}
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            pending_rule = rule_of(line[1:]) or pending_rule
        elif line.strip():
            rules[lineno] = pending_rule
            pending_rule = None
    for lineno, key, value in conf_lines(text):
        if value is None:
            out.problems.append((lineno, "conf-ignored-line", "no '=': NCCL ignores this line"))
            continue
        if not NAME_RE.match(key):
            stripped = key.strip()
            if NAME_RE.match(stripped):
                out.problems.append((lineno, "conf-whitespace",
                                     f"spaces around {stripped!r}: NCCL takes {key!r} (spaces "
                                     "included) as the name, so the setting is lost"))
            else:
                out.problems.append((lineno, "conf-bad-name", f"{key!r} is not a variable name"))
            continue
        out.assignments.append(Assignment(key, value, value, lineno, "conf", rules.get(lineno),
                                          template_reason(value)))


def lint_value(a: Assignment, add: Add) -> None:
    verbatim_value_pitfalls(a, add, "NCCL", quoted="conf-quoted-value", spaced="conf-whitespace")
    if not a.key.startswith("NCCL_"):
        add("conf-not-nccl", "warning", a.line, a.key,
            f"{a.key} in an NCCL config file: only NCCL reads it, when a communicator starts; "
            "UCX, Gloo and MPI have read their settings by then", "set it in the job environment")


DIALECT = Dialect(
    NAME, listed=20, precedence=60, read=read, render=render, file_patterns=("*nccl*.conf",),
    misread_warns=("sh",), consumer="NCCL", keeps_cr=True, first_wins=True, keeps_owner_copy=True,
    lint_value=lint_value,
)
