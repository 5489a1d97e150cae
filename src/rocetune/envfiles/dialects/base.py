"""What a dialect module declares: its name, the file names it claims, how its content is
recognised, its writer and reader, and how its consumer treats what it reads (for lint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Tuple

from ..parsed import Assignment, ParsedFile

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

Reader = Callable[[str, ParsedFile], None]
Renderer = Callable[["Plan", dict], str]
# lint's add(check id, severity (None: the check's), line, key, message, fix for this setting)
Add = Callable[..., None]


@dataclass(frozen=True)
class Dialect:
    name: str
    listed: int                       # its place in --format choices and --help
    precedence: int                   # lower: its file names and content are tried first
    read: Reader
    render: Optional[Renderer] = None  # None: read only (lint reads it, rocetune never writes it)
    file_patterns: Tuple[str, ...] = ()  # fnmatch patterns of lower-cased base names it claims
    detect: Optional[Callable[[str], Optional[str]]] = None  # why the content is this dialect
    fallback: bool = False            # what a file is read and written as when nothing else fits
    # The content dialects a file named like this one is still read as this one (Markdown prose
    # looks like shell), and why, as detection reports it.
    name_beats_content: Tuple[str, ...] = ()
    name_beats_content_why: str = ""
    # Read as one of these ("*": any) though named like this dialect: a warning, not a note.
    misread_warns: Tuple[str, ...] = ()
    consumer: str = ""                # who reads the file, as lint's messages name it
    # The consumer keeps the CR of a CRLF line in the value (bash, NCCL's config reader); systemd
    # ends a line at a CR, docker's env-file reader and Python's text mode (DeepSpeed) drop it,
    # YAML and JSON take it as a line break.
    keeps_cr: bool = False
    first_wins: bool = False          # of two settings of one variable, the consumer keeps the first
    keeps_owner_copy: bool = False    # a file of this dialect not written by rocetune is kept once
    lint_value: Optional[Callable[[Assignment, Add], None]] = None  # the consumer's value pitfalls

    @property
    def writes(self) -> bool:
        return self.render is not None
