"""systemd: an `EnvironmentFile=` of a service, with systemd's own comments, quoting and line
continuations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

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
    reader = _EnvFileReader()
    for c in text:
        reader.step[reader.state](c)
        if c == "\n":
            reader.line += 1
    if reader.state in _IN_VALUE:
        reader.push()
    return reader.pairs


_IN_VALUE = ("pre_value", "value", "value_escape", "single", "double", "double_escape")


class _EnvFileReader:
    """The parser's state machine: one method per state, each taking one character."""

    def __init__(self) -> None:
        self.pairs: List[Tuple[str, str, int, Optional[str]]] = []
        self.state = "pre_key"
        self.key: List[str] = []
        self.val: List[str] = []
        self.comment: List[str] = []
        self.last_rule: Optional[str] = None
        self.line = 1
        self.start_line = 1
        self.trail = 0  # trailing whitespace in an unquoted value
        self.step: Dict[str, Callable[[str], None]] = {
            "pre_key": self._pre_key, "key": self._key, "pre_value": self._pre_value,
            "value": self._value, "value_escape": self._value_escape, "single": self._single,
            "double": self._double, "double_escape": self._double_escape, "comment": self._comment,
        }

    def push(self) -> None:
        k = "".join(self.key).strip()
        v = "".join(self.val)
        if self.trail:
            v = v[: len(v) - self.trail]
        if k and NAME_RE.match(k):
            self.pairs.append((k, v, self.start_line, self.last_rule))
        self.key, self.val, self.trail = [], [], 0
        self.last_rule = None

    def _pre_key(self, c: str) -> None:
        if c in "#;":
            self.state, self.comment = "comment", []
        elif c not in " \t\n\r":
            self.state, self.key, self.start_line = "key", [c], self.line

    def _key(self, c: str) -> None:
        if c in _NEWLINE:
            self.state, self.key = "pre_key", []
        elif c == "=":
            self.state = "pre_value"
        else:
            self.key.append(c)

    def _pre_value(self, c: str) -> None:
        if c in _NEWLINE:
            self.push()
            self.state = "pre_key"
        elif c == "'":
            self.state = "single"
        elif c == '"':
            self.state = "double"
        elif c == "\\":
            self.state = "value_escape"
        elif c not in " \t":
            self.state = "value"
            self.val.append(c)

    def _value(self, c: str) -> None:
        if c in _NEWLINE:
            self.push()
            self.state = "pre_key"
        elif c == "\\":
            self.state, self.trail = "value_escape", 0
        else:
            self.trail = self.trail + 1 if c in " \t" else 0
            self.val.append(c)

    def _value_escape(self, c: str) -> None:
        self.state = "value"
        if c not in _NEWLINE:
            self.val.append(c)

    def _single(self, c: str) -> None:
        if c == "'":
            self.state = "pre_value"
        else:
            self.val.append(c)

    def _double(self, c: str) -> None:
        if c == '"':
            self.state = "pre_value"
        elif c == "\\":
            self.state = "double_escape"
        else:
            self.val.append(c)

    def _double_escape(self, c: str) -> None:
        self.state = "double"
        if c in '"\\`$':
            self.val.append(c)
        elif c != "\n":
            self.val.extend(("\\", c))

    def _comment(self, c: str) -> None:
        if c in _NEWLINE:
            self.last_rule = rule_of("".join(self.comment)) or self.last_rule
            self.state = "pre_key"
        else:
            self.comment.append(c)


DIALECT = Dialect(NAME, listed=30, precedence=80, read=read, render=render)
