"""Cisco usNIC over enic."""

from .base import NicDriver

DRIVER = NicDriver(
    name="usnic",
    title="Cisco usNIC",
    device_patterns=(r"usnic_",),
    source="drivers/infiniband/hw/usnic (Linux)",
    rdma_module="usnic_verbs",
    netdev_drivers=("enic",),
    pci_vendors=("0x1137",),
)
