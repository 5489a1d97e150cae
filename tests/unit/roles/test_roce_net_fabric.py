"""roce_net's decisions on recorded `ip -j` and ping outputs (fixtures/PROVENANCE.md)."""

from __future__ import annotations

import json

import pytest

from tests.unit.roles import FIXTURES, load_module_utils

N = load_module_utils("roce_net", "roce_net_fabric")
L = load_module_utils("", "rocetune_links")
ADDR = (FIXTURES / "ip-j-addr-lab-node01.json").read_text()


def ping_fixture(name):
    text = (FIXTURES / name).read_text()
    rc = int(text.rsplit("# exit ", 1)[1])
    return rc, text


def test_addresses_per_interface_from_a_real_ip_j_addr():
    addrs = L.parse_ip_addr(ADDR)
    assert addrs["rtl0"] == ["198.18.0.11/24"]
    assert addrs["rtf0"] == ["198.19.0.11/24"]
    assert addrs["lo"] == ["127.0.0.1/8", "::1/128"]  # link-scoped fe80:: addresses are dropped
    assert not any(a.startswith("fe80") for v in addrs.values() for a in v)


def test_the_interface_ansible_connects_through_is_protected():
    addrs = L.parse_ip_addr(ADDR)
    default = L.parse_default_route_devs((FIXTURES / "ip-j-route-default-lab-node01.json").read_text())
    assert default == []
    prot = L.connection_interfaces(addrs, ["198.18.0.11", "not-an-address"], default)
    assert list(prot) == ["rtl0"] and "198.18.0.11" in prot["rtl0"]
    # The default route's interface (what ansible_facts['default_ipv4'] names) is protected too.
    routes = json.dumps([{"dst": "default", "gateway": "10.0.0.1", "dev": "eno1", "flags": []}])
    prot = L.connection_interfaces({"eno1": ["10.0.0.5/24"]}, [], L.parse_default_route_devs(routes))
    assert prot == {"eno1": "the default route leaves through it"}


def test_refusal_names_the_interface_and_the_variable():
    plan = N.plan_links(["rtl0", "rtf0"], 9000, {"rtl0": 1500, "rtf0": 1500},
                        {"rtl0": "it holds 198.18.0.11, the address the Ansible connection uses"}, False)
    assert [(e["interface"], e["action"]) for e in plan] == [("rtl0", "refused"), ("rtf0", "set")]
    assert "rtl0" in plan[0]["reason"] and "roce_net_allow_link_flap: true" in plan[0]["reason"]
    allowed = N.plan_links(["rtl0"], 9000, {"rtl0": 1500}, {"rtl0": "x"}, True)
    assert allowed[0]["action"] == "set"
    # Already right: nothing to refuse.
    assert N.plan_links(["rtl0"], 9000, {"rtl0": 9000}, {"rtl0": "x"}, False)[0]["action"] == "none"


def test_a_missing_interface_is_named_with_the_variable():
    plan = N.plan_links(["ens9"], 9000, {}, {}, False)
    assert plan[0]["action"] == "missing" and "ens9" in plan[0]["reason"] and "roce_net_interfaces" in plan[0]["reason"]


def test_arp_isolation_only_when_fabric_nics_share_a_subnet():
    one_subnet = {"ens1": ["10.1.0.5/16"], "ens2": ["10.1.0.6/16"]}
    rails = {"ens1": ["10.1.0.5/24"], "ens2": ["10.2.0.5/24"]}
    keys = N.arp_sysctls(["ens1", "ens2"], one_subnet, "auto")
    assert keys["net.ipv4.conf.ens1.arp_ignore"] == "1"
    assert keys["net.ipv4.conf.ens2.arp_announce"] == "2"
    assert keys["net.ipv4.conf.ens2.rp_filter"] == "2"
    assert len(keys) == 6
    assert N.arp_sysctls(["ens1", "ens2"], rails, "auto") == {}
    assert len(N.arp_sysctls(["ens1", "ens2"], rails, "on")) == 6
    assert N.arp_sysctls(["ens1", "ens2"], one_subnet, "off") == {}
    assert "net.ipv4.conf.ens1/100.rp_filter" in N.arp_sysctls(["ens1.100"], {}, "on")


def test_networkd_dropin_follows_the_network_file_the_link_uses():
    state = "# This is private data. Do not parse.\nADMIN_STATE=configured\nNETWORK_FILE=/run/systemd/network/10-netplan-ens1np0.network\n"
    path, content = N.networkd_dropin(N.networkd_file(state), 9000)
    assert path == "/etc/systemd/network/10-netplan-ens1np0.network.d/60-rocetune-mtu.conf"
    assert "MTUBytes=9000" in content
    assert N.networkd_file("ADMIN_STATE=unmanaged\n") is None


def test_pairs_ping_peers_in_a_shared_subnet_from_the_right_interface():
    mine = {"rtf0": ["198.19.0.11/24"]}
    peers = [{"name": "node02", "interfaces": {"rtf0": {"mtu": 9000, "addresses": ["198.19.0.12/24"]}}},
             {"name": "far", "interfaces": {"eth0": {"mtu": 9000, "addresses": ["10.9.0.1/24"]}}}]
    pairs = N.path_pairs(mine, peers)
    assert pairs[0] == {"peer": "node02", "peer_interface": "rtf0", "peer_mtu": 9000,
                        "address": "198.19.0.12", "interface": "rtf0", "routed": False}
    assert pairs[1]["peer"] == "far" and "no IPv4 subnet" in pairs[1]["skip"]
    assert N.ping_size(9000) == 8972


def test_a_routed_fabric_pings_the_same_rail_through_the_routes():
    # One /31 per port to its leaf: no peer shares a subnet; rail k reaches rail k by route.
    mine = {"ens1": ["10.0.0.1/31"], "ens2": ["10.0.1.1/31"]}
    peers = [{"name": "b", "interfaces": {"ens1": {"mtu": 9000, "addresses": ["10.0.2.1/31"]},
                                          "ens2": {"mtu": 9000, "addresses": ["10.0.3.1/31"]}}},
             {"name": "c", "interfaces": {"eth7": {"mtu": 9000, "addresses": ["10.0.9.1/31"]}}}]
    pairs = N.path_pairs(mine, peers)
    assert [(p["peer"], p["interface"], p["address"], p["routed"]) for p in pairs[:2]] == [
        ("b", "ens1", "10.0.2.1", True), ("b", "ens2", "10.0.3.1", True)]
    assert pairs[2]["peer"] == "c" and "same name (rail)" in pairs[2]["skip"]


def test_ping_verdicts_from_real_ping_output():
    assert N.ping_verdict(*ping_fixture("ping-M-do-ok.txt")) == (True, "")
    ok, reason = N.ping_verdict(*ping_fixture("ping-M-do-peer-at-1500.txt"))
    assert not ok and "no reply" in reason
    ok, reason = N.ping_verdict(*ping_fixture("ping-M-do-local-mtu-1500.txt"))
    assert not ok and "route MTU is 1500" in reason


def test_a_failed_pair_names_the_peer_left_at_1500():
    pair = {"peer": "node04", "peer_interface": "rtf0", "peer_mtu": 1500, "address": "198.19.0.14", "interface": "rtf0"}
    line = N.pair_message("node01", pair, 9000, "no reply to a don't-fragment jumbo ping")
    assert line.startswith("node01 rtf0 -> node04 rtf0 (198.19.0.14)")
    assert "node04 rtf0 is at MTU 1500, not 9000" in line
    assert "MTU" not in N.pair_message("node01", dict(pair, peer_mtu=9000), 9000, "x")


def test_udev_rule_sets_the_mtu_of_each_fabric_interface_when_it_appears():
    rule = N.udev_rule(["ens4", "ens5"], 9000)
    lines = [line for line in rule.splitlines() if not line.startswith("#")]
    assert lines == ['ACTION=="add", SUBSYSTEM=="net", NAME=="ens4", ATTR{mtu}="9000"',
                     'ACTION=="add", SUBSYSTEM=="net", NAME=="ens5", ATTR{mtu}="9000"']


def test_arp_sysctl_file_is_sorted_and_only_comments_when_nothing_is_needed():
    text = N.arp_sysctl_file({"net.ipv4.conf.ens5.arp_ignore": "1", "net.ipv4.conf.ens4.arp_ignore": "1"})
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "net.ipv4.conf.ens4.arp_ignore = 1", "net.ipv4.conf.ens5.arp_ignore = 1"]
    assert all(line.startswith("#") for line in N.arp_sysctl_file({}).splitlines())


def test_the_ssh_connection_address_is_a_connection_address():
    got = L.connect_addresses(["198.18.0.11"], {"SSH_CONNECTION": "198.18.0.1 50000 198.18.0.12 22"})
    assert got == ["198.18.0.11", "198.18.0.12"]


@pytest.mark.parametrize("name", [
    "eth0\", RUN+=\"/bin/sh", "eth0\nACTION==\"add\"", "../../etc", "a/b", "eth0:1", "eth 0", "",
    "averyveryverylong0", ".", "..", "eth*", "eth%h", "$IF", None, 7,
])
def test_what_is_no_interface_name_is_named(name):
    assert L.interface_name_problems(["ens1f0np0", name], "roce_net_interfaces") == [
        "roce_net_interfaces: %r is not an interface name (1 to 15 of A-Z a-z 0-9 _ . -)" % (name,)]


def test_real_interface_names_pass():
    names = ["ens1f0np0", "enp65s0f0np0", "eth0.100", "rtf0", "bond0", "ib_fab-1", "a" * 15]
    assert L.interface_name_problems(names, "roce_qos_interfaces") == []
