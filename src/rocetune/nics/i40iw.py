"""Intel X722 iWARP under the driver irdma replaced (Linux 5.14)."""

from .base import NicDriver

DRIVER = NicDriver(
    name="i40iw",
    title="Intel X722 (iWARP, before Linux 5.14)",
    device_patterns=(r"i40iw",),
    source="drivers/infiniband/hw/i40iw (Linux 5.13 and older)",
    rdma_module="i40iw",
    netdev_drivers=("i40e",),
    pci_vendors=("0x8086",),
)
