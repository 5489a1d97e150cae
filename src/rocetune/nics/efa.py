"""AWS Elastic Fabric Adapter (SRD, not RoCE)."""

from .base import NicDriver

DRIVER = NicDriver(
    name="efa",
    title="AWS Elastic Fabric Adapter",
    device_patterns=(r"efa_", r"efa\d"),
    source="drivers/infiniband/hw/efa (Linux)",
    rdma_module="efa",
    pci_vendors=("0x1d0f",),
    watched_modules=("efa",),
    notes=(
        "SRD transport through aws-ofi-nccl, not RoCE: no PFC or DSCP to set",
    ),
)
