"""What reading an env file gives: its assignments, with line, context and the rule that wrote
them, and the problems its consumer would have with it. Shared by every dialect's reader."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_RULE_RE = re.compile(r"^\s*rule:\s*([A-Za-z0-9_.-]+)")


@dataclass
class Assignment:
    key: str
    value: Optional[str]          # what the consumer gets; None when it depends on expansion
    raw: str                      # the value as written
    line: int
    context: str                  # export, assign, prefix, mpirun -x, docker -e, ENV, conf, ...
    rule_id: Optional[str] = None  # from a preceding '# rule: <id>' comment
    dynamic: Optional[str] = None  # why the value is not known statically
    scope: int = 0                # Markdown code block number (duplicates are per scope)


@dataclass
class ParsedFile:
    fmt: str
    assignments: List[Assignment] = field(default_factory=list)
    problems: List[Tuple[int, str, str]] = field(default_factory=list)  # (line, id, message)
    features_hash: Optional[str] = None
    detected: str = ""                  # why this format: forced, content, file name, default
    name_format: Optional[str] = None   # the format the file name alone suggests


def rule_of(comment: str) -> Optional[str]:
    m = _RULE_RE.match(comment)
    return m.group(1) if m else None


def template_reason(value: str) -> Optional[str]:
    return "template placeholder" if ("{{" in value or "{%" in value) else None
