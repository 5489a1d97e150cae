"""HiSilicon RoCE (Kunpeng): hns_roce_hw_v2 over hns3."""

from .base import NicDriver

DRIVER = NicDriver(
    name="hns",
    title="HiSilicon RoCE (Kunpeng)",
    device_patterns=(r"hns_",),
    source="drivers/infiniband/hw/hns (Linux)",
    rdma_module="hns_roce_hw_v2",
    netdev_drivers=("hns3",),
    pci_vendors=("0x19e5",),
    qos_tools=("dcb",),
)
