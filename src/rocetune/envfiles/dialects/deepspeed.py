"""deepspeed: `.deepspeed_env`, which DeepSpeed's launcher splits at the first `=` of every line
and exports to the remote nodes through a shell: no comments, no blank lines, no shell-special
characters."""

from __future__ import annotations

from typing import TYPE_CHECKING
import re

from ..parsed import NAME_RE, Assignment, ParsedFile, template_reason
from .base import Dialect

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "deepspeed"
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]*\Z")


def render(plan: Plan, features: dict) -> str:
    from ..writing import refuse

    lines = []
    for d in plan.decisions:
        if not _SAFE.match(d.value):
            refuse(NAME, d, "has characters DeepSpeed's launcher passes unquoted to a remote "
                            "shell (only letters, digits and _@%+=:,./- are safe)")
        lines.append(f"{d.key}={d.value}")
    # .deepspeed_env has no comments and no blank lines: DeepSpeed splits every line on '='.
    return "\n".join(lines) + ("\n" if lines else "")


def read(text: str, out: ParsedFile) -> None:
    lines = text.split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            if lineno < len(lines):
                out.problems.append((lineno, "deepspeed-blank-line",
                                     "blank line: DeepSpeed's launcher fails on a line without '='"))
            continue
        key, sep, value = line.partition("=")
        if not sep:
            out.problems.append((lineno, "deepspeed-no-equals",
                                 "no '=': DeepSpeed's launcher fails on this line (comments are not allowed)"))
            continue
        key, value = key.strip(), value.strip()
        if not NAME_RE.match(key):
            out.problems.append((lineno, "deepspeed-bad-name", f"{key!r} is not a variable name"))
            continue
        out.assignments.append(Assignment(key, value, value, lineno, NAME, None, template_reason(value)))


DIALECT = Dialect(NAME, listed=50, precedence=40, read=read, render=render,
                  file_patterns=(".deepspeed_env",), misread_warns=("*",))
