"""AMD Pensando DSC and Pollara NICs: ionic_rdma over ionic."""

from .base import NicDriver

DRIVER = NicDriver(
    name="ionic",
    title="AMD Pensando (DSC, Pollara)",
    device_patterns=(r"ionic_",),
    source="drivers/infiniband/hw/ionic, drivers/net/ethernet/pensando/ionic (Linux)",
    rdma_module="ionic_rdma",
    netdev_drivers=("ionic",),
    pci_vendors=("0x1dd8",),
    qos_tools=("dcb",),
)
