"""no-rdma: sockets, said explicitly and sized from the link; nothing NCCL_IB_* beyond the switch."""

from __future__ import annotations

import pytest

from rocetune.rules.no_rdma import SOCKET_TABLE, socket_tuning

from .featurekit import Host, plan_of


def ib_keys(plan):
    return sorted(k for k in plan.env if k.startswith("NCCL_IB_"))


def test_plain_ethernet_host_disables_ib_and_tunes_sockets():
    h = Host().iface("ens3f0", "10.0.0.5/24", default=True, speed_gbps=100, driver="ice").gpu(0)
    plan = plan_of(h.build())
    e = plan.env
    assert ib_keys(plan) == ["NCCL_IB_DISABLE"] and e["NCCL_IB_DISABLE"] == "1"
    assert (e["NCCL_SOCKET_NTHREADS"], e["NCCL_NSOCKS_PERTHREAD"]) == ("4", "2")
    assert int(e["NCCL_SOCKET_NTHREADS"]) * int(e["NCCL_NSOCKS_PERTHREAD"]) <= 64


@pytest.mark.parametrize("gbps", [1, 10, 24.9, 25, 40, 50, 100, 200, 400, 800, 1600])
def test_socket_table_stays_inside_nccls_limits(gbps):
    t = socket_tuning(gbps)
    if gbps < 25:
        assert t is None
    else:
        threads, socks = t
        assert 1 <= threads <= 16 and socks >= 1 and threads * socks <= 64  # NCCL refuses more


def test_socket_table_grows_with_speed():
    sockets = [t * s for _, t, s in SOCKET_TABLE]
    assert sockets == sorted(sockets, reverse=True)


def test_slow_link_only_disables_ib():
    h = Host().iface("eno1", "10.0.0.5/24", default=True, speed_gbps=10, driver="igb").gpu(0)
    assert sorted(plan_of(h.build()).env) == ["GLOO_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME",
                                              "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include",
                                              "UCX_NET_DEVICES"]


def test_unknown_link_speed_leaves_socket_defaults():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, driver="virtio_net").gpu(0)
    e = plan_of(h.build()).env
    assert "NCCL_SOCKET_NTHREADS" not in e and e["NCCL_IB_DISABLE"] == "1"


@pytest.mark.parametrize("driver,vendor", [("ena", "0x1d0f"), ("gve", "0x1ae0")])
def test_plugin_clouds_get_no_nccl_ib_and_no_socket_tuning(driver, vendor):
    h = Host().iface("ens5", "172.31.0.5/20", default=True, speed_gbps=100, driver=driver,
                     pci="0000:10:00.0").gpu(0)
    h.pci["0000:10:00.0"] = {"bdf": "0000:10:00.0", "kind": "nic", "class": "0x020000", "vendor": vendor,
                             "device": "0xefa1", "numa_node": 0, "root_complex": "pci0000:00", "parent": None,
                             "switches": [], "driver": driver, "link": None, "sriov": None}
    if driver == "ena":  # EFA shows up in /sys/class/infiniband with an unspecified link layer
        h.rdma("rdmap16s27", link_layer="Unspecified", netdev=None, rate=100, vendor=vendor, paths={0: "PIX"})
    plan = plan_of(h.build())
    assert ib_keys(plan) == []
    assert "NCCL_SOCKET_NTHREADS" not in plan.env and "NCCL_NSOCKS_PERTHREAD" not in plan.env
    assert plan.env["NCCL_SOCKET_IFNAME"] == "=ens5"
    assert any("plugin" in str(n) for n in plan.notes)


def test_rdma_ports_all_down_warn_but_do_not_pin_sockets():
    """NCCL falls back to sockets by itself; a pinned NCCL_IB_DISABLE=1 would outlive the repair."""
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=25).gpu(0)
    h.rdma("mlx5_0", state="DOWN", netdev="ens1f0np0", rate=40, paths={0: "PHB"})
    h.rdma("mlx5_1", state="DOWN", netdev="ens1f1np1", rate=40, paths={0: "PHB"})
    plan = plan_of(h.build())
    assert ib_keys(plan) == []
    assert any("mlx5_0:1" in str(w) and "not pinned" in str(w) for w in plan.warnings)


def test_no_rdma_device_at_all_pins_sockets():
    plan = plan_of(Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=25).gpu(0).build())
    assert ib_keys(plan) == ["NCCL_IB_DISABLE"]


def test_hidden_rdma_is_not_called_absent():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0).rdma_hidden("mlx5_0")
    plan = plan_of(h.build())
    assert ib_keys(plan) == []
    # Said once, by the probe's rdma-unknown finding; the rule only notes what it left out.
    assert any("cannot tell" in str(n) for n in plan.notes)


def test_failed_rdma_source_is_not_called_absent():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0).rdma_failed()
    assert ib_keys(plan_of(h.build())) == []
