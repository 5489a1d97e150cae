"""validate's `lldp` test on recorded lldpctl outputs (tests/fixtures/outputs/lldp): each host's
rails traced to a switch port, then compared across hosts. The lab runs it against real lldpd
daemons (tests/lab/test_cabling_lab.py)."""

from __future__ import annotations

from pathlib import Path

from rocetune.fleet import ssh
from rocetune.fleet.endpoints import HostEndpoints, RdmaPort
from rocetune.fleet.tests import FleetContext, HostContext, NodeContext, get

LLDP = Path(__file__).resolve().parents[2] / "fixtures" / "outputs" / "lldp"
TWO = (LLDP / "lldpctl-json0-two-interfaces-lab.json").read_bytes()
TEST = get("lldp")


class Remote:
    def __init__(self, out: bytes, code: int = 0, err: bytes = b""):
        self.done = ssh.Completed(code, out, err)

    def run(self, command, step, timeout, stdin=None):
        assert command == "lldpctl -f json0"
        return self.done


def host(name, netdevs, remote) -> HostContext:
    ports = [RdmaPort(f"rxe{i}", 1, 1, 2.5, nd, None, True) for i, nd in enumerate(netdevs)]
    return HostContext(name, remote, HostEndpoints(name, rdma=ports), {}, {})


def traced(name, netdevs, remote=None):
    h = host(name, netdevs, remote or Remote(TWO))
    h.results["lldp"] = TEST.node(NodeContext(h, None, []))
    return h


def fleet(hosts, named=()):
    return TEST.fleet(FleetContext({h.name: h for h in hosts}, [], [], None, list(named)))


def test_each_rail_is_traced_to_its_switch_port():
    doc = traced("n1", ["rt31a0", "rt31a1"]).results["lldp"]
    assert doc["status"] == "pass"
    assert [(r["rail"], r["port"], r["switch"], r["switch_port"]) for r in doc["rails"]] == [
        (0, "rxe0:1", "leaf-rail0", "rt31s0"), (1, "rxe1:1", "leaf-rail0", "rt31s1")]


def test_a_rail_without_neighbour_fails_and_a_host_without_lldpd_says_so():
    doc = traced("n1", ["rt31a0", "ens9"]).results["lldp"]
    assert doc["status"] == "fail" and "no LLDP neighbour on rail 1 rxe1:1 (ens9)" in doc["why"]
    err = b"2026-11-27T19:17:25 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file"
    doc = traced("n2", ["rt31a0"], Remote(b"", 1, err)).results["lldp"]
    assert doc["status"] == "error" and "unable to connect" in doc["error"] and "is lldpd running?" in doc["error"]
    assert traced("n3", ["rt31a0"], Remote(b"", 127)).results["lldp"]["status"] == "skipped"


def test_the_host_whose_rail_reaches_another_switch_is_named_with_its_cable():
    # n3's rail 0 and rail 1 interfaces are swapped: rail 0 ends on the port rail 1 should.
    hosts = [traced("n1", ["rt31a0", "rt31a1"]), traced("n2", ["rt31a0", "rt31a1"]),
             traced("n3", ["rt31a1", "rt31a0"])]
    for h in hosts[:2]:
        h.results["lldp"]["rails"][1]["switch"] = "leaf-rail1"
    hosts[2].results["lldp"]["rails"][0]["switch"] = "leaf-rail1"
    doc = fleet(hosts)
    assert doc["status"] == "fail" and doc["suspects"] == ["n3"] and doc["expected"] == ["leaf-rail0", "leaf-rail1"]
    assert doc["odd"][0]["why"] == ("n3 rail 0 rxe0:1 (rt31a1) reaches leaf-rail1 port rt31s1; rail 0 reaches "
                                    "leaf-rail0 (as 2 of 3 hosts)")
    assert "rail 1 rxe1:1 (rt31a0) reaches leaf-rail0" in doc["odd"][1]["why"]


def test_two_hosts_that_disagree_are_both_named_unless_the_switches_are():
    a, b = traced("a", ["rt31a0"]), traced("b", ["rt31a0"])
    b.results["lldp"]["rails"][0]["switch"] = "leaf-rail1"
    doc = fleet([a, b])
    assert doc["status"] == "fail" and doc["suspects"] == ["a", "b"] and "--lldp-switches" in doc["why"]
    doc = fleet([a, b], named=["leaf-rail1"])
    assert doc["suspects"] == ["a"] and "(as --lldp-switches names)" in doc["why"]
