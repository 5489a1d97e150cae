"""Slurm's topology.conf from the fleet's LLDP cabling (fleet.topology, app.fleet.topology): a leaf
per set of leaf switches the nodes' rails reach, the switches above from the switches' own LLDP,
and refusals for what slurmctld would warn about. slurmctld itself reads these files in
tests/lab/test_topology_lab.py."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from rocetune import app
from rocetune.app.fleet import TopologyRequest, topology
from rocetune.errors import RocetuneError
from rocetune.fleet import topology as topo
from rocetune.fleet.facts import Fact
from rocetune.fleet.results import SCHEMA
from rocetune.render.slurm_topology import topology_conf

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ROOT = str(FIXTURES / "hosts" / "dgx-h100-roce")
SWITCHES = FIXTURES / "outputs" / "lldp" / "cumulus-dual-bgp-switches"


def facts(*leaves):
    return {f"rail.{i}.switch": Fact(leaf, detail=f"port{i} -> {leaf}") for i, leaf in enumerate(leaves)}


def placements(table):
    return [topo.place(host, facts(*leaves)) for host, leaves in table]


def test_nodes_are_grouped_by_the_set_of_leaves_their_rails_reach():
    su1, su2 = ("l1a", "l1b"), ("l2a", "l2b")
    made = topo.build(placements([("gpu01", su1), ("gpu02", su1), ("gpu03", su2), ("gpu04", su2)]), top="spine")
    assert made.ok and not made.notes
    assert [(s.name, s.level, s.nodes, s.children) for s in made.switches] == [
        ("l1a+l1b", 0, ["gpu01", "gpu02"], []),
        ("l2a+l2b", 0, ["gpu03", "gpu04"], []),
        ("spine", 1, [], ["l1a+l1b", "l2a+l2b"]),
    ]
    text = topology_conf(made, "9.9", "/srv/fleet")
    assert text.splitlines()[3:] == [
        "SwitchName=l1a+l1b Nodes=gpu[01-02]",
        "SwitchName=l2a+l2b Nodes=gpu[03-04]",
        "SwitchName=spine Switches=l1a+l1b,l2a+l2b",
    ]


def test_one_leaf_per_rail_is_never_written_and_one_set_needs_no_top():
    # The naive file slurmctld logs `Multiple leaf switches contain nodes` for puts each node under
    # every rail's leaf; the set is one Slurm leaf instead.
    made = topo.build(placements([(f"n{i}", ("leaf-rail0", "leaf-rail1")) for i in range(1, 5)]))
    assert made.ok and [(s.name, s.nodes) for s in made.switches] == [
        ("leaf-rail0+leaf-rail1", ["n1", "n2", "n3", "n4"])
    ]
    assert "SwitchName=leaf-rail0+leaf-rail1 Nodes=n[1-4]\n" in topology_conf(made, "9.9", "d")


def test_a_crossed_node_keeps_its_leaf_set_and_is_noted():
    table = [("n1", ("r0", "r1")), ("n2", ("r0", "r1")), ("n3", ("r1", "r0")), ("n4", ("r0", "r1"))]
    made = topo.build(placements(table))
    assert made.ok and [s.nodes for s in made.switches] == [["n1", "n2", "n3", "n4"]]
    assert made.notes == [
        "n3: rails crossed (rail 0 -> r1, rail 1 -> r0); the leaf set is the same, so the "
        "topology holds (`fleet report` and `fleet validate --tests lldp` name the cables)"
    ]


@pytest.mark.parametrize(
    "fact, said",
    [
        (
            Fact(None, detail="port1 (ens5): no LLDP neighbour"),
            "rail 1 does not tell its switch (port1 (ens5): no LLDP neighbour)",
        ),
        (Fact(None, known=False, detail="lldpctl: not found"), "rail 1 does not tell its switch (lldpctl: not found)"),
    ],
)
def test_a_node_whose_rail_does_not_tell_is_refused_not_left_out(fact, said):
    good = placements([("n1", ("r0", "r1")), ("n2", ("r0", "r1"))])
    silent = topo.place("n3", {"rail.0.switch": Fact("r0"), "rail.1.switch": fact})
    made = topo.build(good + [silent])
    assert made.refused == [f"n3: left out, {said}"]


def test_results_and_the_schedulers_nodes_must_match():
    table = placements([("gpu01", ("a",)), ("gpu02", ("a",)), ("login1", ("a",))])
    made = topo.build(table, nodes=["gpu01", "gpu02", "gpu03"])
    assert made.refused == [
        "no result for 1 of the scheduler's nodes: gpu03",
        "1 result(s) for nodes the scheduler does not name: login1",
    ]
    failed = topo.place("gpu04", {}, error="ssh: timed out")
    nolldp = topo.place("gpu05", {"mtu": Fact([9000])})
    assert [p.problem for p in (failed, nolldp)] == [
        "no usable result (ssh: timed out)",
        "its result has no LLDP reading (lldpd on the node, `lldpctl` installed)",
    ]


def test_names_slurm_cannot_carry_are_refused():
    made = topo.build(placements([("n1", ("leaf[1]",)), ("n 2", ("a",))]), top="x")
    assert "n1: its rails reach the switch 'leaf[1]', not a name Slurm's lists can carry" in made.refused
    assert "'n 2': not a name Slurm's node lists can carry" in made.refused


def test_several_sets_with_nothing_above_are_refused():
    made = topo.build(placements([("n1", ("a",)), ("n2", ("b",))]))
    assert made.refused == [
        "2 switch sets (a, b) and nothing above them: no switch reaches every node (slurmctld: "
        "`no switch can reach all nodes`); give the switches' LLDP (--switch-lldp) or name the "
        "top switch (--top)"
    ]


def switch_lldp():
    from rocetune.probe.parsers.lldpctl import parse_lldpctl_json

    return {p.stem: parse_lldpctl_json(p.read_text()) for p in sorted(SWITCHES.glob("*.json"))}


def test_spines_come_from_the_switches_own_lldp():
    # A real Cumulus fabric (suzieq's dual-bgp): leaf pairs 01/02 and 03/04, each leaf to spine01
    # and spine02; hosts dual-homed to a pair.
    uplinks = topo.uplinks_from_lldp(switch_lldp())
    assert uplinks["leaf01"] == {"spine01", "spine02", "leaf02"}
    table = placements(
        [
            ("srv101", ("leaf01", "leaf02")),
            ("srv102", ("leaf01", "leaf02")),
            ("srv103", ("leaf03", "leaf04")),
            ("srv104", ("leaf03", "leaf04")),
        ]
    )
    made = topo.build(table, uplinks=uplinks)
    assert made.ok, made.refused
    assert topology_conf(made, "9.9", "d").splitlines()[3:] == [
        "SwitchName=leaf01+leaf02 Nodes=srv[101-102]",
        "SwitchName=leaf03+leaf04 Nodes=srv[103-104]",
        "SwitchName=spine01+spine02 Switches=leaf01+leaf02,leaf03+leaf04",
    ]
    # Without the spines' own files the leaves' neighbours are not known to be switches.
    leaves_only = {k: v for k, v in switch_lldp().items() if k.startswith("leaf")}
    refused = topo.build(table, uplinks=topo.uplinks_from_lldp(leaves_only)).refused
    assert refused == [
        "no switch above leaf01+leaf02, leaf03+leaf04 in the switches' LLDP, so no switch reaches "
        "every node (slurmctld: `no switch can reach all nodes`)"
    ]


def test_long_leaf_sets_are_numbered_and_listed_in_a_comment():
    eight = tuple(f"su1-rail-leaf{i}" for i in range(8))
    made = topo.build(placements([("n1", eight), ("n2", tuple(f"su2-rail-leaf{i}" for i in range(8)))]), top="core")
    lines = topology_conf(made, "9.9", "d").splitlines()
    assert "SwitchName=leafset1 Nodes=n1" in lines and "SwitchName=core Switches=leafset[1-2]" in lines
    assert "# leafset1: " + " ".join(eight) in lines


def write_results(tmp_path, table):
    features = app.host_features(ROOT)
    from rocetune.analysis.hostview import HostView
    from rocetune.model.vocab import natural_key

    ports = sorted(HostView(features).selection().chosen, key=lambda p: natural_key(p.name))
    for name, leaves in table:
        f = copy.deepcopy(features)
        f["lldp"] = {
            "tool": "lldpctl -f json",
            "error": None,
            "interfaces": {
                p.netdev: [
                    {
                        "chassis": leaf,
                        "port": f"swp{n}",
                        "chassis_id": None,
                        "chassis_id_type": None,
                        "port_id_type": "ifname",
                        "port_descr": None,
                        "mgmt_ip": [],
                        "via": "LLDP",
                    }
                ]
                for n, (p, leaf) in enumerate(zip(ports, leaves))
                if leaf
            },
        }
        doc = {
            "schema": SCHEMA,
            "host": name,
            "probe": {"features": f, "plan": {"env": {}}},
            "doctor": {"findings": []},
            "gathered_at": None,
            "error": None,
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    return len(ports)


def test_the_use_case_reads_results_and_writes_the_file_only_when_good(tmp_path):
    results = tmp_path / "fleet"
    results.mkdir()
    n = write_results(results, [("gpu01", ["leaf-a"] * 8), ("gpu02", ["leaf-a"] * 8)])
    assert n == 8
    out = tmp_path / "topology.conf"
    done = topology(TopologyRequest(str(results), out=str(out)))
    assert done.text == out.read_text() and "SwitchName=leaf-a Nodes=gpu[01-02]\n" in done.text
    assert done.doc["written"] == str(out) and done.doc["nodes"][0] == {
        "node": "gpu01",
        "leaves": ["leaf-a"],
        "problem": None,
    }
    write_results(results, [("gpu03", ["leaf-a"] * 7 + [None])])
    out.unlink()
    done = topology(TopologyRequest(str(results), out=str(out)))
    assert done.text is None and not out.exists() and done.doc["written"] is None
    assert done.topology.refused[0].startswith("gpu03: left out, rail 7 does not tell its switch (")


def test_switch_lldp_that_is_not_lldp_is_an_input_error(tmp_path):
    results = tmp_path / "fleet"
    results.mkdir()
    write_results(results, [("gpu01", ["leaf-a"] * 8)])
    bad = tmp_path / "switches"
    bad.mkdir()
    (bad / "leaf-a.json").write_text("{}")
    with pytest.raises(RocetuneError) as err:
        topology(TopologyRequest(str(results), switch_lldp=str(bad)))
    assert str(err.value) == f"--switch-lldp {bad / 'leaf-a.json'}: lldpctl -f json0 output: no top-level 'lldp' key"
