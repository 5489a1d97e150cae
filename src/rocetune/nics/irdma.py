"""Intel Ethernet 800 series (E810, ice) and X722 (i40e): irdma, iWARP and RoCEv2."""

from .base import NicDriver

DRIVER = NicDriver(
    name="irdma",
    title="Intel Ethernet 800 series (E810), X722",
    device_patterns=(r"irdma",),
    source="drivers/infiniband/hw/irdma, Documentation/networking/device_drivers/ethernet/intel/ice.rst (Linux)",
    rdma_module="irdma",
    netdev_drivers=("ice", "i40e"),
    pci_vendors=("0x8086",),
    watched_modules=("irdma",),
    qos_tools=("dcb",),
    notes=(
        "E810 runs DCBX in its firmware LLDP agent: software DCB (dcb, lldpad) needs "
        "`ethtool --set-priv-flags IF fw-lldp-agent off` first",
        "RoCEv2 or iWARP per port: the irdma module parameter roce_ena",
    ),
)
