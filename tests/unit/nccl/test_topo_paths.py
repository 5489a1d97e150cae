"""GPU-NIC path types over a topology file, as NCCL's ncclTopoSetPaths classifies them."""

from __future__ import annotations

from rocetune.nccl.topo_paths import gpu_nic_paths
from rocetune.nccl.topo_read import parse_topology

FILE = """<system version="1">
  <cpu numaid="0" arch="arm64">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
      <pci busid="0000:02:00.0" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="16"/>
      <pci busid="ffff:ff:02.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:03:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>
      </pci>
    </pci>
    <pci busid="0000:04:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">
      <nic><net name="mlx5_bond_0"/></nic>
    </pci>
  </cpu>
  <cpu numaid="1" arch="arm64">
    <pci busid="0000:81:00.0" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="16"/>
  </cpu>
</system>"""


def test_pix_pxb_phb_sys():
    gpus = {0: "00000000:01:00.0", 1: "0000:03:00.0"}       # NVML's 8-digit domain matches
    nics = {"mlx5_0": "0000:02:00.0", "mlx5_bond_0": None, "mlx5_2": "0000:81:00.0", "mlx5_9": "0000:99:00.0"}
    paths, no_gpu, no_nic = gpu_nic_paths(parse_topology(FILE), gpus, nics)
    assert paths["mlx5_0"] == {0: "PIX", 1: "PXB"}         # one bridge / a bridge below the bridge
    assert paths["mlx5_bond_0"] == {0: "PHB", 1: "PHB"}     # matched by <net name>; only the CPU in common
    assert paths["mlx5_2"] == {0: "SYS", 1: "SYS"}          # another <cpu>
    assert no_gpu == [] and no_nic == ["mlx5_9"]


def test_a_gpu_the_file_does_not_name_is_reported_not_guessed():
    paths, no_gpu, _ = gpu_nic_paths(parse_topology(FILE), {0: "0000:01:00.0", 5: "0000:55:00.0"},
                                     {"mlx5_0": "0000:02:00.0"})
    assert paths == {"mlx5_0": {0: "PIX"}} and no_gpu == [5]
