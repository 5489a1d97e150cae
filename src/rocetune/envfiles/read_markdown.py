"""The fenced code blocks of a Markdown note, each read as shell; the prose around them is not."""

from __future__ import annotations

import re
from typing import List, Optional

from .parsed import ParsedFile
from .read_shell import read_sh


def read_markdown(text: str, out: ParsedFile) -> None:
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
