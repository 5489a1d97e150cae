"""nccl-ib-qps: QPs per connection from the QoS plan's fabric description and the host's bonds;
NCCL's default 1 where neither asks for more."""

from __future__ import annotations

import pytest

from rocetune.model.qos import load_text

from .featurekit import Host, plan_of, rail_host

ECMP = load_text("fabric:\n  tiers: 2\n  rail_optimised: true\n", "/etc/rocetune/qos.yml")
SINGLE_TIER = load_text("fabric:\n  tiers: 1\n  rail_optimised: true\n", "/etc/rocetune/qos.yml")


def lag_host(members=2, with_bond_netdev=True, nccl="2.23.4"):
    h = Host(nccl=nccl).iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0)
    slaves = [f"ens{i}f0np0" for i in range(members)]
    if with_bond_netdev:
        h.iface("bond1", "192.168.1.5/24", kind="bond", slaves=slaves)
        for s in slaves:
            h.iface(s, master="bond1")
    h.rdma("mlx5_bond_0", netdev="bond1", ipv4="192.168.1.5/24", paths={0: "PIX"}, make_iface=not with_bond_netdev)
    return h


def test_no_fabric_description_keeps_nccls_default_with_a_note():
    plan = plan_of(rail_host().build())
    assert "NCCL_IB_QPS_PER_CONNECTION" not in plan.env and "NCCL_IB_SPLIT_DATA_ON_QPS" not in plan.env
    assert any("no fabric description" in str(n) and "NCCL's default (1)" in str(n) for n in plan.notes)


def test_multi_tier_fabric_gets_four_qps_naming_the_plan():
    d = plan_of(rail_host().build(), qos=ECMP).get("NCCL_IB_QPS_PER_CONNECTION")
    assert d.value == "4" and "/etc/rocetune/qos.yml" in d.reason and "2 switch tiers" in d.reason
    assert d.evidence["fabric"]["hashes_flows"] is True and d.evidence["nccl_default"] == 1


def test_explicit_ecmp_on_and_off():
    on = load_text("fabric:\n  ecmp: true\n", "q")
    off = load_text("fabric:\n  tiers: 3\n  ecmp: false\n", "q")
    assert plan_of(rail_host().build(), qos=on).env["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    plan = plan_of(rail_host().build(), qos=off)
    assert "NCCL_IB_QPS_PER_CONNECTION" not in plan.env
    assert any("no equal-cost paths" in str(n) for n in plan.notes)


def test_single_tier_rail_optimised_fabric_keeps_one_qp():
    plan = plan_of(rail_host().build(), qos=SINGLE_TIER)
    assert "NCCL_IB_QPS_PER_CONNECTION" not in plan.env
    assert any("1 switch tier, rail-optimised" in str(n) for n in plan.notes)


def test_roce_lag_gets_two_qps_per_member_without_any_plan():
    d = plan_of(lag_host().build()).get("NCCL_IB_QPS_PER_CONNECTION")
    assert d.value == "4" and "LAG over 2 links" in d.reason
    assert d.evidence["bonded_ports"][0]["members"] == 2


def test_four_member_lag_gets_two_per_link_even_on_an_ecmp_fabric():
    assert plan_of(lag_host(4).build()).env["NCCL_IB_QPS_PER_CONNECTION"] == "8"
    assert plan_of(lag_host(4).build(), qos=ECMP).env["NCCL_IB_QPS_PER_CONNECTION"] == "8"


def test_lag_device_without_visible_bond_is_assumed_two_links():
    plan = plan_of(lag_host(with_bond_netdev=False).build())
    assert plan.env["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert any("assumed 2 members" in str(n) for n in plan.notes)


@pytest.mark.parametrize("version,want", [
    ("2.18.5", "0"), ("2.19.3", "0"), (None, "0"), ("2.20.3", None), ("2.23.4", None), ("2.17.1", None)])
def test_split_mode_is_pinned_only_where_several_qps_meet_a_splitting_release(version, want):
    assert plan_of(rail_host(nccl=version).build(), qos=ECMP).env.get("NCCL_IB_SPLIT_DATA_ON_QPS") == want
    # one QP: nothing to split, whatever the release
    assert "NCCL_IB_SPLIT_DATA_ON_QPS" not in plan_of(rail_host(nccl=version).build()).env


def test_declared_qps_drives_the_split_mode():
    """OCI's A100 /etc/nccl.conf declares 4 QPs; on 2.18.5 the split default would cut every message."""
    plan = plan_of(rail_host(nccl="2.18.5").declare(NCCL_IB_QPS_PER_CONNECTION="4").build())
    assert plan.get("NCCL_IB_QPS_PER_CONNECTION").rule_id == "declared-settings"
    d = plan.get("NCCL_IB_SPLIT_DATA_ON_QPS")
    assert d.value == "0" and "declared in /etc/nccl.conf" in d.reason and d.evidence["qps_in_effect"] == 4
    one = plan_of(rail_host(nccl="2.18.5").declare(NCCL_IB_QPS_PER_CONNECTION="1").build(), qos=ECMP)
    assert "NCCL_IB_SPLIT_DATA_ON_QPS" not in one.env


def test_declared_qps_is_kept_with_a_note():
    plan = plan_of(rail_host().declare(NCCL_IB_QPS_PER_CONNECTION="1").build(), qos=ECMP)
    d = plan.get("NCCL_IB_QPS_PER_CONNECTION")
    assert d.value == "1" and d.rule_id == "declared-settings"
    assert any("rocetune's own choice would be 4" in str(n) for n in plan.notes)
    assert not [f for f in plan.findings if f.id == "declared-contradicted"]


def test_infiniband_untouched_even_on_an_ecmp_plan():
    h = Host().iface("eth0", "10.0.0.5/24", default=True).gpu(0)
    h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    e = plan_of(h.build(), qos=ECMP).env
    assert "NCCL_IB_QPS_PER_CONNECTION" not in e and "NCCL_IB_SPLIT_DATA_ON_QPS" not in e
