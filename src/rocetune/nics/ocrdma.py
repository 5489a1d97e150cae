"""Emulex OneConnect RoCE: ocrdma over be2net."""

from .base import NicDriver

DRIVER = NicDriver(
    name="ocrdma",
    title="Emulex OneConnect",
    device_patterns=(r"ocrdma",),
    source="drivers/infiniband/hw/ocrdma (Linux)",
    rdma_module="ocrdma",
    netdev_drivers=("be2net",),
    pci_vendors=("0x10df",),
)
