"""socket-ifname: one exact interface for NCCL's sockets, Gloo and Open MPI."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def test_rdma_host_uses_the_default_route_interface_exactly():
    e = plan_of(rail_host().build()).env
    assert e["NCCL_SOCKET_IFNAME"] == "=eth0"
    assert e["GLOO_SOCKET_IFNAME"] == "eth0"
    assert e["OMPI_MCA_btl_tcp_if_include"] == "eth0"


def test_container_bridges_and_veths_are_never_picked():
    h = rail_host(2, frontend=False)
    h.iface("docker0", "172.17.0.1/16", kind="bridge")
    h.iface("veth12ab", "169.254.3.3/16", kind="virtual")
    h.iface("cni0", "10.244.0.1/24", kind="bridge")
    h.iface("eno1", "10.0.0.5/24", default=True, speed_gbps=10)
    e = plan_of(h.build()).env
    assert e["NCCL_SOCKET_IFNAME"] == "=eno1"


def test_a_vlan_of_the_interface_is_not_matched_by_prefix():
    h = rail_host(1)
    h.iface("eth0.100", "10.100.0.5/24", kind="vlan")
    e = plan_of(h.build()).env
    assert e["NCCL_SOCKET_IFNAME"] == "=eth0"   # '=' : NCCL would take eth0.100 for 'eth0'


def test_pod_interface_counts_even_though_it_is_virtual():
    h = Host().iface("eth0", "10.244.5.23/24", default=True, kind="virtual", driver=None).gpu(0)
    h.rdma("mlx5_0", netdev="net1", ipv4="10.210.0.23/24", paths={0: "PIX"})
    assert plan_of(h.build()).env["NCCL_SOCKET_IFNAME"] == "=eth0"


def test_no_rdma_host_carries_data_on_the_fastest_interface():
    h = Host().iface("eno1", "10.0.0.5/24", default=True, speed_gbps=1, driver="igb")
    h.iface("ens3f0", "192.168.50.5/24", speed_gbps=100, driver="ice")
    h.gpu(0)
    plan = plan_of(h.build())
    assert plan.env["NCCL_SOCKET_IFNAME"] == "=ens3f0"
    assert any("ens3f0 is the fastest" in str(w) for w in plan.warnings)


def test_no_interface_no_variable_and_a_warning():
    h = Host().gpu(0)
    h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24", paths={0: "PIX"}, make_iface=False)
    plan = plan_of(h.build())
    assert "NCCL_SOCKET_IFNAME" not in plan.env
    assert any("NCCL_SOCKET_IFNAME not set" in str(w) for w in plan.warnings)


def test_down_interface_is_skipped():
    h = rail_host(1, frontend=False)
    h.iface("eth0", "10.0.0.5/24", default=True, operstate="down")
    h.iface("eth1", "10.0.1.5/24", default=True)
    assert plan_of(h.build()).env["NCCL_SOCKET_IFNAME"] == "=eth1"
