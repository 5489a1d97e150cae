"""nccl-ib-gid-index: NCCL_IB_GID_INDEX pinned only where NCCL's own GID choice fails."""

from __future__ import annotations

import ipaddress

from .featurekit import Host, gid, plan_of, rail_host, roce_table
from .ncclsim import gid_autoselect


def env(plan):
    return plan.env


def gids_of(f, dev):
    return next(d for d in f["rdma"]["devices"] if d["name"] == dev)["ports"][0]["gids"]


def address_of(gids, index):
    g = next(g for g in gids if g["index"] == index)
    return g["ipv4"] or g["ipv6"]


def test_auto_selecting_nccl_gets_no_pinned_index():
    for version in ("2.21.5", "2.23.4", "2.30.7"):
        f = rail_host(nccl=version).build()
        plan = plan_of(f)
        e = env(plan)
        assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ADDR_FAMILY"} & set(e), version
        assert any("#1333" in str(n) and "itself" in str(n) for n in plan.notes)
        gids = gids_of(f, "mlx5_0")
        assert address_of(gids, gid_autoselect(gids)) == "192.168.0.5"


def test_old_nccl_gets_the_index_pinned_with_the_real_reason():
    plan = plan_of(rail_host(nccl="2.20.5").build())
    d = plan.get("NCCL_IB_GID_INDEX")
    assert d.value == "3" and "predates GID auto-selection (2.21.5)" in d.reason and "index 0" in d.reason
    ev = d.evidence["gids"]
    assert {x["index"] for x in ev} == {3} and len(ev) == 8


def test_unknown_nccl_is_pinned_conservatively_and_says_so():
    plan = plan_of(rail_host(nccl=None).build())
    d = plan.get("NCCL_IB_GID_INDEX")
    assert d.value == "3" and "version is unknown" in d.reason
    assert any("NCCL version unknown" in str(n) for n in plan.notes)


def test_index_differing_per_port_is_left_to_auto_selection():
    h = rail_host(2)
    extra = [gid(0, "fe80::9", "IB/RoCE v1", "ens1np0"), gid(1, "fe80::9", "RoCE v2", "ens1np0")]
    port = h.devices["mlx5_1"]["ports"][0]
    port["gids"] = extra + roce_table("ens1np0", ["192.168.1.5/24"], start=2)
    port["roce_v2_ipv4_gids"] = [5]
    f = h.build()
    e = env(plan_of(f))
    assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE"} & set(e)
    assert address_of(gids_of(f, "mlx5_1"), gid_autoselect(gids_of(f, "mlx5_1"))) == "192.168.1.5"


def _odd_port_host(rails: int):
    """`rails` rail ports on NCCL 2.20.5; mlx5_1's table carries two extra link-local entries
    first, so its IPv4 RoCE v2 GID is at 5 where the others' is at 3."""
    h = rail_host(rails, nccl="2.20.5")
    extra = [gid(0, "fe80::9", "IB/RoCE v1", "ens1np0"), gid(1, "fe80::9", "RoCE v2", "ens1np0")]
    port = h.devices["mlx5_1"]["ports"][0]
    port["gids"] = extra + roce_table("ens1np0", ["192.168.1.5/24"], start=2)
    port["roce_v2_ipv4_gids"] = [5]
    return h.build()


def test_an_odd_port_on_old_nccl_keeps_the_majority_pin_and_fails():
    # 2.20.5 queries the one NCCL_IB_GID_INDEX on every device and has no NCCL_IB_ADDR_RANGE
    # (v2.20.5 src/transport/net_ib.cc:80, :838, :1028): a range would leave every port on GID 0.
    plan = plan_of(_odd_port_host(4))
    e = env(plan)
    assert e["NCCL_IB_GID_INDEX"] == "3" and "NCCL_IB_ADDR_RANGE" not in e
    odd = [f for f in plan.findings if f.id == "gid-index-odd-port"]
    assert [(f.subject, f.severity) for f in odd] == [("mlx5_1:1", "error")]
    assert "index 5, the other ports' at 3" in odd[0].message
    assert not [f for f in plan.findings if f.id == "gid-nccl-too-old"]


def test_a_tie_on_old_nccl_pins_the_lower_index():
    plan = plan_of(_odd_port_host(2))
    assert env(plan)["NCCL_IB_GID_INDEX"] == "3"
    assert [f.subject for f in plan.findings if f.id == "gid-index-odd-port"] == ["mlx5_1:1"]


def test_index_differing_per_port_on_new_nccl_gives_a_range_not_an_index():
    h = rail_host(2, nccl="2.21.5")
    h.devices["mlx5_1"]["ports"][0]["gids"] = [gid(0, "fe80::9", "IB/RoCE v1", "ens1np0"),
                                               gid(1, "fe80::9", "RoCE v2", "ens1np0")] + \
        roce_table("ens1np0", ["192.168.1.5/24"], start=2)
    h.devices["mlx5_1"]["ports"][0]["roce_v2_ipv4_gids"] = [5]
    h.ifaces["ens0np0"]["addresses"].append({"family": "inet", "address": "192.168.9.5", "prefixlen": 24})
    f = h.build()
    plan = plan_of(f)
    e = env(plan)
    assert "NCCL_IB_GID_INDEX" not in e and not [x for x in plan.findings if x.id == "gid-index-odd-port"]


def test_port_with_several_ipv4_addresses_gets_the_compute_one_by_range():
    h = rail_host(4)
    # every rail port also carries a storage VLAN whose GIDs come first in its table
    for i in range(4):
        nd, vlan = f"ens{i}np0", f"ens{i}np0.100"
        port = h.devices[f"mlx5_{i}"]["ports"][0]
        storage = roce_table(vlan, [f"172.16.{i}.5/24"])[2:]
        rail = [gid(4, f"::ffff:192.168.{i}.5", "IB/RoCE v1", nd), gid(5, f"::ffff:192.168.{i}.5", "RoCE v2", nd)]
        port["gids"] = roce_table(nd)[:2] + storage + rail
        port["roce_v2_ipv4_gids"] = [3, 5]
        h.iface(vlan, f"172.16.{i}.5/24", kind="vlan")
    h.ifaces["eth0"]["addresses"] = [{"family": "inet", "address": "10.0.0.5", "prefixlen": 24}]
    f = h.build()
    plan = plan_of(f)
    e = env(plan)
    assert "NCCL_IB_GID_INDEX" not in e
    rng = e["NCCL_IB_ADDR_RANGE"]
    for i in range(4):
        gids = gids_of(f, f"mlx5_{i}")
        # without the range NCCL would take the storage address...
        assert address_of(gids, gid_autoselect(gids)).startswith("172.16.")
        # ...with it, the rail address
        assert address_of(gids, gid_autoselect(gids, "AF_INET", rng)) == f"192.168.{i}.5"


def test_ipv6_only_ports_get_af_inet6():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    for i in range(2):
        h.gpu(i)
        h.rdma(f"bnxt_re{i}", netdev=f"ens{i}np0", ipv6=f"fd00:{i}::5/64", paths={i: "PIX"})
    f = h.build()
    plan = plan_of(f)
    e = env(plan)
    assert e["NCCL_IB_ADDR_FAMILY"] == "AF_INET6"
    assert "NCCL_IB_GID_INDEX" not in e
    for i in range(2):
        gids = gids_of(f, f"bnxt_re{i}")
        assert gid_autoselect(gids, "AF_INET") == 0, "without the family NCCL falls back to index 0"
        got = address_of(gids, gid_autoselect(gids, "AF_INET6"))
        assert ipaddress.ip_address(got) == ipaddress.ip_address(f"fd00:{i}::5")


def test_infiniband_gets_no_gid_variable():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    for i in range(4):
        h.gpu(i)
        h.rdma(f"mlx5_ib{i}", link_layer="InfiniBand", netdev=f"ib{i}", paths={i: "PIX"})
    plan = plan_of(h.build())
    assert not {"NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ADDR_FAMILY"} & set(env(plan))


def test_old_nccl_never_gets_a_range_it_ignores():
    h = rail_host(2, nccl="2.18.5")
    port = h.devices["mlx5_1"]["ports"][0]
    port["gids"] = roce_table("ens1np0", ["192.168.1.5/24"], start=2)
    port["roce_v2_ipv4_gids"] = [5]
    plan = plan_of(h.build())
    assert "NCCL_IB_ADDR_RANGE" not in env(plan) and env(plan)["NCCL_IB_GID_INDEX"] == "3"
    assert any("2.18.5" in f.message and "2.21.5" in f.message for f in plan.findings
               if f.id == "gid-index-odd-port")


def test_unknown_nccl_version_is_a_note_not_a_guess():
    h = rail_host(2, nccl=None)
    port = h.devices["mlx5_1"]["ports"][0]
    port["gids"] = roce_table("ens1np0", ["192.168.1.5/24"], start=2)
    port["roce_v2_ipv4_gids"] = [5]
    plan = plan_of(h.build())
    assert any("NCCL library not found" in str(n) for n in plan.notes)


def unreadable_host(nccl):
    h = rail_host(2, nccl=nccl)
    for i in range(2):
        port = h.devices[f"mlx5_{i}"]["ports"][0]
        for g in port["gids"]:
            g["type"] = None
        port["roce_v2_ipv4_gids"] = []
    return h


def test_unreadable_gid_types_pin_the_layouts_v2_index_with_the_real_reason():
    for version, why in (("2.23.4", "aborts the connection"), ("2.25.1", "aborts the connection"),
                         ("2.26.2", "without a RoCE version check"), ("2.20.5", "uses GID index 0"),
                         (None, "version is unknown")):
        d = plan_of(unreadable_host(version).build()).get("NCCL_IB_GID_INDEX")
        assert d is not None and d.value == "3", version
        assert why in d.reason and "inferred from the table layout" in d.reason, version


def test_unreadable_types_without_a_v1_v2_pair_pin_nothing():
    h = unreadable_host("2.23.4")
    for i in range(2):
        port = h.devices[f"mlx5_{i}"]["ports"][0]
        port["gids"] = [g for g in port["gids"] if g["index"] != 3]
    plan = plan_of(h.build())
    assert "NCCL_IB_GID_INDEX" not in env(plan)
    assert any("show_gids" in str(w) and "aborts" in str(w) for w in plan.warnings)


def test_container_with_partial_tables_pins_the_readable_v2_gid():
    h = rail_host(2)
    for i in range(2):
        nd = f"net{i + 1}"
        port = h.devices[f"mlx5_{i}"]["ports"][0]
        hidden = [dict(g, type=None, ndev=None) for g in roce_table(None, [f"10.200.{i}.5/24"])]
        port["gids"] = hidden + [gid(4, f"::ffff:10.210.{i}.5", "IB/RoCE v1", nd),
                                 gid(5, f"::ffff:10.210.{i}.5", "RoCE v2", nd)]
        port["roce_v2_ipv4_gids"] = [5]
        port["netdev"] = nd
        h.iface(nd, f"10.210.{i}.5/24", kind="virtual")
    plan = plan_of(h.build())
    d = plan.get("NCCL_IB_GID_INDEX")
    assert d.value == "5" and "2.21.5-2.25.x" in d.reason and "read from the table" in d.reason


def test_old_nccl_with_ipv6_only_pins_the_index_instead():
    h = Host(nccl="2.19.3").iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0)
    h.rdma("bnxt_re0", netdev="ens0np0", ipv6="fd00::5/64", paths={0: "PIX"})
    e = env(plan_of(h.build()))
    assert e["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_IB_ADDR_FAMILY" not in e
