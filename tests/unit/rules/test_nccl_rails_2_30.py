"""NCCL 2.30.7's rail ids in NCCL_IB_HCA and NCCL_IB_SUBNET_AWARE_ROUTING: decided where the plan
knows rails, for the releases the release table says read them."""

from __future__ import annotations

from rocetune.model.qos import load_text
from rocetune.nccl.syntax import ib_hca_selects

from .featurekit import Host, plan_of, rail_host

RAILS = load_text("fabric:\n  tiers: 2\n  rail_optimised: true\n", "/etc/rocetune/qos.yml")
NOT_RAILS = load_text("fabric:\n  tiers: 2\n  rail_optimised: false\n", "/etc/rocetune/qos.yml")
# the fabric owner's opt-in to NCCL_IB_SUBNET_AWARE_ROUTING (off in NCCL by default: commit 5c1c4288)
SUBNET_AWARE = load_text("fabric:\n  subnet_aware_routing: true\n", "/etc/rocetune/qos.yml")


def test_rail_ids_by_rail_subnet_from_2_30_7():
    h = rail_host(4, nccl="2.30.7")
    # rail subnets listed out of address order on this node: rail ids follow the subnets, not the names
    h.devices["mlx5_0"]["ports"][0]["gids"], h.devices["mlx5_3"]["ports"][0]["gids"] = \
        h.devices["mlx5_3"]["ports"][0]["gids"], h.devices["mlx5_0"]["ports"][0]["gids"]
    h.ifaces["ens0np0"]["addresses"], h.ifaces["ens3np0"]["addresses"] = \
        h.ifaces["ens3np0"]["addresses"], h.ifaces["ens0np0"]["addresses"]
    d = plan_of(h.build()).get("NCCL_IB_HCA")
    assert d.value == "=mlx5_0:1:3,mlx5_1:1:1,mlx5_2:1:2,mlx5_3:1:0"
    assert d.evidence["rail_ids"] == {"mlx5_0:1": 3, "mlx5_1:1": 1, "mlx5_2:1": 2, "mlx5_3:1": 0}
    assert "NVIDIA/nccl#2097" in d.reason and "192.168.0.0/24" in d.reason
    assert ib_hca_selects(d.value, "mlx5_0", 1) and not ib_hca_selects(d.value, "mlx5_0", 2)


def test_no_rail_ids_before_2_30_7_with_a_note():
    for nccl in ("2.29.7", "2.30.4", None):
        plan = plan_of(rail_host(4, nccl=nccl).build())
        assert plan.get("NCCL_IB_HCA").value == "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"
        assert any("does not read rail ids from NCCL_IB_HCA (NCCL 2.30.7 and later does)" in n.message
                   for n in plan.notes)


def test_the_fabric_plan_alone_gives_rails_and_says_no_to_them():
    one = Host(nccl="2.30.7").iface("eth0", "10.0.0.5/24", default=True)
    for i in range(2):
        one.gpu(i)
        one.rdma(f"mlx5_{i}", netdev=f"ens{i}np0", ipv4=f"10.10.10.{i + 5}/24", paths={i: "PIX"})
    assert plan_of(one.build()).get("NCCL_IB_HCA").value == "=mlx5_0:1,mlx5_1:1"  # one subnet: rails unknown
    d = plan_of(one.build(), qos=RAILS).get("NCCL_IB_HCA")
    assert d.value == "=mlx5_0:1:0,mlx5_1:1:1" and "the fabric plan (/etc/rocetune/qos.yml)" in d.reason
    assert plan_of(rail_host(4, nccl="2.30.7").build(), qos=NOT_RAILS).get("NCCL_IB_HCA").value == \
        "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"


def test_subnet_aware_routing_on_isolated_rail_subnets_from_2_30_7():
    plan = plan_of(rail_host(4, nccl="2.30.7").connected_routes().route("eth0", "0.0.0.0/0", "10.0.0.1").build(),
                   qos=SUBNET_AWARE)
    d = plan.get("NCCL_IB_SUBNET_AWARE_ROUTING")
    assert d.value == "1" and "no route in the main IPv4 table joins them" in d.reason
    assert d.evidence["rails"]["mlx5_2:1"] == "192.168.2.0/24"
    assert plan.get("NCCL_IB_SUBNET_PREFIX_LEN") is None  # /24 is NCCL's default


def test_subnet_aware_routing_says_when_routes_are_unknown_and_sets_a_non_default_prefix():
    h = rail_host(2, nccl="2.30.7", frontend=False)
    for i, name in enumerate(("ens0np0", "ens1np0")):
        h.ifaces[name]["addresses"][0]["prefixlen"] = 16
        h.ifaces[name]["addresses"][0]["address"] = f"10.{i}.0.5"
        h.devices[f"mlx5_{i}"]["ports"][0]["gids"][-1]["ipv4"] = f"10.{i}.0.5"
    plan = plan_of(h.build(), qos=SUBNET_AWARE)
    d = plan.get("NCCL_IB_SUBNET_AWARE_ROUTING")
    assert d is not None and "whether anything routes between them is unknown" in d.reason
    assert plan.get("NCCL_IB_SUBNET_PREFIX_LEN").value == "16"


def test_no_subnet_aware_routing_where_a_route_joins_the_rails_or_the_release_lacks_it():
    joined = rail_host(4, nccl="2.30.7").connected_routes().route("ens0np0", "192.168.0.0/16", "192.168.0.1")
    plan = plan_of(joined.build(), qos=SUBNET_AWARE)
    assert "NCCL_IB_SUBNET_AWARE_ROUTING" not in plan.env
    assert any("a route joins the rail subnets" in n.message for n in plan.notes)
    old = plan_of(rail_host(4, nccl="2.30.4").build(), qos=SUBNET_AWARE)
    assert "NCCL_IB_SUBNET_AWARE_ROUTING" not in old.env
    assert any("has no NCCL_IB_SUBNET_AWARE_ROUTING (NCCL 2.30.7 and later)" in n.message for n in old.notes)


def test_subnet_aware_routing_is_the_fabric_plans_opt_in():
    """2.30.7 rail hosts used to get it by default; NCCL keeps it off (commit 5c1c4288, for DGX Spark)."""
    host = rail_host(4, nccl="2.30.7").connected_routes().route("eth0", "0.0.0.0/0", "10.0.0.1").build()
    for qos in (None, RAILS):
        plan = plan_of(host, qos=qos) if qos else plan_of(host)
        assert "NCCL_IB_SUBNET_AWARE_ROUTING" not in plan.env
        assert any("subnet_aware_routing: true" in n.message for n in plan.notes)
