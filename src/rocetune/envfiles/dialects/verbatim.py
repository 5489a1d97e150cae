"""The pitfalls of dialects whose consumer takes a value verbatim (NCCL's config reader, docker's
--env-file): quotes and surrounding whitespace become part of the value."""

from __future__ import annotations

from ..parsed import Assignment
from .base import Add


def verbatim_value_pitfalls(a: Assignment, add: Add, consumer: str, quoted: str, spaced: str) -> None:
    """`quoted` and `spaced`: the check ids of a quoted value and of surrounding whitespace."""
    v = a.raw
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        add(quoted, "error", a.line, a.key, f"{consumer} keeps the quotes: {a.key} becomes {v!r}",
            "remove the quotes")
    elif v != v.strip():
        add(spaced, "error", a.line, a.key,
            f"{consumer} keeps the surrounding whitespace of {v!r}"
            + (" (a CRLF line ending?)" if v.endswith("\r") else ""),
            "remove it (and convert CRLF line endings)")
