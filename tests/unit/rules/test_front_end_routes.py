"""Which port is front end when default routes come from both families: the IPv4 default route
(lowest metric) decides; router advertisements that put an IPv6 default on every rail do not
make the rails front end."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def ra_on_every_rail(h: Host, n: int) -> Host:
    for i in range(n):
        h.default_route(f"ens{i}np0", "inet6", 1024)
    return h


def test_ipv6_defaults_on_the_rails_do_not_take_them_out_of_nccl_ib_hca():
    h = ra_on_every_rail(rail_host(4).default_route("eth0", "inet", 100).default_route("eth0", "inet6", 1024), 4)
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"
    assert any("IPv6 default route(s) on ens0np0" in str(n) and "IPv4 default route decides" in str(n)
               for n in plan.notes)


def test_lowest_ipv4_metric_is_the_front_end_and_a_backup_route_is_not():
    h = rail_host(2).default_route("eth0", "inet", 100)
    h.iface("eth1", "10.1.0.5/24", speed_gbps=25, driver="ixgbe").default_route("eth1", "inet", 600)
    plan = plan_of(h.build())
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"
    h2 = rail_host(2).default_route("eth0", "inet", 700)
    h2.iface("eth1", "10.1.0.5/24", speed_gbps=25, driver="ixgbe").default_route("eth1", "inet", 600)
    assert plan_of(h2.build()).get("NCCL_SOCKET_IFNAME").value == "=eth1"


def test_ipv6_only_defaults_on_every_port_are_ambiguous_and_the_rails_stay():
    h = ra_on_every_rail(rail_host(4, frontend=False), 4)
    h.iface("eth0", "10.0.0.5/24", speed_gbps=25, driver="ixgbe").default_route("eth0", "inet6", 1024)
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"
    text = " ".join(str(w) for w in plan.warnings)
    assert "IPv6 default routes only" in text and "front end port is unknown" in text
    assert not any("converged" in str(w) for w in plan.warnings)
    # sockets: no front end known, so the first routable interface that is not a compute port
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"


def test_a_single_ipv6_default_on_an_ipv6_only_host_is_the_front_end():
    h = rail_host(2, frontend=False)
    h.iface("eth0", "2001:db8::5/64", speed_gbps=25, driver="ixgbe").default_route("eth0", "inet6", 1024)
    plan = plan_of(h.build())
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"
    assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1,mlx5_1:1"


def test_features_without_default_routes_keep_the_recorded_names():
    plan = plan_of(rail_host(2).build())  # default_route_interfaces only, as older Features
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"
