"""Soft-iWARP: iWARP in software on any netdev."""

from .base import NicDriver

DRIVER = NicDriver(
    name="siw",
    title="Soft-iWARP (software iWARP)",
    device_patterns=(r"siw",),
    source="drivers/infiniband/sw/siw (Linux)",
    rdma_module="siw",
    software=True,
)
