"""Addresses and default routes where `ip` is not installed (the real H100 host, minimal images):
/proc/net's fib_trie, if_inet6, route and ipv6_route, read through the root."""

from __future__ import annotations

import shutil

import pytest

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.collect import collect_features
from rocetune.probe.sources import net
from tests.fixtures.roots import root_of
from tests.unit.rules.featurekit import plan_of
from tests.unit.treekit import make

# Modelled, not recorded: what /proc/net/fib_trie and if_inet6 hold on the H100 host
# (/work/shared/knowledge/real-gpu-host.md: eth0 192.0.2.2/24, the default route, IPv6 fd00::2
# and its link-local address), in the kernel's format (net/ipv4/fib_trie.c, net/ipv6/addrconf.c).
# The real capture lacks both files: its probe did not read them.
FIB_TRIE_MODELLED = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.2
              /32 host LOCAL
"""
IF_INET6_MODELLED = ("00000000000000000000000000000001 01 80 10 80       lo\n"
                     "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
                     "fd000000000000000000000000000002 04 40 00 82     eth0\n")


@pytest.fixture
def h100(tmp_path):
    """A writable copy of the real H100 capture's root."""
    dest = tmp_path / "h100"
    shutil.copytree(root_of("h100-firecracker-vm"), dest, symlinks=True)
    return dest


def _eth0(f):
    return next(i for i in f["net"]["interfaces"] if i["name"] == "eth0")


def test_real_h100_capture_routes_alone_name_eth0_for_sockets(h100):
    f = collect_features(str(h100))
    assert f["net"]["default_routes"] == [{"interface": "eth0", "family": "inet", "metric": 0},
                                          {"interface": "eth0", "family": "inet6", "metric": 1024}]
    eth0 = _eth0(f)
    assert eth0["connected_networks"] == ["192.0.2.0/24", "fd00::/64"]
    # IPv6 addresses from ipv6_route's local entries; IPv4 ones stay unknown (no fib_trie)
    assert [a["address"] for a in eth0["addresses"]] == ["fd00::2", "fe80::fc:ff:fe00:1"]
    assert f["net"]["addresses_known"] is False
    assert any("IPv4 addresses unknown" in w for w in f["sources"]["net"]["warnings"])
    plan = plan_of(f)
    assert plan.get("NCCL_SOCKET_IFNAME").value == "=eth0"


def test_modelled_fib_trie_and_if_inet6_give_every_address(h100):
    make(h100, {"proc/self/net/fib_trie": FIB_TRIE_MODELLED, "proc/self/net/if_inet6": IF_INET6_MODELLED})
    f = collect_features(str(h100))
    assert f["net"]["addresses_known"] is True and f["net"]["addresses_source"] == "/proc/net"
    assert [(a["address"], a["prefixlen"]) for a in _eth0(f)["addresses"]] == [
        ("192.0.2.2", 24), ("fd00::2", 64), ("fe80::fc:ff:fe00:1", 64)]
    lo = next(i for i in f["net"]["interfaces"] if i["name"] == "lo")
    assert [(a["address"], a["prefixlen"]) for a in lo["addresses"]] == [("127.0.0.1", 8), ("::1", 128)]
    assert not f["sources"]["net"]["warnings"]
    assert plan_of(f).get("NCCL_SOCKET_IFNAME").evidence["addresses"][0] == "192.0.2.2/24"


def test_ipv4_only_routes_the_address_is_unknown_but_its_network_is_not(h100):
    (h100 / "proc" / "self" / "net" / "ipv6_route").unlink()
    f = collect_features(str(h100))
    assert _eth0(f)["addresses"] == [] and _eth0(f)["connected_networks"] == ["192.0.2.0/24"]
    plan = plan_of(f)
    d = plan.get("NCCL_SOCKET_IFNAME")
    assert d.value == "=eth0" and d.evidence["ipv4_address_unknown_in"] == ["192.0.2.0/24"]
    assert any("eth0's IPv4 address is unknown" in str(n) and "192.0.2.0/24" in str(n) for n in plan.notes)


def test_no_routes_and_no_addresses_leave_the_socket_interface_unset(h100):
    for name in ("route", "ipv6_route"):
        (h100 / "proc" / "self" / "net" / name).unlink()
    plan = plan_of(collect_features(str(h100)))
    assert plan.get("NCCL_SOCKET_IFNAME") is None
    assert any("no interface has a connected route" in str(w) for w in plan.warnings)


ROUTE_HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


def _ctx(tmp_path, tree):
    return ProbeContext(HostRoot(make(tmp_path, tree)))


def test_default_routes_record_family_and_metric_and_skip_reject_routes(tmp_path):
    ctx = _ctx(tmp_path, {
        "proc/net/route": ROUTE_HEADER +
        "eno1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
        "eno1\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"
        "ens1\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
        "proc/net/ipv6_route":
        "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
        "fe800000000000000000000000000001 00000400 00000001 00000000 00450003     ens1\n"
        "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
        "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"})
    v4, v6, _ = net.read_routes(ctx)
    assert net.default_routes(v4, v6) == [{"interface": "eno1", "family": "inet", "metric": 100},
                                          {"interface": "ens1", "family": "inet6", "metric": 1024}]
    assert net.connected_networks(v4, v6) == {"eno1": ["10.0.0.0/24"], "ens1": ["192.168.1.0/24"]}


def test_an_address_two_interfaces_share_a_subnet_for_is_not_guessed(tmp_path):
    ctx = _ctx(tmp_path, {
        "proc/net/route": ROUTE_HEADER + "ens1\t0000A8C0\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
                                         "ens2\t0000A8C0\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n",
        "proc/net/fib_trie": "Main:\n  +-- 192.168.0.0/16 2 0 2\n     |-- 192.168.1.5\n        /32 host LOCAL\n"})
    addrs, known, _ = net.addresses(ctx, *net.read_routes(ctx))
    assert addrs == {} and known is True
    assert any("192.168.1.5" in w and "ens1, ens2" in w for w in ctx.status.warnings)


def test_capture_records_the_proc_net_files_it_read(h100):
    from rocetune.probe.capture import record

    make(h100, {"proc/self/net/fib_trie": FIB_TRIE_MODELLED, "proc/self/net/if_inet6": IF_INET6_MODELLED})
    features, rec = record(str(h100))
    read = set(rec.files)
    assert {"/proc/self/net/fib_trie", "/proc/self/net/if_inet6", "/proc/self/net/route",
            "/proc/self/net/ipv6_route"} <= read, sorted(p for p in read if "net" in p)
