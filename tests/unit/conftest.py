"""Unit tests never read the machine's own /sys or /proc: everything goes through a fixture root."""

from __future__ import annotations

import os
import sys

import pytest

_GUARDED = ("/sys", "/proc")
_state = {"active": False}


def _path_of(args) -> str:
    if not args:
        return ""
    first = args[0]
    if isinstance(first, bytes):
        first = first.decode("utf-8", "replace")
    return first if isinstance(first, str) else ""


def _audit(event: str, args) -> None:
    if not _state["active"] or event not in ("open", "os.listdir", "os.scandir"):
        return
    path = _path_of(args)
    if path and os.path.isabs(path):
        norm = os.path.normpath(path)
        if any(norm == g or norm.startswith(g + "/") for g in _GUARDED):
            _state["active"] = False  # let pytest report without tripping again
            raise AssertionError(f"unit test touched the real host: {event} {norm}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _no_real_host():
    _state["active"] = True
    try:
        yield
    finally:
        _state["active"] = False
