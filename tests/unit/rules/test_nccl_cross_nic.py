"""nccl-cross-nic: NCCL_CROSS_NIC=0 where every compute port has a subnet of its own, with what the
routing table, the fabric plan and NCCL's port fusion say about it."""

from __future__ import annotations

from rocetune.model.qos import load_text

from .featurekit import Host, plan_of, rail_host

RAILS = load_text("fabric:\n  tiers: 2\n  rail_optimised: true\n", "/etc/rocetune/qos.yml")
NOT_RAILS = load_text("fabric:\n  tiers: 2\n  rail_optimised: false\n", "/etc/rocetune/qos.yml")


def test_rail_subnets_give_cross_nic_0_with_the_subnets_as_evidence():
    d = plan_of(rail_host(4).build()).get("NCCL_CROSS_NIC")
    assert d.value == "0"
    assert [r["subnet"] for r in d.evidence["rails"]] == [f"192.168.{i}.0/24" for i in range(4)]


def test_without_a_routing_table_the_reason_says_reachability_is_unknown():
    d = plan_of(rail_host(4).build()).get("NCCL_CROSS_NIC")
    assert "routes between the rail subnets are unknown" in d.reason and "isolated" not in d.reason
    assert d.evidence["inter_rail_routes"] is None
    assert "no fabric description" in d.reason


def test_connected_routes_only_are_reported_as_no_inter_rail_route_seen():
    d = plan_of(rail_host(4).connected_routes().route("eth0", "0.0.0.0/0", "10.0.0.1").build()).get("NCCL_CROSS_NIC")
    assert d.evidence["inter_rail_routes"] == []
    assert "no route in the main IPv4 table joins the rail subnets" in d.reason
    assert "policy-routing tables were not read" in d.reason


def test_a_route_between_rails_is_named_in_the_reason():
    h = rail_host(4).connected_routes().route("ens0np0", "192.168.0.0/16", "192.168.0.1")
    d = plan_of(h.build()).get("NCCL_CROSS_NIC")
    assert d.value == "0" and "the rails can reach each other" in d.reason
    assert "192.168.0.0/16 on ens0np0 via 192.168.0.1" in d.reason
    assert d.evidence["inter_rail_routes"][0]["reaches"] == ["192.168.1.0/24", "192.168.2.0/24", "192.168.3.0/24"]


def test_a_default_route_on_a_rail_interface_reaches_the_other_rails():
    h = rail_host(2, frontend=False).connected_routes().route("ens1np0", "0.0.0.0/0", "192.168.1.1")
    d = plan_of(h.build()).get("NCCL_CROSS_NIC")
    assert "0.0.0.0/0 on ens1np0 via 192.168.1.1 covers 192.168.0.0/24" in d.reason


def test_fabric_plan_decides_rail_optimised_either_way():
    d = plan_of(rail_host(4).build(), qos=RAILS).get("NCCL_CROSS_NIC")
    assert "the fabric plan (/etc/rocetune/qos.yml) says the fabric is rail-optimised" in d.reason
    plan = plan_of(rail_host(4).build(), qos=NOT_RAILS)
    assert "NCCL_CROSS_NIC" not in plan.env and any("not rail-optimised" in str(n) for n in plan.notes)


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


def dual_port_host(cards=2, nccl="2.23.4", single=0):
    """`cards` dual-port adapters (functions .0 and .1 of one slot), each port in its own subnet."""
    h = Host(nccl=nccl).iface("eth0", "10.0.0.5/24", default=True)
    n = 0
    for c in range(cards):
        for f in range(2):
            h.gpu(n)
            h.rdma(f"mlx5_{n}", netdev=f"ens{c}f{f}np{f}", ipv4=f"192.168.{n}.5/24", paths={n: "PIX"},
                   pci=f"0000:{0x21 + c:02x}:00.{f}")
            n += 1
    for s in range(single):
        h.gpu(n)
        h.rdma(f"mlx5_{n}", netdev=f"ens9{s}np0", ipv4=f"192.168.{n}.5/24", paths={n: "PIX"},
               pci=f"0000:{0x61 + s:02x}:00.0")
        n += 1
    return h


def test_fused_ports_of_one_adapter_are_said_to_be_unaffected():
    d = plan_of(dual_port_host(2, nccl="2.21.5").build()).get("NCCL_CROSS_NIC")
    assert d.value == "0"
    assert "NCCL 2.21.5 fuses the ports of one adapter into one NET device" in d.reason
    assert "between mlx5_0:1+mlx5_1:1, mlx5_2:1+mlx5_3:1 this setting does nothing" in d.reason
    assert d.evidence["same_adapter"] == [["mlx5_0:1", "mlx5_1:1"], ["mlx5_2:1", "mlx5_3:1"]]
    later = plan_of(dual_port_host(2, nccl="2.28.9").build()).get("NCCL_CROSS_NIC")
    assert "ncclTopoMakeVNics" in later.reason


def test_one_fused_adapter_is_one_net_device_so_nothing_is_set():
    plan = plan_of(dual_port_host(1, nccl="2.21.5").build())
    assert "NCCL_CROSS_NIC" not in plan.env
    assert any("NCCL sees one NET device" in str(n) for n in plan.notes)


def test_unfused_siblings_carry_the_2097_caveat_before_2_30_too():
    for version in ("2.19.3", "2.18.5"):
        d = plan_of(dual_port_host(2, nccl=version).build()).get("NCCL_CROSS_NIC")
        assert "are not fused" in d.reason and "NCCL #2097" in d.reason, version
    mixed = plan_of(dual_port_host(1, nccl="2.23.4", single=1).build()).get("NCCL_CROSS_NIC")
    assert "skips fusion when single- and multi-port adapters are mixed" in mixed.reason
    off = plan_of(dual_port_host(2, nccl="2.21.5").declare(NCCL_IB_MERGE_NICS="0").build()).get("NCCL_CROSS_NIC")
    assert "NCCL_IB_MERGE_NICS is declared in /etc/nccl.conf" in off.reason and "#2097" in off.reason


def test_unknown_release_states_both_outcomes():
    d = plan_of(dual_port_host(2, nccl=None).build()).get("NCCL_CROSS_NIC")
    assert "the NCCL release is unknown" in d.reason and "fused, this setting does nothing" in d.reason
    assert "#2097" in d.reason


def test_rail_id_note_only_for_unfused_siblings_on_2_30():
    plan = plan_of(dual_port_host(2, nccl="2.30.7").declare(NCCL_NET_MERGE_LEVEL="LOC").build())
    assert any("rail ids" in str(n) for n in plan.notes)
    plain = plan_of(rail_host(2, nccl="2.30.7").build())
    assert plain.env["NCCL_CROSS_NIC"] == "0" and not any("#2097" in str(n) or "rail ids" in str(n)
                                                          for n in plain.notes)


# --- measured reachability (fleet validate --tests cross-rail, /etc/rocetune/rail-reach.json) ----
def measured(features, verdict, reached, tested=12):
    features.setdefault("declared", {"files": [], "topology_files": []})["rail_reach"] = {
        "path": "/etc/rocetune/rail-reach.json", "verdict": verdict, "reached": reached, "tested": tested,
        "measured_at": "2026-11-27T20:00:00Z", "hosts": 4, "error": None}
    return features


def test_measured_isolation_sets_0_even_on_one_subnet_and_against_the_fabric_plan():
    d = plan_of(measured(one_subnet_host().build(), "isolated", 0)).get("NCCL_CROSS_NIC")
    assert d.value == "0" and "0 of 12 rail-to-other-rail paths answered (isolated)" in d.reason
    assert "at 2026-11-27T20:00:00Z over 4 hosts" in d.reason and d.evidence["measured"]["verdict"] == "isolated"
    d = plan_of(measured(rail_host(4).build(), "partial", 5), qos=NOT_RAILS).get("NCCL_CROSS_NIC")
    assert d.value == "0" and "(partial)" in d.reason and "the measurement shows otherwise" in d.reason


def test_measured_reach_replaces_the_inference_from_routes():
    d = plan_of(measured(rail_host(4).build(), "routed", 12)).get("NCCL_CROSS_NIC")
    assert d.value == "0" and "12 of 12 rail-to-other-rail paths answered (routed)" in d.reason
    assert "routes between the rail subnets are unknown" not in d.reason and "inter_rail_routes" not in d.evidence
    assert "NCCL_CROSS_NIC" not in plan_of(measured(one_subnet_host().build(), "routed", 12)).env


def test_an_unreadable_measurement_is_no_evidence():
    f = rail_host(4).build()
    f["declared"] = {"files": [], "topology_files": [], "rail_reach": {
        "path": "/etc/rocetune/rail-reach.json", "verdict": None, "error": "not JSON"}}
    d = plan_of(f).get("NCCL_CROSS_NIC")
    assert "routes between the rail subnets are unknown" in d.reason
