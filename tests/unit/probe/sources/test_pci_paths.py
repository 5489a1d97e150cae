import pytest

from rocetune.model.vocab import path_type
from rocetune.probe.sources.pci import _chain, classify


def dev(chain, rc="pci0000:00", numa=0):
    return {"root_complex": rc, "switches": chain[1:-1:2], "numa_node": numa}


GPU = ["0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]


@pytest.mark.parametrize("other,expected", [
    # same switch, other downstream port
    (["0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:04:00.0"], "PIX"),
    # below a second switch hanging off the same top switch
    (["0000:00:01.0", "0000:01:00.0", "0000:02:10.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"], "PXB"),
    # another root port of the same host bridge
    (["0000:00:03.0", "0000:08:00.0"], "PHB"),
])
def test_same_root_complex(other, expected):
    assert path_type(dev(GPU), dev(other)) == expected


def test_other_host_bridge_same_numa_is_node_and_other_socket_is_sys():
    other = ["0000:40:01.0", "0000:41:00.0"]
    assert path_type(dev(GPU), dev(other, rc="pci0000:40", numa=0)) == "NODE"
    assert path_type(dev(GPU), dev(other, rc="pci0000:80", numa=1)) == "SYS"


def test_chain_reads_root_complex_and_bdfs():
    rc, chain = _chain("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0")
    assert rc == "pci0000:00" and chain == ["0000:00:01.0", "0000:01:00.0"]
    assert _chain("/sys/devices/virtual/net/lo") == (None, [])


@pytest.mark.parametrize("vendor,cls,kind", [
    ("0x10de", "0x030200", "gpu"), ("0x10de", "0x030000", "gpu"), ("0x10de", "0x068000", "nvswitch"),
    ("0x15b3", "0x020000", "nic"), ("0x15b3", "0x020700", "nic"), ("0x1000", "0x060400", "bridge"),
    ("0x1a03", "0x030000", "other"),
])
def test_classify(vendor, cls, kind):
    assert classify(vendor, cls) == kind


def test_unknown_numa_node_is_sys_unless_the_host_has_one_node():
    other = ["0000:40:01.0", "0000:41:00.0"]
    assert path_type(dev(GPU, numa=None), dev(other, rc="pci0000:40", numa=None)) == "SYS"
    assert path_type(dev(GPU, numa=None), dev(other, rc="pci0000:40", numa=None), single_node=True) == "NODE"
