"""What a NIC driver module of the registry declares (rocetune.nics): one `DRIVER = NicDriver(...)`
per module, facts only -- the code that uses them lives where it always did (probe, lint, doctor,
the roles' modules), asking the registry instead of keeping its own list of drivers."""

from __future__ import annotations

from typing import Tuple

from ..model.record import FrozenRecord


class NicDriver(FrozenRecord):
    name: str  # the module's own name: the RDMA driver as the kernel tree names it (mlx5, irdma)
    title: str  # the hardware, as an operator names it
    device_patterns: Tuple[str, ...]  # regexes a device name under /sys/class/infiniband starts with
    source: str  # where the facts below come from (a kernel file, a vendor document)
    rdma_module: str  # the kernel module that registers the RDMA device (the rdma_core role loads it)
    netdev_drivers: Tuple[str, ...]  # the Ethernet driver of the PCI function (/sys/class/net/IF/device/driver)
    pci_vendors: Tuple[str, ...]  # PCI vendor ids ("0x15b3"); () for a software device
    software: bool  # no PCI function of its own: a device on top of any netdev
    watched_modules: Tuple[str, ...]  # modules the probe reports loaded or not (Features kernel.modules)
    qos_tools: Tuple[str, ...]  # what sets its PFC/trust/ETS, the first preferred where installed
    pfc_cable_length: bool  # sizes the PFC headroom from a cable length (dcbnl buffer's delay)
    firmware_tools: Tuple[str, ...]  # readers of its persistent firmware parameters (NVCONFIG)
    link_tools: Tuple[str, ...]  # readers of its PHY, FEC and module (mlxlink)
    notes: Tuple[str, ...]  # what differs from the common case: GID table, traffic class, DCB
    _fields = ("name", "title", "device_patterns", "source", "rdma_module", "netdev_drivers",
               "pci_vendors", "software", "watched_modules", "qos_tools", "pfc_cable_length",
               "firmware_tools", "link_tools", "notes")

    def __init__(self, name: str, title: str, device_patterns: Tuple[str, ...], source: str,
                 rdma_module: str = "", netdev_drivers: Tuple[str, ...] = (),
                 pci_vendors: Tuple[str, ...] = (), software: bool = False,
                 watched_modules: Tuple[str, ...] = (), qos_tools: Tuple[str, ...] = (),
                 pfc_cable_length: bool = False, firmware_tools: Tuple[str, ...] = (),
                 link_tools: Tuple[str, ...] = (), notes: Tuple[str, ...] = ()) -> None:
        self._set(name, title, device_patterns, source, rdma_module, netdev_drivers, pci_vendors, software,
                  watched_modules, qos_tools, pfc_cable_length, firmware_tools, link_tools, notes)
