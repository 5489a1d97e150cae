"""Alibaba Elastic RDMA: erdma."""

from .base import NicDriver

DRIVER = NicDriver(
    name="erdma",
    title="Alibaba Elastic RDMA",
    device_patterns=(r"erdma_",),
    source="drivers/infiniband/hw/erdma (Linux)",
    rdma_module="erdma",
    pci_vendors=("0x1ded",),
)
