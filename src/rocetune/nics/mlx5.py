"""NVIDIA (Mellanox) ConnectX-4 and newer, BlueField: the mlx5 driver pair."""

from .base import NicDriver

DRIVER = NicDriver(
    name="mlx5",
    title="NVIDIA ConnectX-4 and newer, BlueField",
    device_patterns=(r"mlx5_",),
    source="drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c, drivers/infiniband/hw/mlx5 (Linux); NVIDIA MFT",
    rdma_module="mlx5_ib",
    netdev_drivers=("mlx5_core",),
    pci_vendors=("0x15b3",),
    watched_modules=("mlx5_core", "mlx5_ib"),
    qos_tools=("mlnx_qos", "dcb"),
    firmware_tools=("mlxconfig", "mstconfig"),
    link_tools=("mlxlink", "mstlink"),
    pfc_cable_length=True,
    notes=(
        "PFC headroom is sized from the cable length (dcbnl buffer delay; mlx5 ignores 0 and 1000 m or more)",
        "DSCP trust comes from DSCP app entries (dcb app / mlnx_qos --trust dscp)",
        "a bond of two ports is one RDMA device, mlx5_bond_N",
    ),
)
