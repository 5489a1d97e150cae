"""A converged port: the only RDMA port also carries the host's default route. NCCL takes it
(ncclIbInit keeps every ACTIVE IB/RoCE port), so the RoCE rules run on it, with a warning."""

from __future__ import annotations

from .featurekit import Host, plan_of


def converged_host(nccl: str = "2.23.4", **rdma) -> Host:
    h = Host(nccl=nccl).iface("eth0", "10.0.0.5/24", speed_gbps=200).default_route("eth0")
    h.gpu(0)
    h.rdma("mlx5_0", netdev="eth0", make_iface=False, ipv4="10.0.0.5/24", paths={0: "PIX"}, rate=200, **rdma)
    return h


def test_the_roce_rules_run_on_the_single_port_that_carries_the_default_route():
    h = converged_host(nccl="2.19.3").nic_qos("eth0")  # NCCL before 2.21.5 takes GID 0 unless told
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1"
    assert plan.env["NCCL_IB_GID_INDEX"] == "3"  # the IPv4 RoCE v2 GID
    assert plan.env["NCCL_IB_TC"] == "106"  # the port's DSCP-trust lossless class
    assert plan.get("UCX_NET_DEVICES").value == "mlx5_0:1"  # UCX over RDMA, not pinned to TCP
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"  # bootstrap still on the front end


def test_nccl_is_not_told_to_use_sockets_there():
    plan = plan_of(converged_host().build())
    for key in ("NCCL_IB_DISABLE", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"):
        assert plan.get(key) is None, key
    text = " ".join(str(w) for w in plan.warnings)
    assert "converged port: mlx5_0:1" in text
    assert "share one link" in text and "NCCL_IB_DISABLE=1" in text
    assert "fall back to TCP sockets" not in text


def test_a_front_end_port_stays_out_while_another_port_is_usable():
    h = converged_host()
    h.rdma("mlx5_1", netdev="ens2np0", ipv4="192.168.1.5/24", paths={0: "PIX"}, rate=200)
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_1:1"
    assert not any("converged" in str(w) for w in plan.warnings)


def test_a_down_compute_port_leaves_the_front_end_port_to_nccl():
    h = converged_host()
    h.rdma("mlx5_1", netdev="ens2np0", ipv4="192.168.1.5/24", paths={0: "PIX"}, state="DOWN")
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1"
