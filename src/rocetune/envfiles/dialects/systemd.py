"""systemd: an `EnvironmentFile=` of a service, with systemd's own comments, quoting and line
continuations."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

from ..parsed import NAME_RE, Assignment, ParsedFile, rule_of
from .base import Dialect

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "systemd"


def render(plan: Plan, features: dict) -> str:
    from ..writing import refuse, systemd_quote, with_comments

    for d in plan.decisions:
        bad = [ch for ch in d.value if _unicode_noncharacter(ch) or ch == "\ufeff"]
        if bad:
            refuse(NAME, d, f"contains U+{ord(bad[0]):04X}, which systemd does not accept in "
                            "environment files")
    return with_comments(plan, features, NAME, lambda d: f"{d.key}={systemd_quote(d.value)}")


def _unicode_noncharacter(ch: str) -> bool:
    o = ord(ch)
    return 0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE


def read(text: str, out: ParsedFile) -> None:
    for key, value, lineno, rule in systemd_env_pairs(text):
        out.assignments.append(Assignment(key, value, value, lineno, NAME, rule, None))


_NEWLINE = "\n\r"  # systemd ends a line at either (NEWLINE in its sources): a CR is never kept


def systemd_env_pairs(text: str) -> List[Tuple[str, str, int, Optional[str]]]:
    """systemd's EnvironmentFile grammar: '#'/';' comments, single quotes literal, double quotes
    with backslash escapes of `"\\$` and backquote, backslash-newline continues, unquoted values
    trimmed; a carriage return ends a line like a newline does."""
    pairs: List[Tuple[str, str, int, Optional[str]]] = []
    state = "pre_key"
    key: List[str] = []
    val: List[str] = []
    comment: List[str] = []
    last_rule: Optional[str] = None
    line = 1
    start_line = 1
    trail = 0  # trailing whitespace in an unquoted value

    def push() -> None:
        nonlocal key, val, last_rule, trail
        k = "".join(key).strip()
        v = "".join(val)
        if trail:
            v = v[: len(v) - trail]
        if k and NAME_RE.match(k):
            pairs.append((k, v, start_line, last_rule))
        key, val, trail = [], [], 0
        last_rule = None

    i = 0
    while i < len(text):
        c = text[i]
        if state == "pre_key":
            if c in "#;":
                state, comment = "comment", []
            elif c not in " \t\n\r":
                state, key, start_line = "key", [c], line
        elif state == "key":
            if c in _NEWLINE:
                state, key = "pre_key", []
            elif c == "=":
                state = "pre_value"
            else:
                key.append(c)
        elif state == "pre_value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            elif c not in " \t":
                state = "value"
                val.append(c)
        elif state == "value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "\\":
                state, trail = "value_escape", 0
            else:
                trail = trail + 1 if c in " \t" else 0
                val.append(c)
        elif state == "value_escape":
            state = "value"
            if c not in _NEWLINE:
                val.append(c)
        elif state == "single":
            if c == "'":
                state = "pre_value"
            else:
                val.append(c)
        elif state == "double":
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                val.append(c)
        elif state == "double_escape":
            state = "double"
            if c in '"\\`$':
                val.append(c)
            elif c != "\n":
                val.extend(("\\", c))
        elif state == "comment":
            if c in _NEWLINE:
                last_rule = rule_of("".join(comment)) or last_rule
                state = "pre_key"
            else:
                comment.append(c)
        if c == "\n":
            line += 1
        i += 1
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        push()
    return pairs


DIALECT = Dialect(NAME, listed=30, precedence=80, read=read, render=render)
