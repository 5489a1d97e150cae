"""NCCL topology XML: NCCL's own format, nothing its reader would choke on."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from rocetune.nccl.topo import Endpoint, Group, TopologyError, TopoNode, build_system, nccl_link_speed
from rocetune.render.topo_xml import render_topology as render_tree

CPU = {"arch": "x86_64", "vendor": "GenuineIntel", "familyid": "6", "modelid": "143"}


def render_topology(groups, comment=""):
    return render_tree(build_system(groups, CPU), comment)


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


def test_every_cpu_carries_its_identity_and_every_pci_its_link():
    root = ET.fromstring(render_topology([group(0), group(1, "0002:00:00.0", "0102:00:00.0", ["mlx5_ib1"])]))
    for cpu in root.iter("cpu"):
        assert {k: cpu.get(k) for k in CPU} == CPU and cpu.get("numaid") in ("0", "1")
    pcis = list(root.iter("pci"))
    assert len(pcis) == 6
    for pci in pcis:
        assert pci.get("link_speed") in ("16.0 GT/s PCIe",) and pci.get("link_width") == "16", pci.attrib
    # the NIC's unknown link takes its bridge's, not nothing
    nic = [p for p in pcis if p.get("busid") == "0101:00:00.0"][0]
    assert nic.get("link_speed") == "16.0 GT/s PCIe"


def test_zhaoxin_vendor_keeps_its_spaces():
    xml = render_tree(build_system([group()], dict(CPU, vendor="  Shanghai  ")))
    assert 'vendor="  Shanghai  "' in xml
    assert ET.fromstring(xml).find("cpu").get("vendor") == "  Shanghai  "


@pytest.mark.parametrize("value", ['a"b', "a<b", "a&b", "tab\there"])
def test_attribute_values_nccl_cannot_read_are_refused(value):
    with pytest.raises(TopologyError):
        render_tree(TopoNode("system", {"version": "1"}, [TopoNode("cpu", {"numaid": "0", "arch": value})]))
