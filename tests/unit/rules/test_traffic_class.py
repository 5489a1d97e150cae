"""traffic-class: RoCE packets carry the class the fabric's QoS plan (and the switches) expect."""

from __future__ import annotations

from rocetune.model.qos import load_text

from .featurekit import Host, plan_of, rail_host


def test_built_in_default_plan_sets_nothing():
    plan = plan_of(rail_host().build())
    assert not {"NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_FIFO_TC", "UCX_IB_TRAFFIC_CLASS"} & set(plan.env)
    assert any("no QoS plan" in str(n) for n in plan.notes)


def test_nic_state_dscp_trust_pfc3_gives_dscp_26_with_ect0():
    h = rail_host(2)
    for i in range(2):
        h.nic_qos(f"ens{i}np0")
    plan = plan_of(h.build())
    e = plan.env
    assert e["NCCL_IB_TC"] == "106" and (106 >> 2, 106 & 3) == (26, 2)
    assert e["UCX_IB_TRAFFIC_CLASS"] == "106" and "NCCL_IB_SL" not in e and "NCCL_IB_FIFO_TC" not in e
    ev = plan.get("NCCL_IB_TC").evidence
    assert ev["dscps_on_priority"] == list(range(24, 32))
    assert [x["dscp_to_priority"] for x in ev["nic_qos"]] == [3, 3]


def test_nic_state_with_one_dscp_on_the_lossless_priority_uses_it():
    h = rail_host(1).nic_qos("ens0np0", pfc=(5,), dscp_prio={10: 5, 48: 6, 0: 0})
    e = plan_of(h.build()).env
    assert e["NCCL_IB_TC"] == str(10 << 2 | 2)


def test_nic_state_without_one_pfc_priority_derives_nothing():
    for pfc in ((), (3, 4)):
        h = rail_host(1).nic_qos("ens0np0", pfc=pfc)
        plan = plan_of(h.build())
        assert "NCCL_IB_TC" not in plan.env
        assert any(f.id == "tc-not-derived" and "no lossless class can be derived" in f.message
                   for f in plan.findings)


def test_ports_that_disagree_derive_nothing():
    h = rail_host(2).nic_qos("ens0np0", pfc=(3,)).nic_qos("ens1np0", pfc=(4,))
    assert "NCCL_IB_TC" not in plan_of(h.build()).env


def test_pcp_trust_gives_the_service_level():
    h = rail_host(1).nic_qos("ens0np0", trust="pcp", pfc=(4,))
    e = plan_of(h.build()).env
    assert e["NCCL_IB_SL"] == "4" and "NCCL_IB_TC" not in e


def test_explicit_plan_disagreeing_with_the_nics_is_a_finding():
    qos = load_text("data:\n  dscp: 26\n  priority: 3\n", "site-qos.yml")
    h = rail_host(1).nic_qos("ens0np0", pfc=(4,))
    plan = plan_of(h.build(), qos=qos)
    assert plan.env["NCCL_IB_TC"] == "106"
    assert [f.subject for f in plan.findings if f.id == "qos-plan-nic-mismatch"] == ["ens0np0"]


def test_declared_tc_on_a_lossy_priority_is_kept_but_contradicted():
    h = rail_host(1).nic_qos("ens0np0").declare(NCCL_IB_TC="41", NCCL_IB_SL="0")
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_TC").value == "41" and plan.get("NCCL_IB_TC").rule_id == "declared-settings"
    bad = [f for f in plan.findings if f.id == "declared-contradicted"]
    assert len(bad) == 1 and "maps DSCP 10 to priority 1" in bad[0].message
    assert "--set NCCL_IB_TC=" in bad[0].message


def test_declared_tc_is_replaced_only_by_set():
    from rocetune.model.plan import Overrides

    h = rail_host(1).declare(NCCL_IB_TC="41")
    plan = plan_of(h.build(), overrides=Overrides.from_args(["NCCL_IB_TC=106"]))
    d = plan.get("NCCL_IB_TC")
    assert d.value == "106" and d.rule_id == "override"
    assert d.evidence["replaces"]["rule_id"] == "declared-settings" and d.evidence["replaces"]["value"] == "41"


def test_values_follow_the_qos_file():
    qos = load_text("data:\n  dscp: 24\n  priority: 4\necn: not-ect\nlossless_priorities: [4]\n"
                    "cts:\n  dscp: 46\n", "site-qos.yml")
    plan = plan_of(rail_host().build(), qos=qos)
    e = plan.env
    assert e["NCCL_IB_TC"] == "96" and e["UCX_IB_TRAFFIC_CLASS"] == "96"
    assert e["NCCL_IB_SL"] == "4"
    assert e["NCCL_IB_FIFO_TC"] == str(46 << 2)
    assert "site-qos.yml" in plan.get("NCCL_IB_TC").reason


def test_infiniband_gets_no_traffic_class():
    h = Host().iface("eth0", "10.0.0.5/24", default=True).gpu(0)
    h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    e = plan_of(h.build()).env
    assert not {"NCCL_IB_TC", "NCCL_IB_SL", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_FIFO_TC"} & set(e)


def test_no_rdma_no_traffic_class():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0)
    e = plan_of(h.build()).env
    assert "NCCL_IB_TC" not in e and "UCX_IB_TRAFFIC_CLASS" not in e


def test_data_on_a_lossy_priority_is_warned():
    qos = load_text("data:\n  dscp: 26\n  priority: 3\nlossless_priorities: [4]\n", "q.yml")
    plan = plan_of(rail_host(1).build(), qos=qos)
    assert any("not lossless" in str(w) or "lossy" in str(w) for w in plan.warnings)


def test_a_plan_that_states_only_the_fabric_sets_no_class():
    plan = plan_of(rail_host().build(), qos=load_text("fabric:\n  tiers: 2\n", "/etc/rocetune/qos.yml"))
    assert "NCCL_IB_TC" not in plan.env and "NCCL_IB_SL" not in plan.env


def test_every_class_decision_says_the_switch_side_was_not_checked():
    plan = plan_of(rail_host().build(), qos=load_text("data:\n  dscp: 24\n  priority: 4\n", "q.yml"))
    from_nics = plan_of(rail_host(2).nic_qos("ens0np0").nic_qos("ens1np0").build())
    for d in (plan.get("NCCL_IB_TC"), from_nics.get("NCCL_IB_TC")):
        assert "switches' DSCP-to-queue map and PFC were not checked" in d.reason
        assert "not checked" in d.evidence["switch_side"]
