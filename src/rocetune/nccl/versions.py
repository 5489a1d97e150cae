"""NCCL release numbers: parsing and comparing."""

from __future__ import annotations

import re
from typing import Optional, Tuple

Version = Tuple[int, int, int]


def parse_version(text: Optional[str]) -> Optional[Tuple[int, int, int]]:
    if not text:
        return None
    m = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def at_least(version: Optional[Version], minimum: Version) -> Optional[bool]:
    """Whether `version` is `minimum` or newer; None when the version is unknown."""
    return None if version is None else version >= minimum
