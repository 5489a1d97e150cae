"""traffic-class: RoCE packets carry the class the fabric's QoS plan (and the switches) expect."""

from __future__ import annotations

from rocetune.model.qos import load_text

from .featurekit import Host, plan_of, rail_host


def test_default_plan_is_dscp_26_with_ect0_on_priority_3():
    e = plan_of(rail_host().build()).env
    assert e["NCCL_IB_TC"] == "106" and (106 >> 2, 106 & 3) == (26, 2)
    assert e["NCCL_IB_SL"] == "3"
    assert e["UCX_IB_TRAFFIC_CLASS"] == e["NCCL_IB_TC"]
    assert "NCCL_IB_FIFO_TC" not in e


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
