"""Markers for the whole suite, and one lab at a time on a machine.

Every test under tests/lab/ is marked ``lab`` (it needs root and builds namespace hosts or
VMs), so ``pytest -m "not lab"`` is the fast loop; the lab's own conftest adds ``vm`` and
``systemd`` where those tiers are used.

The lab's kernel objects have fixed names, so two test runs on one machine would tear down each
other's hosts: a session running as root takes an exclusive lock on ``/run/rocetune-lab.lock``
before its first lab test sets up, and holds it to its end. Collecting (``--collect-only``, or a
run whose lab tests are all deselected) never takes it. scripts/demo.sh holds the same lock for its
whole run and says so with ``ROCETUNE_LAB_LOCKED=1``; scripts/test.sh takes it to tear a lab down;
``flock /run/rocetune-lab.lock CMD`` serialises anything else that brings a lab up by hand.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import pytest

_LAB_DIR = Path(__file__).resolve().parent / "lab"
LAB_LOCK = "/run/rocetune-lab.lock"
_held = []


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _LAB_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.lab)


@pytest.hookimpl(tryfirst=True)  # before the lab's session fixtures set up
def pytest_runtest_setup(item):
    # Only a test that is about to use the lab waits for it (the markers are in pyproject.toml).
    if item.get_closest_marker("lab") and os.geteuid() == 0 and not _held \
            and os.environ.get("ROCETUNE_LAB_LOCKED") != "1":
        _take_lab_lock()


def _take_lab_lock() -> None:
    fd = os.open(LAB_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"\nwaiting for {LAB_LOCK}: another lab is up on this machine", file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
