"""VMware paravirtual RDMA."""

from .base import NicDriver

DRIVER = NicDriver(
    name="vmw_pvrdma",
    title="VMware paravirtual RDMA",
    device_patterns=(r"vmw_pvrdma",),
    source="drivers/infiniband/hw/vmw_pvrdma (Linux)",
    rdma_module="vmw_pvrdma",
    pci_vendors=("0x15ad",),
)
