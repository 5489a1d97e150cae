"""Marvell (QLogic) FastLinQ 41000/45000: qedr over qede."""

from .base import NicDriver

DRIVER = NicDriver(
    name="qedr",
    title="Marvell FastLinQ",
    device_patterns=(r"qedr",),
    source="drivers/infiniband/hw/qedr (Linux)",
    rdma_module="qedr",
    netdev_drivers=("qede",),
    pci_vendors=("0x1077",),
    qos_tools=("dcb",),
)
