"""Fixtures for tests that run against real SSH hosts: the multi-host lab (docs/lab.md).

- ``lab4`` (session): four overlay-mode hosts node01..node04, up once per test session and
  taken down at its end. Yields a ``netns.LabInfo`` (hosts, inventory, state_dir, key, ...).
- ``run_on`` (session): ``run_on(host, cmd, check=True, timeout=120, input=None)`` runs a
  command over ssh as root with the lab's key and strict host key checking, and returns the
  ``subprocess.CompletedProcess`` (text). A failing command raises ``netns.LabError``.
- ``lab_exclusive`` (function): for a test that brings labs up and down itself (another size,
  systemd mode, teardown checks). Yields the ``lab`` module; afterwards the lab is taken down
  and, if ``lab4`` is in use in this session, brought back the same (same names, addresses
  and paths), so later tests see no difference.
- ``vm2`` (session): two QEMU VMs vm01, vm02 with Soft-RoCE (lab/vm.py); yields a
  ``vm.VMInfo``. The VM tests run last in a session, in file order, on this one pair (a boot
  costs about a minute under TCG): test_vm.py probes and runs jobs, then test_vm_reboot.py
  converges, reruns and reboots the same VMs. Down at the end of the session.

Everything here needs root; without it the fixtures skip with the reason.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Optional

import pytest

_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from lab import netns  # noqa: E402

SKIP_REASON = "the lab needs root (network namespaces, overlay mounts, one sshd per host)"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "systemd: boots real systemd in lab hosts with systemd-nspawn "
        "(debootstraps a Debian bookworm rootfs once, about a minute)",
    )
    _register_vm_marker(config)


class _SessionLab:
    """The lab that session fixtures share, so a test that takes it over can give it back."""

    def __init__(self) -> None:
        self.n = 0
        self.info: Optional[netns.LabInfo] = None
        self._atexit = False

    def start(self, n: int) -> netns.LabInfo:
        if not self._atexit:
            atexit.register(self._at_exit)  # belt and braces if the session dies hard
            self._atexit = True
        self.info = netns.up(n)
        self.n = n
        return self.info

    def restore(self) -> None:
        if self.n:
            netns.up(self.n)
        else:
            netns.down()

    def stop(self) -> None:
        self.n = 0
        self.info = None
        netns.down()

    def _at_exit(self) -> None:
        if self.n:
            try:
                netns.down()
            except Exception:  # noqa: BLE001 - nothing left to report to at exit
                pass


_SESSION = _SessionLab()


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(SKIP_REASON)


@pytest.fixture(scope="session")
def lab4():
    """Four overlay-mode lab hosts for the whole session."""
    require_root()
    try:
        yield _SESSION.start(4)
    finally:
        _SESSION.stop()


@pytest.fixture(scope="session")
def run_on():
    """The ssh helper: run_on("node01", "hostname").stdout == "node01\\n"."""
    return netns.run_on


@pytest.fixture
def lab_exclusive():
    """Hand the lab to one test; restore the session lab (if any) afterwards."""
    require_root()
    try:
        yield netns
    finally:
        _SESSION.restore()


# ---------------------------------------------------------------------------------------------
# The VM tier (lab/vm.py): QEMU VMs with Soft-RoCE devices.

def pytest_collection_modifyitems(session, config, items):
    """VM tests last, in their collected order: they share one VM pair (vm2) from the first
    to the last, and the namespace lab's own ups and downs come before it."""
    items.sort(key=lambda item: item.get_closest_marker("vm") is not None)  # stable


def _register_vm_marker(config) -> None:
    config.addinivalue_line(
        "markers",
        "vm: boots Debian VMs under QEMU with Soft-RoCE (the image is built once and cached, "
        "about 4 minutes; each boot about a minute under TCG)",
    )


@pytest.fixture(scope="session")
def vm2():
    """Two VMs (vm01, vm02) for the VM tests of a session, taken down at its end.

    Under root a VM lab that cannot come up is an error (the test fails with the console tail),
    never a skip.
    """
    require_root()
    from lab import vm  # noqa: PLC0415

    atexit.register(_vm_down_quietly)
    try:
        yield vm.up(2)
    finally:
        vm.down()


def _vm_down_quietly() -> None:
    from lab import vm  # noqa: PLC0415

    try:
        vm.down()
    except Exception:  # noqa: BLE001 - nothing left to report to at exit
        pass
