"""nccl-cross-nic: NCCL_CROSS_NIC=0 only where every compute port has a subnet of its own."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def test_rail_subnets_give_cross_nic_0_with_the_subnets_as_evidence():
    d = plan_of(rail_host(4).build()).get("NCCL_CROSS_NIC")
    assert d.value == "0"
    assert [r["subnet"] for r in d.evidence["rails"]] == [f"192.168.{i}.0/24" for i in range(4)]


def one_subnet_host(n=4):
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    for i in range(n):
        h.gpu(i)
        h.rdma(f"mlx5_{i}", netdev=f"ens{i}np0", ipv4=f"10.10.10.{i + 5}/24", paths={i: "PIX"})
    return h


def test_one_shared_subnet_leaves_nccl_default():
    assert "NCCL_CROSS_NIC" not in plan_of(one_subnet_host().build()).env


def test_single_port_and_infiniband_leave_nccl_default():
    assert "NCCL_CROSS_NIC" not in plan_of(rail_host(1).build()).env
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    for i in range(2):
        h.gpu(i)
        h.rdma(f"mlx5_ib{i}", link_layer="InfiniBand", netdev=f"ib{i}", paths={i: "PIX"})
    assert "NCCL_CROSS_NIC" not in plan_of(h.build()).env


def test_nccl_2_30_gets_the_rail_id_note():
    plan = plan_of(rail_host(2, nccl="2.30.7").build())
    assert plan.env["NCCL_CROSS_NIC"] == "0" and any("#2097" in str(n) for n in plan.notes)
