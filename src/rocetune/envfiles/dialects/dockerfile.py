"""dockerfile: a Dockerfile's (or Containerfile's) ENV lines, read with the shell's reader; read
only (lint)."""

from __future__ import annotations

import re
from typing import Optional

from . import sh
from .base import Dialect

_INSTRUCTIONS = re.compile(r"(?m)^[^\S\n]*(?:FROM|ENV)[^\S\n]+\S")
_EXPORT = re.compile(r"(?m)^[^\S\n]*export\s")


def detect(text: str) -> Optional[str]:
    return "FROM/ENV instructions" if _INSTRUCTIONS.search(text) and not _EXPORT.search(text) else None


DIALECT = Dialect(
    "dockerfile", listed=80, precedence=50, read=sh.read,
    file_patterns=("dockerfile*", "containerfile*", "*.dockerfile", "*.containerfile"),
    detect=detect,
)
