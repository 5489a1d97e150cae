"""Markers for the whole suite.

Every test under tests/lab/ is marked ``lab`` (it needs root and builds namespace hosts or
VMs), so ``pytest -m "not lab"`` is the fast loop; the lab's own conftest adds ``vm`` and
``systemd`` where those tiers are used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_LAB_DIR = Path(__file__).resolve().parent / "lab"


def pytest_configure(config):
    config.addinivalue_line("markers", "lab: needs root and the multi-host lab (namespace hosts or Soft-RoCE VMs)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds on a 2-core machine")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _LAB_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.lab)
