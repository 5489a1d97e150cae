"""NCCL topology XML: NCCL's own format, nothing its reader would choke on."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from rocetune.nccl.topo import Endpoint, Group, TopologyError, nccl_link_speed
from rocetune.render.topo_xml import render_topology


def group(numa=0, gpu="0001:00:00.0", nic="0101:00:00.0", nets=("mlx5_ib0",)):
    return Group(numa, [Endpoint(gpu, "0x030200", "16.0 GT/s PCIe", 16)],
                 [Endpoint(nic, "0x020700", None, None, list(nets))])


def test_structure_is_system_cpu_pci_pci_nic_net():
    xml = render_topology([group(0), group(1, "0002:00:00.0", "0102:00:00.0", ["mlx5_ib1"])], "hello")
    root = ET.fromstring(xml)
    assert root.tag == "system" and root.get("version") == "1"
    cpus = root.findall("cpu")
    assert [c.get("numaid") for c in cpus] == ["0", "1"]
    bridge = cpus[0].find("pci")
    assert bridge.get("busid") == "ffff:ff:01.0" and bridge.get("class") == "0x060400"
    gpu, nic = bridge.findall("pci")
    assert gpu.get("busid") == "0001:00:00.0" and nic.find("nic/net").get("name") == "mlx5_ib0"
    assert cpus[1].find("pci").get("busid") == "ffff:ff:02.0"


def test_what_nccls_reader_needs():
    xml = render_topology([group()], "a comment -- with dashes")
    assert "\t" not in xml and "<?xml" not in xml and "&" not in xml
    assert xml.count("<!--") == 1 and "-- with" not in xml
    # every attribute value double-quoted, names short enough for NCCL's 256-byte strings
    for name, value in re.findall(r' ([a-z_]+)="([^"]*)"', xml):
        assert len(name) < 255 and len(value) < 255


def test_deterministic():
    a = render_topology([group(), group(1, "0002:00:00.0", "0102:00:00.0")])
    b = render_topology([group(), group(1, "0002:00:00.0", "0102:00:00.0")])
    assert a == b


@pytest.mark.parametrize("name", ['mlx5"0', "mlx5<0", "a&b", "with space", ""])
def test_names_nccl_cannot_read_are_refused(name):
    with pytest.raises(TopologyError):
        render_topology([group(nets=[name])])


def test_bad_bus_id_refused():
    with pytest.raises(TopologyError):
        render_topology([group(gpu="GPU0")])


@pytest.mark.parametrize("text,want", [("32.0 GT/s PCIe", "32.0 GT/s PCIe"), ("16 GT/s", "16.0 GT/s PCIe"),
                                       ("2.5 GT/s PCIe", "2.5 GT/s PCIe"), ("Unknown", None), (None, None),
                                       ("7 GT/s", None)])
def test_link_speed_spelled_as_nccl_knows_it(text, want):
    assert nccl_link_speed(text) == want
