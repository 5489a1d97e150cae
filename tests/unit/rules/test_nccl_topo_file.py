"""nccl-topo-file: a flattened host gets NCCL's topology XML, pairing each GPU with its NIC(s)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rocetune.render.files import render_file

from .featurekit import Host, plan_of, rail_host


def azure_like(n=8):
    """Synthetic PCI domains, every GPU-NIC path SYS: NCCL sees no locality at all."""
    h = Host().iface("eth0", "10.1.0.7/24", default=True, kind="virtual", driver=None)
    h.numa = [{"id": i, "cpulist": f"{24 * i}-{24 * i + 23}"} for i in range(4)]
    for i in range(n):
        h.gpu(i, bdf=f"{i + 1:04x}:00:00.0", numa=i // 2)
        h.rdma(f"mlx5_ib{i}", link_layer="InfiniBand", netdev=f"ib{i}", pci=f"{0x101 + i:04x}:00:00.0",
               pci_class="0x020700", rate=200)
    return h.flattened("GPUs and NICs sit alone on 16 synthetic PCI domains with no bridges",
                       hypervisor="Microsoft")


def groups_of(xml):
    root = ET.fromstring(xml)
    assert root.tag == "system" and root.get("version") == "1"
    out = []
    for cpu in root.findall("cpu"):
        for bridge in cpu.findall("pci"):
            assert bridge.get("class") == "0x060400"
            kids = bridge.findall("pci")
            gpus = [k.get("busid") for k in kids if k.get("class").startswith("0x03")]
            nets = [n.get("name") for k in kids for n in k.findall("nic/net")]
            out.append((int(cpu.get("numaid")), gpus, nets))
    return out


def test_flattened_vm_gets_a_topology_file_next_to_the_env_file():
    plan = plan_of(azure_like().build(), topo_path="/srv/job/nccl-topo.xml")
    d = plan.get("NCCL_TOPO_FILE")
    assert d.value == "/srv/job/nccl-topo.xml" and d.rule_id == "nccl-topo-file"
    (f,) = plan.files
    assert f.name == "nccl-topo.xml" and f.key == "NCCL_TOPO_FILE"
    groups = groups_of(render_file(f))
    assert len(groups) == 8
    assert (0, ["0001:00:00.0"], ["mlx5_ib0"]) in groups and (3, ["0008:00:00.0"], ["mlx5_ib7"]) in groups
    assert any("PCI order" in str(w) for w in plan.warnings)


def test_xml_states_layout_only():
    plan = plan_of(azure_like(2).build(), topo_path="/x/nccl-topo.xml")
    xml = render_file(plan.files[0])
    assert "\t" not in xml and "gdr=" not in xml and "<gpu" not in xml and ' speed="' not in xml
    assert 'class="0x020700"' in xml


def test_locality_when_known_beats_order():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    for i in range(4):
        h.gpu(i, numa=0)
    # two GPUs share each pair of NICs (A100-style), named out of PCI order
    h.rdma("mlx5_3", netdev="r3", ipv4="192.168.3.5/24", paths={0: "PXB", 1: "PXB"})
    h.rdma("mlx5_1", netdev="r1", ipv4="192.168.1.5/24", paths={0: "PXB", 1: "PXB"})
    h.rdma("mlx5_2", netdev="r2", ipv4="192.168.2.5/24", paths={2: "PXB", 3: "PXB"})
    h.rdma("mlx5_0", netdev="r0", ipv4="192.168.0.5/24", paths={2: "PXB", 3: "PXB"})
    h.flattened("running under KVM with GPUs not behind any PCIe switch")
    plan = plan_of(h.build(), topo_path="/x/nccl-topo.xml")
    groups = groups_of(render_file(plan.files[0]))
    assert sorted((len(g), sorted(n)) for _, g, n in groups) == [(2, ["mlx5_0", "mlx5_2"]), (2, ["mlx5_1", "mlx5_3"])]
    assert not any("PCI order" in str(w) for w in plan.warnings)


def test_not_flattened_no_file():
    plan = plan_of(rail_host().build(), topo_path="/x/nccl-topo.xml")
    assert plan.get("NCCL_TOPO_FILE") is None and not plan.files


def test_pairing_that_cannot_be_derived_writes_nothing():
    h = azure_like(3)
    del h.devices["mlx5_ib2"]
    plan = plan_of(h.build(), topo_path="/x/nccl-topo.xml")
    assert plan.get("NCCL_TOPO_FILE") is None and not plan.files
    assert any("cannot be derived" in str(w) for w in plan.warnings)


def test_without_an_output_file_the_default_path_is_named():
    plan = plan_of(azure_like(2).build())
    assert plan.env["NCCL_TOPO_FILE"] == "/etc/rocetune/nccl-topo.xml"
    assert plan.files[0].name == "nccl-topo.xml"


def test_an_env_printed_without_its_topology_file_does_not_point_at_one(tmp_path):
    from rocetune.app import plan_env

    env = plan_env(azure_like(2).build(), ["sh"], env_dir=str(tmp_path), files_will_be_written=False)
    assert "NCCL_TOPO_FILE" not in env.texts["sh"] and not env.files
    assert any("only with -o" in str(w) for w in env.plan.warnings)
    (tmp_path / "nccl-topo.xml").write_text(render_file(plan_of(azure_like(2).build()).files[0]))
    again = plan_env(azure_like(2).build(), ["sh"], env_dir=str(tmp_path), files_will_be_written=False)
    assert f"NCCL_TOPO_FILE='{tmp_path}/nccl-topo.xml'" in again.texts["sh"]
