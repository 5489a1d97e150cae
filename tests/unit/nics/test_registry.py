"""The NIC driver registry (rocetune.nics): one module per driver, each declaring its facts, and
every place that needs a driver's facts asks it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rocetune import nics
from rocetune.nics.base import NicDriver
from tests.unit.roles import load_module_utils

PACKAGE = Path(nics.__file__).parent
PCI_VENDOR = re.compile(r"^0x[0-9a-f]{4}\Z")


def test_the_registry_lists_exactly_the_modules_present():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "base"))
    assert list(nics.drivers()) == modules
    assert {"mlx5", "irdma", "bnxt_re", "ionic", "rxe"} <= set(modules)


@pytest.mark.parametrize("name", sorted(nics.drivers()))
def test_each_driver_declares_what_the_callers_need(name):
    d = nics.drivers()[name]
    assert isinstance(d, NicDriver) and d.name == name and d.title and d.source and d.rdma_module
    assert d.device_patterns and all(re.compile(p) for p in d.device_patterns)
    assert all(PCI_VENDOR.match(v) for v in d.pci_vendors)
    assert d.software == (not d.pci_vendors), "a device has a PCI vendor unless it is software"
    assert not d.software or not (d.netdev_drivers or d.qos_tools or d.firmware_tools or d.link_tools)
    assert set(d.qos_tools) <= {"mlnx_qos", "dcb"}


def test_a_new_driver_is_one_module(tmp_path, monkeypatch):
    """What CONTRIBUTING's worked example adds: one file, and lint, the probe's modules list and
    the PHY readers' vendors know it with nothing else changed."""
    (tmp_path / "foo_rdma.py").write_text(
        'from rocetune.nics.base import NicDriver\n\n'
        'DRIVER = NicDriver(name="foo_rdma", title="Foo NIC", device_patterns=(r"foo\\d",), source="drivers/foo",\n'
        '                   rdma_module="foo_rdma", pci_vendors=("0x1f00",), watched_modules=("foo_rdma",),\n'
        '                   link_tools=("mlxlink",))\n')
    monkeypatch.setattr(nics, "__path__", [*nics.__path__, str(tmp_path)])
    monkeypatch.setattr(nics, "_cache", {})
    monkeypatch.delitem(sys.modules, "rocetune.nics.foo_rdma", raising=False)
    assert "foo_rdma" in nics.drivers()
    assert nics.device_name_re().match("foo0") and not nics.device_name_re().match("food")
    assert "foo_rdma" in nics.watched_modules()
    assert "0x1f00" in nics.vendors_read_by("mlxlink")


def test_a_module_without_its_driver_is_refused(tmp_path, monkeypatch):
    (tmp_path / "bar.py").write_text("TITLE = 'no DRIVER here'\n")
    monkeypatch.setattr(nics, "__path__", [*nics.__path__, str(tmp_path)])
    monkeypatch.setattr(nics, "_cache", {})
    monkeypatch.delitem(sys.modules, "rocetune.nics.bar", raising=False)
    with pytest.raises(ValueError, match="rocetune.nics.bar: DRIVER must be a NicDriver named 'bar'"):
        nics.drivers()


def test_lint_the_probe_and_the_readers_ask_the_registry():
    from rocetune.lint import setting as lint_setting
    from rocetune.probe.sources import kernel, nic_firmware, phy

    for name in ("mlx5_0", "mlx5_bond_0", "irdma0", "bnxt_re1", "ionic_0", "rxe0", "efa_0", "efa0", "siw0"):
        assert lint_setting.RDMA_NAME.match(name), name
    for name in ("eth0", "ens1f0np0", "ib0", "lo"):
        assert not lint_setting.RDMA_NAME.match(name), name
    assert set(nics.watched_modules()) <= set(kernel.MODULES)
    assert {"mlx5_core", "mlx5_ib", "bnxt_re", "irdma", "efa"} <= set(kernel.MODULES)
    assert phy.LINK_TOOL_VENDORS == nic_firmware.FIRMWARE_VENDORS == ("0x15b3",)


def test_the_collections_qos_modules_hold_the_registrys_qos_facts():
    """roce_qos's module and its boot script run on the node without rocetune: their driver facts
    are the registry's, through core/nic_facts.py, which tools/sync_module_utils.py writes from it
    (test_module_utils_sync holds the copy)."""
    from rocetune.core import nic_facts

    state = load_module_utils("roce_qos", "roce_qos_state")
    drivers = nics.drivers().values()
    assert set(nic_facts.CABLE_LENGTH_DRIVERS) == {n for d in drivers if d.pfc_cable_length for n in d.netdev_drivers}
    assert state.nic_facts.CABLE_LENGTH_DRIVERS == nic_facts.CABLE_LENGTH_DRIVERS
    assert not hasattr(load_module_utils("roce_qos", "roce_qos_buffer"), "CABLE_LENGTH_DRIVERS")  # no second list
    for d in drivers:
        for netdev in d.netdev_drivers:
            want = "mlnx_qos" if d.qos_tools[:1] == ("mlnx_qos",) else "dcb"
            assert state.pick_backend("auto", netdev, True) == want, netdev
    assert nics.by_netdev_driver("mlx5_core").name == "mlx5" and nics.by_netdev_driver("virtio_net") is None
