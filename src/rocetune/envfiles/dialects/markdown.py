"""markdown: the fenced code blocks of a Markdown note, each read as shell; the prose around them
is not. Read only (lint)."""

from __future__ import annotations

import re
from typing import List, Optional

from ..parsed import ParsedFile
from .base import Dialect

_FENCE = re.compile(r"(?m)^[^\S\n]*(?:```|~~~)")


def detect(text: str) -> Optional[str]:
    return "fenced code blocks" if _FENCE.search(text) else None


def read(text: str, out: ParsedFile) -> None:
    from ..read_shell import read_sh

    lines = text.split("\n")
    block: List[str] = []
    start = 0
    fence: Optional[str] = None
    scope = 0
    for lineno, line in enumerate(lines, 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None:
            if m:
                fence, block, start = m.group(1), [], lineno
            continue
        if m and m.group(1).startswith(fence[:3]) and line.strip().strip(fence[0]) == "":
            scope += 1
            sub = ParsedFile("sh")
            read_sh("\n".join(block), sub)
            for a in sub.assignments:
                a.line += start
                a.scope = scope
                out.assignments.append(a)
            out.problems.extend((ln + start, pid, msg) for ln, pid, msg in sub.problems)
            fence = None
            continue
        block.append(line)


DIALECT = Dialect(
    "markdown", listed=90, precedence=30, read=read, file_patterns=("*.md", "*.markdown"),
    detect=detect, name_beats_content=("sh", "dockerfile"),
    name_beats_content_why="file name; its prose is not read as shell",
)
