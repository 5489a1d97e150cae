"""Which env dialect a file is written in: rocetune's header, then the content (each dialect's
detect, by precedence); the file name only decides between dialects the content fits equally,
such as plain NAME=value lines (nccl.conf, .deepspeed_env, a shell env file)."""

from __future__ import annotations

import re
from typing import Optional, Tuple

from . import dialects

_FORMAT_RE = re.compile(r"rocetune .*\bformat: ([a-z-]+)")
_HEADER_LINES = 6
_HEADER_LINE_CHARS = 512  # rocetune's header lines are short; a longer line is not one of them


def detect(text: str, name: str = "") -> Tuple[str, str, Optional[str]]:
    """(format, why, format the name alone suggests). What the content says wins; the file name
    only breaks ties between dialects the content fits equally (plain NAME=value lines)."""
    by_name = format_by_name(name)
    m = _FORMAT_RE.search(header(text))
    if m and m.group(1) in dialects.names():
        return m.group(1), "rocetune's header", by_name
    content = _format_by_content(text)
    named = dialects.get(by_name) if by_name else None
    if content and by_name and named and content[0] in named.name_beats_content:
        return by_name, named.name_beats_content_why, by_name
    if content:
        return content[0], content[1], by_name
    if by_name:
        return by_name, "file name", by_name
    return dialects.fallback().name, "default", by_name


def header(text: str) -> str:
    """The first lines, each cut short: where rocetune's header is, searched in bounded time."""
    lines = text[:_HEADER_LINES * (_HEADER_LINE_CHARS + 2)].splitlines()[:_HEADER_LINES]
    return "\n".join(line[:_HEADER_LINE_CHARS] for line in lines)


def format_by_name(name: str) -> Optional[str]:
    dialect = dialects.for_file_name(name)
    return dialect.name if dialect else None


def _format_by_content(text: str) -> Optional[Tuple[str, str]]:
    for dialect in dialects.by_precedence():
        why = dialect.detect(text) if dialect.detect else None
        if why:
            return dialect.name, why
    return None
