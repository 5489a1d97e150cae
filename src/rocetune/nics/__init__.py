"""The NIC vendors and RDMA drivers rocetune knows: one module per driver in this package, each
declaring `DRIVER = NicDriver(...)` (nics.base). Adding a driver is one new module here and its
test; the probe's kernel modules, lint's RDMA device names and the PHY and firmware readers ask
it, and the collection's QoS modules (which run on the node without this package) read its QoS
facts from core/nic_facts.py, which tools/sync_module_utils.py writes from it (rerun it after
adding a driver; `--check` fails until then). docs/nic-drivers.md shows a worked example.
"""

from __future__ import annotations

import importlib
import re
from typing import Dict, Optional, Pattern, Tuple

from ..pkgdata import submodules
from .base import NicDriver

__all__ = ["NicDriver", "by_netdev_driver", "device_name_re", "drivers", "vendors_read_by", "watched_modules"]

_NOT_DRIVERS = ("base",)
_cache: Dict[str, NicDriver] = {}


def drivers() -> Dict[str, NicDriver]:
    """Every driver module of this package by name, in name order. A module without a DRIVER, or
    whose DRIVER names another module, is a programming error (ValueError naming it)."""
    if not _cache:
        found = {}
        for name in submodules(__path__):
            if name in _NOT_DRIVERS or name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{name}")
            driver = getattr(module, "DRIVER", None)
            if not isinstance(driver, NicDriver) or driver.name != name:
                raise ValueError(f"rocetune.nics.{name}: DRIVER must be a NicDriver named {name!r}")
            found[name] = driver
        _cache.update(found)
    return dict(_cache)


def device_name_re() -> Pattern[str]:
    """A device name some RDMA driver gives (mlx5_0, irdma0, rxe0, efa_0 ...)."""
    patterns = [p for d in drivers().values() for p in d.device_patterns]
    return re.compile("^(?:" + "|".join(patterns) + ")")


def watched_modules() -> Tuple[str, ...]:
    """The drivers' kernel modules the probe reports, in registry order."""
    return tuple(m for d in drivers().values() for m in d.watched_modules)


def vendors_read_by(tool: str) -> Tuple[str, ...]:
    """PCI vendor ids of the NICs whose PHY or firmware `tool` (mlxlink, mlxconfig) reads."""
    return tuple(sorted({v for d in drivers().values() if tool in d.link_tools + d.firmware_tools
                         for v in d.pci_vendors}))


def by_netdev_driver(name: Optional[str]) -> Optional[NicDriver]:
    """The driver whose Ethernet side is `name` (mlx5_core -> mlx5), or None."""
    return next((d for d in drivers().values() if name and name in d.netdev_drivers), None)
