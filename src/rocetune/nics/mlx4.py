"""NVIDIA (Mellanox) ConnectX-3: the mlx4 driver pair."""

from .base import NicDriver

DRIVER = NicDriver(
    name="mlx4",
    title="NVIDIA ConnectX-3",
    device_patterns=(r"mlx4_",),
    source="drivers/infiniband/hw/mlx4 (Linux)",
    rdma_module="mlx4_ib",
    netdev_drivers=("mlx4_core",),
    pci_vendors=("0x15b3",),
    qos_tools=("dcb",),
    notes=(
        "RoCE v2 only from ConnectX-3 Pro",
    ),
)
