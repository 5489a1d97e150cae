"""ucx-net-devices: UCX uses the compute ports (or the socket interface), never storage ports."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def test_lists_the_chosen_rdma_ports_in_ucx_form():
    h = rail_host(2)
    h.rdma("mlx5_9", netdev="stor0", ipv4="172.16.0.5/24", paths={0: "NODE"})
    d = plan_of(h.build()).get("UCX_NET_DEVICES")
    assert d.value == "mlx5_0:1,mlx5_1:1" and d.rule_id == "ucx-net-devices"


def test_local_rank_narrows_to_its_nearest_port():
    assert plan_of(rail_host().build(), local_rank=5).env["UCX_NET_DEVICES"] == "mlx5_5:1"


def test_no_rdma_uses_the_socket_interface():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0)
    assert plan_of(h.build()).env["UCX_NET_DEVICES"] == "eth0"
