"""Microsoft Azure Network Adapter: mana_ib over mana."""

from .base import NicDriver

DRIVER = NicDriver(
    name="mana",
    title="Microsoft Azure Network Adapter",
    device_patterns=(r"mana_",),
    source="drivers/infiniband/hw/mana (Linux)",
    rdma_module="mana_ib",
    netdev_drivers=("mana",),
    pci_vendors=("0x1414",),
)
