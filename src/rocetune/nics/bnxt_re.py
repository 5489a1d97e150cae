"""Broadcom NetXtreme-E/C: bnxt_re over bnxt_en."""

from .base import NicDriver

DRIVER = NicDriver(
    name="bnxt_re",
    title="Broadcom NetXtreme-E/C (BCM57xxx)",
    device_patterns=(r"bnxt_re",),
    source="drivers/infiniband/hw/bnxt_re, drivers/net/ethernet/broadcom/bnxt/bnxt_dcb.c (Linux)",
    rdma_module="bnxt_re",
    netdev_drivers=("bnxt_en",),
    pci_vendors=("0x14e4",),
    watched_modules=("bnxt_re",),
    qos_tools=("dcb",),
    notes=(
        "DCB is applied by the firmware agent unless the host takes it over (bnxt_en dcbnl)",
    ),
)
