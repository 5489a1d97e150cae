"""NCCL release numbers: parsing and comparing."""

from __future__ import annotations

import re
from typing import Optional, Sequence, Tuple

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


def text(version: Optional[Version]) -> Optional[str]:
    return ".".join(str(x) for x in version) if version else None


def plan_version(libraries: Sequence[dict]) -> Tuple[Optional[str], Optional[str], str]:
    """The NCCL release to plan for among the libraries a job may load: (version, its library's
    path, basis). The rules' version-gated settings are written so that those for an older
    release also hold on a newer one (a pinned GID index, NCCL_IB_TIMEOUT=20, SPLIT_DATA_ON_QPS=0
    are each a newer release's own choice or default), so the lowest is planned for:

    * "none": no library found -- version unknown;
    * "single": every library found is one release;
    * "lowest": releases differ -- the lowest;
    * "unreadable": a library's version could not be read -- unknown, because it may be older
      than the lowest one read, and the rules treat an unknown release as possibly old;
    * "other-user": every library found lies where another user controls it (`controlled_by`: a
      home directory, a directory others may write): the lowest of them, which tells what that
      user's jobs load, not the system's -- the rule nccl-version says so. Where system libraries
      are found too, those others do not count.
    """
    if not libraries:
        return None, None, "none"
    system = [lib for lib in libraries if not lib.get("controlled_by")]
    if not system:
        version, path, basis = _plan(libraries)
        return version, path, "other-user" if version is not None else basis
    return _plan(system)


def _plan(libraries: Sequence[dict]) -> Tuple[Optional[str], Optional[str], str]:
    parsed = [(parse_version(lib.get("version")), lib.get("path")) for lib in libraries]
    if any(v is None for v, _ in parsed):
        return None, None, "unreadable"
    lowest = min(parsed, key=lambda vp: (vp[0], vp[1] or ""))
    basis = "single" if len({v for v, _ in parsed}) == 1 else "lowest"
    return text(lowest[0]), lowest[1], basis
