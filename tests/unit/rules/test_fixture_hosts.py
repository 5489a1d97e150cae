"""The corpus conclusions, end to end: probe each fixture host root, plan, check what an engineer
expects (tests/fixtures/hosts/*/PROVENANCE.md names the machine each one models)."""

from __future__ import annotations

import os

import pytest

from rocetune.envfiles.write import render
from rocetune.planner import build_plan

HOSTS = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "hosts")


def plan_for(name):
    root = os.path.join(HOSTS, name)
    assert os.path.isdir(root), f"fixture host {name} is missing"
    from rocetune.probe import collect_features

    f = collect_features(root)
    return build_plan(f, topo_path="/job/nccl-topo.xml"), f


def ports(*names):
    return "=" + ",".join(f"{n}:1" for n in names)


def ib_keys(plan):
    return sorted(k for k in plan.env if k.startswith("NCCL_IB_"))


def test_dgx_h100_rails_not_storage_or_inband():
    plan, _ = plan_for("dgx-h100-roce")
    e = plan.env
    assert e["NCCL_IB_HCA"] == ports(*(f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11)))
    # NCCL 2.21.5 picks the GID itself; no QoS plan and no NIC QoS state: no traffic class
    assert "NCCL_IB_GID_INDEX" not in e and "NCCL_IB_TC" not in e and "NCCL_IB_SL" not in e
    assert e["NCCL_SOCKET_IFNAME"] == "=bond0"


def test_oci_a100_sixteen_rails_without_the_host_ports():
    plan, _ = plan_for("oci-a100-v2")
    want = [f"mlx5_{i}" for i in list(range(1, 13)) + list(range(14, 18))]
    assert plan.env["UCX_NET_DEVICES"] == ports(*want)[1:]
    # OCI's /etc/nccl.conf is kept: its HCA list names the same 16 devices, in OCI's order
    declared = plan.get("NCCL_IB_HCA")
    assert declared.rule_id == "declared-settings" and declared.value.startswith("=mlx5_5,mlx5_6,")
    assert (plan.env["NCCL_IB_TC"], plan.env["NCCL_IB_SL"], plan.env["NCCL_IB_GID_INDEX"]) == ("41", "0", "3")
    assert plan.env["NCCL_IB_QPS_PER_CONNECTION"] == "4" and plan.env["NCCL_IGNORE_CPU_AFFINITY"] == "1"
    assert not [f for f in plan.findings if f.id == "declared-contradicted"]
    # what OCI's file does not say, rocetune adds for NCCL 2.18.5
    assert plan.get("NCCL_IB_SPLIT_DATA_ON_QPS").value == "0" and plan.env["NCCL_IB_TIMEOUT"] == "20"


def test_hgx_infiniband_mlx5_ib_names_and_no_roce_variables():
    plan, _ = plan_for("hgx-h100-ib")
    assert plan.env["NCCL_IB_HCA"] == ports(*(f"mlx5_ib{i}" for i in range(8)))
    assert ib_keys(plan) == ["NCCL_IB_HCA", "NCCL_IB_TIMEOUT"]  # NCCL 2.21.5 defaults to 18


def test_container_with_four_visible_gpus_uses_their_local_pairs():
    plan, _ = plan_for("container-partial-gid")
    assert plan.env["NCCL_IB_HCA"] == ports(*(f"mlx5_{i}" for i in (4, 6, 7, 8, 13, 14, 15, 16)))


def test_azure_vm_gets_a_topology_file_and_leaves_the_accelerated_networking_vf_out():
    plan, _ = plan_for("azure-vm-flat")
    e = plan.env
    assert e["NCCL_IB_HCA"] == ports(*(f"mlx5_ib{i}" for i in range(8)))
    # Azure's /etc/nccl.conf names the image's topology file: kept, nothing generated
    assert e["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv4/topo.xml" and not plan.files
    assert plan.get("NCCL_TOPO_FILE").rule_id == "declared-settings"
    assert e["NCCL_IGNORE_CPU_AFFINITY"] == "1" and e["NCCL_IB_PCI_RELAXED_ORDERING"] == "1"
    assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_TC"} & set(e)


def test_host_without_rdma_says_sockets_and_nothing_else_ib():
    plan, _ = plan_for("hgx-h100-nvlink-nonic")
    assert ib_keys(plan) == ["NCCL_IB_DISABLE"]


def test_cpu_only_roce_client():
    plan, _ = plan_for("cpu-only-roce")
    assert plan.env["NCCL_IB_HCA"] == ports("mlx5_0") and plan.env["NCCL_SOCKET_IFNAME"] == "=eno1"


def test_pcie_server_offers_active_ports_and_says_no_gdr_at_default_level():
    plan, _ = plan_for("pcie-4gpu-2nic")
    assert plan.env["NCCL_IB_HCA"] == ports("mlx5_0", "mlx5_1", "mlx5_2")
    assert any("PIX/PXB" in str(n) for n in plan.notes)


@pytest.mark.parametrize("name", sorted(h for h in os.listdir(HOSTS) if os.path.isdir(os.path.join(HOSTS, h, "sys"))))
def test_every_fixture_host_renders_every_format_deterministically(name):
    plan, f = plan_for(name)
    again, g = plan_for(name)
    for fmt in ("sh", "nccl-conf", "systemd", "docker", "k8s", "json"):
        assert render(plan, fmt, f) == render(again, fmt, g)


def test_rails_with_dmabuf_and_recorded_nic_qos():
    plan, _ = plan_for("dgx-h100-rails-dmabuf")
    e = plan.env
    assert e["NCCL_CROSS_NIC"] == "0"
    rails = plan.get("NCCL_CROSS_NIC").evidence["rails"]
    assert len({r["subnet"] for r in rails}) == 8
    tc = plan.get("NCCL_IB_TC")
    assert tc.value == "106" and "PFC protects only priority 3" in tc.reason
    assert {x["trust"] for x in tc.evidence["nic_qos"]} == {"dscp"} and len(tc.evidence["nic_qos"]) == 8
    assert "NCCL_IB_SL" not in e and "NCCL_IB_GID_INDEX" not in e  # DSCP trust; NCCL 2.26.2 picks GIDs
    assert "NCCL_IB_TIMEOUT" not in e  # 2.26.2 already defaults to 20
    report = plan.reports["gpudirect-rdma"]
    assert report["available"] and report["route"] == "DMA-BUF"
    assert not [f for f in plan.findings if f.id.startswith("gdr-")]


def test_one_subnet_host_gets_the_arp_finding_and_no_cross_nic():
    plan, _ = plan_for("h100-roce-one-subnet")
    found = [f for f in plan.findings if f.id == "rdma-ports-share-subnet"]
    assert len(found) == 1 and found[0].severity == "warning" and found[0].subject == "10.10.10.0/24"
    assert "arp_ignore is 0" in found[0].message and "enp24s0np0" in found[0].message
    assert "arp_announce is 0" in found[0].message and "rp_filter" not in found[0].message.split("Fix")[0]
    assert "NCCL_CROSS_NIC" not in plan.env
