"""Cornelis (Intel) Omni-Path HFI: not Ethernet, named so lint knows its devices."""

from .base import NicDriver

DRIVER = NicDriver(
    name="hfi1",
    title="Cornelis Omni-Path HFI",
    device_patterns=(r"hfi1_",),
    source="drivers/infiniband/hw/hfi1 (Linux)",
    rdma_module="hfi1",
    pci_vendors=("0x8086",),
)
