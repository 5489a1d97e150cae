"""nccl-ib-qps: RoCE gets 4 QPs per connection (at least 2 per bond member); IB keeps NCCL's 1."""

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


def test_four_member_lag_gets_two_per_link():
    assert plan_of(lag_host(4).build()).env["NCCL_IB_QPS_PER_CONNECTION"] == "8"


def test_lag_device_without_visible_bond_is_assumed_two_links():
    plan = plan_of(lag_host(with_bond_netdev=False).build())
    assert plan.env["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert any("assumed 2 members" in str(n) for n in plan.notes)


def test_plain_roce_ports_get_four_qps_for_ecmp_entropy():
    d = plan_of(rail_host().build()).get("NCCL_IB_QPS_PER_CONNECTION")
    assert d.value == "4" and "ECMP" in d.reason and d.evidence["nccl_default"] == 1


def test_split_mode_is_pinned_where_the_release_splits_by_default():
    for version, want in (("2.18.5", "0"), ("2.19.3", "0"), (None, "0"), ("2.20.3", None), ("2.23.4", None),
                          ("2.17.1", None)):
        e = plan_of(rail_host(nccl=version).build()).env
        assert e.get("NCCL_IB_SPLIT_DATA_ON_QPS") == want, version


def test_declared_qps_is_kept_with_a_note():
    plan = plan_of(rail_host().declare(NCCL_IB_QPS_PER_CONNECTION="1").build())
    d = plan.get("NCCL_IB_QPS_PER_CONNECTION")
    assert d.value == "1" and d.rule_id == "declared-settings"
    assert any("rocetune's own choice would be 4" in str(n) for n in plan.notes)
    assert not [f for f in plan.findings if f.id == "declared-contradicted"]


def test_infiniband_untouched():
    h = Host().iface("eth0", "10.0.0.5/24", default=True).gpu(0)
    h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    e = plan_of(h.build()).env
    assert "NCCL_IB_QPS_PER_CONNECTION" not in e and "NCCL_IB_SPLIT_DATA_ON_QPS" not in e
