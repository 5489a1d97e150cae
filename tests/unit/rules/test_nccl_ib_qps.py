"""nccl-ib-qps: bonded (LAG) RoCE ports get at least two QPs per connection."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def lag_host(members=2, with_bond_netdev=True):
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0)
    slaves = [f"ens{i}f0np0" for i in range(members)]
    if with_bond_netdev:
        h.iface("bond1", "192.168.1.5/24", kind="bond", slaves=slaves)
        for s in slaves:
            h.iface(s, master="bond1")
    h.rdma("mlx5_bond_0", netdev="bond1", ipv4="192.168.1.5/24", paths={0: "PIX"}, make_iface=not with_bond_netdev)
    return h


def test_roce_lag_gets_two_qps_per_member():
    d = plan_of(lag_host().build()).get("NCCL_IB_QPS_PER_CONNECTION")
    assert d is not None and int(d.value) >= 2 and d.value == "4"
    assert d.evidence["bonded_ports"][0]["members"] == 2


def test_four_member_lag():
    assert plan_of(lag_host(4).build()).env["NCCL_IB_QPS_PER_CONNECTION"] == "8"


def test_lag_device_without_visible_bond_is_assumed_two_links():
    plan = plan_of(lag_host(with_bond_netdev=False).build())
    assert plan.env["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert any("assumed 2 members" in str(n) for n in plan.notes)


def test_plain_ports_keep_nccls_default():
    assert "NCCL_IB_QPS_PER_CONNECTION" not in plan_of(rail_host().build()).env


def test_infiniband_untouched():
    h = Host().iface("eth0", "10.0.0.5/24", default=True).gpu(0)
    h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    assert "NCCL_IB_QPS_PER_CONNECTION" not in plan_of(h.build()).env
