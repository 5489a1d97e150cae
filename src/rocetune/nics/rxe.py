"""Soft-RoCE: RoCEv2 in software on any netdev (the lab's VMs run it)."""

from .base import NicDriver

DRIVER = NicDriver(
    name="rxe",
    title="Soft-RoCE (software RoCEv2)",
    device_patterns=(r"rxe",),
    source="drivers/infiniband/sw/rxe (Linux)",
    rdma_module="rdma_rxe",
    software=True,
    notes=(
        "its GID table follows the netdev's addresses; no PFC, ECN or DCB (a stand-in, never line rate)",
        "no hardware counters beyond rxe_hw_counters.c's, no PCI function to read",
    ),
)
