"""Chelsio T4-T6 iWARP: iw_cxgb4 over cxgb4."""

from .base import NicDriver

DRIVER = NicDriver(
    name="cxgb4",
    title="Chelsio T4-T6 (iWARP)",
    device_patterns=(r"cxgb4_",),
    source="drivers/infiniband/hw/cxgb4 (Linux)",
    rdma_module="iw_cxgb4",
    netdev_drivers=("cxgb4",),
    pci_vendors=("0x1425",),
)
