"""validate's `cross-rail` test with hosts that answer in-process: the ping line it sends, how a
pair is judged against its plan's NCCL_CROSS_NIC, the fleet's verdict and the evidence file the
declared source reads back. The lab runs it on rail subnets that do and do not route to each
other (tests/lab/test_cabling_lab.py)."""

from __future__ import annotations

import json
import subprocess

from rocetune.fleet import ssh
from rocetune.fleet.endpoints import HostEndpoints, RdmaPort
from rocetune.fleet.tests import FleetContext, HostContext, PairContext, get
from rocetune.fleet.tests.cross_rail import parse_answers, probe_command
from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources.declared import rail_reach
from tests.unit.treekit import make

TEST = get("cross-rail")


class Remote:
    """Answers the ping line: the rails of `reach` answer, the others do not."""

    def __init__(self, reach):
        self.reach, self.commands = reach, []

    def run(self, command, step, timeout, stdin=None):
        self.commands.append(command)
        targets = [t.split() for t in command.split("for t in ")[1].split("; do")[0].split("' '")]
        lines = []
        for words in targets:
            ifname, ip = (w.strip("'") for w in words)
            lines.append(f"{ifname} {ip} {'ok' if (ifname, ip) in self.reach else 'no'}")
        return ssh.Completed(0, ("\n".join(lines) + "\n").encode(), b"")


def host(name, octet, remote=None, env=None):
    ports = [RdmaPort(f"mlx5_{r}", 1, 3, 400, f"ens{r}", f"198.19.{20 + r}.{octet}", True) for r in range(2)]
    return HostContext(name, remote, HostEndpoints(name, rdma=ports), env or {}, {})


def pair(reach, env=None):
    a = host("a", 11, Remote(reach), env)
    b = host("b", 12)
    (entry,) = TEST.pair(PairContext(a, b, 1, None, None))
    return entry, a.remote


SAME = {("ens0", "198.19.20.12"), ("ens1", "198.19.21.12")}
CROSS = {("ens0", "198.19.21.12"), ("ens1", "198.19.20.12")}


def test_the_probe_is_one_shell_line_that_real_sh_runs():
    line = probe_command([("lo", "127.0.0.1"), ("lo", "127.0.0.2")])
    assert line.startswith("for t in 'lo 127.0.0.1' 'lo 127.0.0.2'; do set -- $t;")
    assert "ping -n -q -c 2 -i 0.2 -W 1 -I \"$1\" \"$2\"" in line
    fake = "ping() { for a; do last=$a; done; [ \"$last\" = 127.0.0.1 ]; }; "  # the address comes last
    out = subprocess.run(["sh", "-c", fake + line], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert parse_answers(out) == {("lo", "127.0.0.1"): True, ("lo", "127.0.0.2"): False}


def test_isolated_rails_fail_where_the_plan_lets_nccl_cross_and_pass_with_cross_nic_0():
    entry, remote = pair(SAME)
    assert entry["status"] == "fail" and entry["cross"] == {"reached": 0, "tested": 2, "arp_flux": 0}
    assert "2 of 2 rail-to-other-rail paths do not answer" in entry["why"] and "NCCL_CROSS_NIC unset" in entry["why"]
    assert "a rail 0 (ens0) -> b rail 1 (198.19.21.12)" in entry["why"]
    entry, _ = pair(SAME, env={"NCCL_CROSS_NIC": "0"})
    assert entry["status"] == "pass"


def test_a_rail_that_does_not_reach_its_own_rail_fails():
    entry, _ = pair(SAME - {("ens1", "198.19.21.12")} | CROSS)
    assert entry["status"] == "fail" and "same rail does not answer: a rail 1 (ens1) -> b rail 1" in entry["why"]


def test_the_fleet_verdict_and_the_evidence_the_rule_reads(tmp_path):
    routed, _ = pair(SAME | CROSS)
    isolated, _ = pair(SAME, env={"NCCL_CROSS_NIC": "0"})

    def fleet(entries, out=None):
        pairs = [{"a": "a", "b": f"b{i}", "tests": [e]} for i, e in enumerate(entries)]
        return TEST.fleet(FleetContext({"a": None, "b0": None, "b1": None}, pairs, [], None, out))

    assert fleet([routed])["verdict"] == "routed"
    assert fleet([isolated])["verdict"] == "isolated"
    out = tmp_path / "etc" / "rocetune" / "rail-reach.json"
    out.parent.mkdir(parents=True)
    doc = fleet([routed, isolated], str(out))
    assert doc["verdict"] == "partial" and (doc["reached"], doc["tested"]) == (2, 4) and doc["written"] == str(out)
    written = json.loads(out.read_text())
    assert written["schema"] == "rocetune.rail-reach/1" and written["hosts"] == ["a", "b0", "b1"]
    read = rail_reach(ProbeContext(HostRoot(str(tmp_path))))
    assert {k: read[k] for k in ("verdict", "reached", "tested", "hosts", "error")} == {
        "verdict": "partial", "reached": 2, "tested": 4, "hosts": 3, "error": None}


def test_a_file_that_is_not_validate_s_is_named_and_gives_no_verdict(tmp_path):
    root = make(tmp_path, {"etc/rocetune/rail-reach.json": json.dumps({"verdict": "isolated"})})
    ctx = ProbeContext(HostRoot(root))
    read = rail_reach(ctx)
    assert read["verdict"] is None and "not a rocetune.rail-reach/1 document" in read["error"]
    assert any("rail-reach.json" in w for w in ctx.status.warnings)
    assert rail_reach(ProbeContext(HostRoot(make(tmp_path / "none", {"etc/hostname": "x\n"})))) is None


def test_answers_from_a_peer_that_answers_arp_on_every_interface_prove_nothing():
    a = host("a", 11, Remote(SAME | CROSS))
    b = host("b", 12)
    b.features = {"kernel": {"sysctl": {"net.ipv4.conf.all.arp_ignore": "0", "net.ipv4.conf.ens1.arp_ignore": "1"}}}
    (entry,) = TEST.pair(PairContext(a, b, 1, None, None))
    flux = [r for r in entry["reach"] if r.get("arp_flux")]
    # a's rail 0 asks on rail 0 for b's rail-1 address: b's ens0 answers for it (arp_ignore 0 there)
    assert [(r["from"], r["to"]) for r in flux] == [(0, 1)] and entry["cross"] == {"reached": 1, "tested": 1,
                                                                                  "arp_flux": 1}
    assert "answers ARP for any local address on ens0" in entry["why"]
    only_flux = [{"a": "a", "b": "b", "tests": [{"kind": "cross-rail", "reach": flux}]}]
    doc = TEST.fleet(FleetContext({}, only_flux, [], None, None))
    assert doc["status"] == "skipped" and "arp_ignore 0" in doc["why"]
