"""nccl-ib-hca: the compute ports, exactly, and nothing a cluster engineer would take out."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host
from .ncclsim import hca_selects


def all_ports(f):
    return [(d["name"], p["port"]) for d in f["rdma"]["devices"] for p in d["ports"]]


def hca(plan):
    d = plan.get("NCCL_IB_HCA")
    return d.value if d else None


def warnings(plan):
    return [str(w) for w in plan.warnings]


def test_every_rail_port_exactly_and_nothing_else():
    f = rail_host().build()
    plan = plan_of(f)
    value = hca(plan)
    assert value.startswith("="), "exact-match syntax, NCCL matches prefixes otherwise"
    assert hca_selects(value, all_ports(f)) == [(f"mlx5_{i}", 1) for i in range(8)]
    assert plan.get("NCCL_IB_HCA").rule_id == "nccl-ib-hca"


def test_front_end_nic_with_the_default_route_is_left_out_even_when_pix_to_a_gpu():
    h = rail_host(frontend=False)
    h.rdma("mlx5_8", netdev="eth0", ipv4="10.0.0.5/24", paths={0: "PIX"}, rate=100)
    h.ifaces["eth0"]["default_route"] = True
    f = h.build()
    plan = plan_of(f)
    chosen = hca_selects(hca(plan), all_ports(f))
    assert ("mlx5_8", 1) not in chosen and len(chosen) == 8
    assert any("mlx5_8:1" in str(n) and "default route" in str(n) for n in plan.notes)


def test_front_end_bond_and_its_members_are_left_out():
    h = rail_host(frontend=False)
    h.iface("bond0", "10.0.0.5/24", default=True, kind="bond", slaves=("ens20f0np0", "ens20f1np1"))
    h.rdma("mlx5_bond_0", netdev="bond0", ipv4=(), make_iface=False, paths={0: "NODE"})
    h.rdma("mlx5_20", netdev="ens20f0np0", make_iface=False, paths={0: "PXB"})
    h.iface("ens20f0np0", master="bond0")
    f = h.build()
    chosen = hca_selects(hca(plan_of(f)), all_ports(f))
    assert ("mlx5_bond_0", 1) not in chosen and ("mlx5_20", 1) not in chosen
    assert len(chosen) == 8


def test_mlx5_1_never_drags_in_mlx5_10():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0).gpu(1)
    h.rdma("mlx5_1", netdev="ens1np0", ipv4="192.168.1.5/24", paths={0: "PIX"})
    h.rdma("mlx5_2", netdev="ens2np0", ipv4="192.168.2.5/24", paths={1: "PIX"})
    h.rdma("mlx5_10", netdev="ens10np0", ipv4="172.16.0.5/24", paths={0: "NODE"})  # storage
    f = h.build()
    value = hca(plan_of(f))
    assert value == "=mlx5_1:1,mlx5_2:1"
    assert ("mlx5_10", 1) not in hca_selects(value, all_ports(f))
    # the same list without '=' is exactly the trap this rule avoids
    assert ("mlx5_10", 1) in hca_selects(value[1:], all_ports(f))


def test_device_names_are_taken_as_they_are():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    names = ["mlx5_gdr_0", "mlx5_ib3", "mlx5_100", "mlx5_bond_1"]
    for i, n in enumerate(names):
        h.gpu(i)
        h.rdma(n, netdev=f"rail{i}", ipv4=f"192.168.{i}.5/24", paths={i: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_100:1,mlx5_bond_1:1,mlx5_gdr_0:1,mlx5_ib3:1"


def test_natural_order_of_names():
    h = rail_host(12)
    assert hca(plan_of(h.build())).startswith("=mlx5_0:1,mlx5_1:1,mlx5_2:1")
    assert hca(plan_of(h.build())).endswith("mlx5_10:1,mlx5_11:1")


def test_inactive_ports_are_left_out_and_a_down_gpu_local_port_is_flagged():
    h = rail_host(2)
    h.rdma("mlx5_1", port=2, state="DOWN", netdev="ens1np1", ipv4="192.168.9.5/24")
    h.devices["mlx5_0"]["ports"][0]["state"] = "DOWN"
    f = h.build()
    plan = plan_of(f)
    assert hca(plan) == "=mlx5_1:1"
    assert any("mlx5_0:1 is GPU-local" in w and "DOWN" in w for w in warnings(plan))


def test_dual_port_storage_card_beside_a_gpu_is_told_apart_by_speed():
    h = rail_host(2)
    h.rdma("mlx5_8", netdev="stor0", ipv4="172.16.0.5/24", rate=100, paths={0: "PIX"})
    h.rdma("mlx5_8", port=2, netdev="stor1", ipv4="172.16.1.5/24", rate=100, paths={0: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1,mlx5_1:1"
    assert any("mlx5_8:2" in str(n) and "half" in str(n) for n in plan.notes)


def test_storage_port_on_another_link_layer_is_left_out():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0).gpu(1)
    h.rdma("mlx5_ib0", link_layer="InfiniBand", netdev="ib0", paths={0: "PIX"})
    h.rdma("mlx5_ib1", link_layer="InfiniBand", netdev="ib1", paths={1: "PIX"})
    h.rdma("mlx5_eth0", netdev="ens9np0", ipv4="172.16.0.5/24", paths={0: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_ib0:1,mlx5_ib1:1"
    assert any("mlx5_eth0:1" in str(n) and "link layer" in str(n) for n in plan.notes)


def test_roce_port_without_an_address_is_left_out_when_the_others_have_one():
    h = rail_host(2)
    h.rdma("mlx5_9", netdev="ens9np0", ipv4=(), paths={1: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1,mlx5_1:1"
    assert any("mlx5_9:1" in str(n) and "no IPv4/IPv6 RoCE v2 GID" in str(n) for n in plan.notes)


def test_port_addressed_on_the_management_subnet_is_left_out():
    h = rail_host(2)
    h.rdma("mlx5_9", netdev="ens9np0", ipv4="10.0.0.77/24", paths={1: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1,mlx5_1:1"
    assert any("mlx5_9:1" in str(n) and "management" in str(n) for n in plan.notes)


def test_an_indistinguishable_extra_port_is_kept_but_the_doubt_is_said():
    h = rail_host(2)
    h.rdma("mlx5_9", netdev="ens9np0", ipv4="192.168.9.5/24", paths={0: "PIX"})
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1,mlx5_1:1,mlx5_9:1"
    assert any("uncertain" in w and "GPU0: 2" in w for w in warnings(plan))


def test_pcie_server_without_gpu_local_nics_offers_every_active_port():
    h = Host().iface("eno1", "10.0.0.5/24", default=True)
    h.gpu(0, numa=0).gpu(1, numa=1)
    h.rdma("mlx5_0", netdev="ens1f0np0", ipv4="192.168.10.5/24", paths={0: "NODE", 1: "SYS"}, rate=200)
    h.rdma("mlx5_1", netdev="ens1f1np1", ipv4="192.168.11.5/24", paths={0: "SYS", 1: "NODE"}, rate=200)
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1,mlx5_1:1"
    assert any("GPUDirect" in str(n) for n in plan.notes)


def test_infiniband_compute_and_ethernet_management_ports():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=25)
    for i in range(8):
        h.gpu(i)
        h.rdma(f"mlx5_ib{i}", link_layer="InfiniBand", netdev=f"ib{i}", paths={i: "PIX"})
    for i in range(5):
        h.rdma(f"mlx5_eth{i}", netdev=f"eth{i + 1}", ipv4=f"10.1.{i}.5/24", rate=25, paths={4: "NODE"})
    plan = plan_of(h.build())
    assert hca(plan) == "=" + ",".join(f"mlx5_ib{i}:1" for i in range(8))


def test_never_invents_names_when_rdma_devices_are_hidden():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0).rdma_hidden("mlx5_0", "mlx5_1")
    plan = plan_of(h.build())
    assert plan.get("NCCL_IB_HCA") is None
    assert plan.get("NCCL_IB_DISABLE") is None
    assert not any(d.key.startswith("NCCL_IB_") for d in plan.decisions)
    assert any("not visible" in str(n) for n in plan.notes)


def test_cpu_only_host_uses_its_roce_port():
    h = Host().iface("eno1", "10.0.0.5/24", default=True, driver="i40e")
    h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24", rate=100)
    plan = plan_of(h.build())
    assert hca(plan) == "=mlx5_0:1"


def names_only(h) -> dict:
    """The host as a pasted nvidia-smi topo -m shows it: device names and GPU paths, no ports."""
    f = h.build()
    for d in f["rdma"]["devices"]:
        d.update(ports=[], ports_known=False, pci=None, function="unknown")
    f["rdma"]["from_tools"] = "nvidia-smi topo -m"
    return f


def test_devices_named_only_by_a_legend_are_listed_whole():
    h = rail_host(4)
    h.rdma("mlx5_4", paths={0: "SYS", 1: "SYS", 2: "SYS", 3: "SYS"})  # the front-end NIC
    plan = plan_of(names_only(h))
    value = hca(plan)
    assert value == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    # On the host, a dual-port device keeps both ports and the front-end NIC stays out.
    on_host = [(f"mlx5_{i}", p) for i in range(5) for p in (1, 2)]
    assert hca_selects(value, on_host) == [(f"mlx5_{i}", p) for i in range(4) for p in (1, 2)]
    assert any("mlx5_4" in str(n) and "front-end" in str(n) for n in plan.notes)
    assert not {"UCX_NET_DEVICES", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_QPS_PER_CONNECTION"} & \
        {d.key for d in plan.decisions}
    assert not any("InfiniBand" in str(n) for n in plan.notes), "the link layer is unknown, not IB"


def test_a_legend_without_a_gpu_near_device_pins_nothing():
    h = rail_host(2)
    for name in ("mlx5_0", "mlx5_1"):
        h.paths[name] = {0: "NODE", 1: "SYS"}
    plan = plan_of(names_only(h))
    assert hca(plan) is None and plan.get("NCCL_IB_DISABLE") is None
    assert any("cannot be told apart" in str(n) for n in plan.notes)


def test_a_declared_value_is_checked_by_device_when_ports_are_unknown():
    def contradicted(value):
        h = rail_host(2)
        h.declare(NCCL_IB_HCA=value)
        return [f.message for f in plan_of(names_only(h)).findings if f.id == "declared-contradicted"]

    assert contradicted("=mlx5_0:1,mlx5_1:1") == []  # a port number cannot be checked: accepted
    assert "leaves out" in contradicted("=mlx5_0")[0]


def legend_rails(n=4):
    """n GPUs, each with a PIX device of its own: a rail per GPU, as an HGX legend shows it."""
    h = rail_host(n)
    for i in range(n):
        h.paths[f"mlx5_{i}"] = {g: ("PIX" if g == i else "PXB" if g // 2 == i // 2 else "SYS") for g in range(n)}
    return h


def test_a_legend_nic_pix_to_no_gpu_beside_one_rail_per_gpu_is_left_out():
    h = legend_rails(4)
    h.rdma("mlx5_4", paths={0: "PXB", 1: "PXB", 2: "SYS", 3: "SYS"})  # behind the switch GPU0/1 share
    plan = plan_of(names_only(h))
    assert hca(plan) == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    excluded = {e["port"]: e["why"] for e in plan.get("NCCL_IB_HCA").evidence["excluded"]}
    assert "PIX to no GPU (PXB to GPU0, GPU1)" in excluded["mlx5_4"] and "storage or management" in excluded["mlx5_4"]


def test_pxb_devices_stay_where_no_gpu_has_a_pix_device():
    # GPU pairs behind one switch with their NICs (OCI A100 style): PXB is how the rails reach them
    h = rail_host(4)
    for i in range(4):
        h.paths[f"mlx5_{i}"] = {g: ("PXB" if g // 2 == i // 2 else "SYS") for g in range(4)}
    assert hca(plan_of(names_only(h))) == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"


def test_a_role_word_in_a_legend_name_leaves_a_storage_nic_out():
    h = legend_rails(2)
    h.rdma("mlx5_stor0", paths={0: "PIX", 1: "PXB"})
    h.rdma("mlx5_mgmt", paths={0: "PXB", 1: "PIX"})
    plan = plan_of(names_only(h))
    assert hca(plan) == "=mlx5_0,mlx5_1"
    excluded = {e["port"]: e["why"] for e in plan.get("NCCL_IB_HCA").evidence["excluded"]}
    assert "its name says 'stor'" in excluded["mlx5_stor0"] and "its name says 'mgmt'" in excluded["mlx5_mgmt"]


def test_a_role_word_does_not_leave_a_gpu_without_its_only_nic():
    h = rail_host(1)
    h.devices["mlx5_storage"] = h.devices.pop("mlx5_0")
    h.devices["mlx5_storage"]["name"] = "mlx5_storage"
    h.paths["mlx5_storage"] = h.paths.pop("mlx5_0")
    assert hca(plan_of(names_only(h))) == "=mlx5_storage"
