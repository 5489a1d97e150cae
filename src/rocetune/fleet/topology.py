"""Slurm's tree topology (topology.conf, topology/tree) from the fleet's LLDP cabling.

Each node's compute rails reach leaf switches (`rail.I.switch`, fleet.facts.rail_switches). Slurm's
tree wants every node under exactly one leaf switch: a node under two leaves is logged by slurmctld
as `Multiple leaf switches contain nodes: ...` (src/plugins/topology/tree/switch_record.c, Slurm
22.05 to 24.05) and kept anyway. On a rail-optimised fabric every node reaches one leaf per rail,
so the Slurm leaf is the *set* of leaves a node's rails reach: nodes that reach the same set are one
hop apart on every rail; nodes whose sets differ are not. A set of one switch keeps that switch's
name.

Above the leaves: the switches' own LLDP (each switch's `lldpctl -f json0`, lldpd on SONiC, Cumulus
or any Linux switch) names what each leaf's other ports reach; the leaf sets that reach the same
uplink switches are joined under them, level by level, until one switch holds every node. Where no
switch's LLDP is given, the operator may name one top switch (`top`); otherwise more than one leaf
set is refused, as slurmctld would log `TOPOLOGY: no switch can reach all nodes through its
descendants`.

Refused, with the reason, is every file slurmctld would warn about: a node whose rails do not all
tell their switch (it would be left out: `switches lack access to N nodes`), a node the scheduler
names without a result, a result for a node the scheduler does not name (`Invalid node name ... in
switch config`), and a name Slurm's hostlist syntax cannot carry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..model.vocab import natural_key

# What Slurm's configuration and hostlist syntax carry as a name as it is: no brackets, commas,
# spaces, '=' or '#'. A switch name LLDP gives is a node's (or a switch's) word: held to it.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+:-]{0,127}$")
_RAIL = re.compile(r"^rail\.(\d+)\.switch$")
MAX_LEVELS = 16  # slurmctld: `Switch configuration is not a tree` beyond 20 levels
MAX_JOINED_NAME = 64  # a leaf set's name longer than this is numbered instead (leafset1 ...)


@dataclass(frozen=True)
class Placement:
    host: str
    leaves: Tuple[str, ...] = ()  # the switches the node's rails reach, sorted; () when unknown
    rails: Tuple[str, ...] = ()  # the switch of each rail, in rail order
    problem: Optional[str] = None  # why the node cannot be placed


@dataclass
class Switch:
    name: str
    level: int  # 0: a leaf (holds nodes)
    physical: Tuple[str, ...]  # the real switches it stands for
    nodes: List[str] = field(default_factory=list)
    children: List[str] = field(default_factory=list)


@dataclass
class Topology:
    switches: List[Switch]  # leaves first, then each level up; the top last
    placements: List[Placement]
    refused: List[str]  # why no file is written; empty when the topology is good
    notes: List[str]  # true of the fabric, not a reason to refuse (crossed rails)

    @property
    def ok(self) -> bool:
        return not self.refused


def place(host: str, facts: Mapping[str, object], error: Optional[str] = None) -> Placement:
    """Where one node stands: the leaf switches its rails reach, from its `rail.I.switch` facts
    (objects with value, known and detail: fleet.facts.Fact)."""
    if error:
        return Placement(host, problem=f"no usable result ({error})")
    rails = sorted(
        ((int(m.group(1)), fact) for key, fact in facts.items() if (m := _RAIL.match(key))), key=lambda r: r[0]
    )
    if not rails:
        return Placement(host, problem="its result has no LLDP reading (lldpd on the node, `lldpctl` installed)")
    switches: List[str] = []
    for i, fact in rails:
        value = getattr(fact, "value", None)
        if not getattr(fact, "known", False) or not isinstance(value, str) or not value:
            detail = getattr(fact, "detail", None) or "no LLDP neighbour"
            return Placement(host, problem=f"rail {i} does not tell its switch ({detail})")
        switches.append(value)
    return Placement(host, tuple(sorted(set(switches), key=natural_key)), tuple(switches))


def build(
    placements: Sequence[Placement],
    nodes: Optional[Sequence[str]] = None,
    uplinks: Optional[Mapping[str, Iterable[str]]] = None,
    top: Optional[str] = None,
) -> Topology:
    """The tree, or the reasons it is refused. `nodes`: the scheduler's node names (every one
    must be placed, and no other); `uplinks`: {switch: the switches its LLDP hears}; `top`: the
    name of one switch the operator declares above every leaf set (when no uplinks tell)."""
    refused: List[str] = []
    notes: List[str] = []
    placed = [p for p in placements if p.problem is None]
    for p in placements:
        if p.problem is not None:
            refused.append(f"{p.host}: left out, {p.problem}")
        elif not NAME.match(p.host):
            refused.append(f"{p.host!r}: not a name Slurm's node lists can carry")
        for s in p.leaves:
            if not NAME.match(s):
                refused.append(f"{p.host}: its rails reach the switch {s!r}, not a name Slurm's lists can carry")
    if nodes is not None:
        have = {p.host for p in placements}
        missing = [n for n in nodes if n not in have]
        extra = sorted(have - set(nodes), key=natural_key)
        if missing:
            refused.append(f"no result for {len(missing)} of the scheduler's nodes: {_some(missing)}")
        if extra:
            refused.append(f"{len(extra)} result(s) for nodes the scheduler does not name: {_some(extra)}")
    notes += _crossed(placed)
    leaves = _leaf_sets(placed)
    switches = list(leaves)
    if len(leaves) > 1:
        refused += _levels(switches, uplinks or {}, top)
    elif top:
        refused.append(f"--top {top}: every node is under one leaf set already; nothing to join")
    if top and not NAME.match(top):
        refused.append(f"--top {top!r}: not a name Slurm's lists can carry")
    if not placed and not refused:
        refused.append("no node could be placed")
    return Topology(switches, list(placements), refused, notes)


def _leaf_sets(placed: Sequence[Placement]) -> List[Switch]:
    by_set: Dict[Tuple[str, ...], List[str]] = {}
    for p in placed:
        by_set.setdefault(p.leaves, []).append(p.host)
    groups = sorted(by_set.items(), key=lambda kv: natural_key(min(kv[1], key=natural_key)))
    out = []
    for n, (leaves, hosts) in enumerate(groups, 1):
        out.append(Switch(_set_name(leaves, n), 0, leaves, nodes=sorted(hosts, key=natural_key)))
    _unique(out)
    return out


def _set_name(physical: Tuple[str, ...], n: int, kind: str = "leafset") -> str:
    joined = "+".join(physical)
    return joined if len(joined) <= MAX_JOINED_NAME else f"{kind}{n}"


def _unique(switches: List[Switch]) -> None:
    seen: Set[str] = set()
    for s in switches:
        while s.name in seen:
            s.name += "_"
        seen.add(s.name)


def _levels(switches: List[Switch], uplinks: Mapping[str, Iterable[str]], top: Optional[str]) -> List[str]:
    """Join the leaf sets upward (appending the switches to `switches`); the reasons it cannot."""
    current = [s for s in switches if s.level == 0]
    below: Set[str] = {x for s in current for x in s.physical}
    level = 0
    while len(current) > 1 and uplinks:
        level += 1
        if level > MAX_LEVELS:
            return [f"the switches' LLDP gives no single top within {MAX_LEVELS} levels"]
        ups: Dict[str, FrozenSet[str]] = {}
        for s in current:
            ups[s.name] = frozenset(u for p in s.physical for u in uplinks.get(p, ()) if u not in below)
        lacking = [s.name for s in current if not ups[s.name]]
        if lacking:
            if top:
                break
            return [
                f"no switch above {_some(lacking)} in the switches' LLDP, so no switch reaches every node "
                "(slurmctld: `no switch can reach all nodes`)"
            ]
        by_up: Dict[FrozenSet[str], List[Switch]] = {}
        for s in current:
            by_up.setdefault(ups[s.name], []).append(s)
        bad = sorted({u for up in by_up for u in up if not NAME.match(u)})
        if bad:
            return [f"the switches' LLDP names {bad[0]!r}, not a name Slurm's lists can carry"]
        nxt = []
        for n, (up, kids) in enumerate(by_up.items(), 1):
            physical = tuple(sorted(up, key=natural_key))
            nxt.append(
                Switch(_set_name(physical, n, f"level{level}set"), level, physical, children=[k.name for k in kids])
            )
        below |= {u for up in by_up for u in up}
        taken = {s.name for s in switches}
        for s in nxt:
            while s.name in taken:
                s.name += "_"
            taken.add(s.name)
        switches += nxt
        current = nxt
    if len(current) > 1:
        if not top:
            names = _some([s.name for s in current])
            return [
                f"{len(current)} switch sets ({names}) and nothing above them: no switch reaches every node "
                "(slurmctld: `no switch can reach all nodes`); give the switches' LLDP (--switch-lldp) or "
                "name the top switch (--top)"
            ]
        if top in {s.name for s in switches}:
            return [f"--top {top}: a switch of the tree already has that name"]
        switches.append(Switch(top, current[0].level + 1, (top,), children=[s.name for s in current]))
    return []


def _crossed(placed: Sequence[Placement]) -> List[str]:
    """Nodes whose rail i reaches another switch than most nodes' rail i with the same leaves:
    Slurm's placement is right (the same leaves), the cabling is not (fleet report names it)."""
    by_set: Dict[Tuple[str, ...], List[Placement]] = {}
    for p in placed:
        by_set.setdefault(p.leaves, []).append(p)
    notes = []
    for group in by_set.values():
        counts: Dict[Tuple[str, ...], int] = {}
        for p in group:
            counts[p.rails] = counts.get(p.rails, 0) + 1
        usual = max(counts, key=lambda rails: counts[rails])  # the first most common, in node order
        if counts[usual] * 2 <= len(group):
            continue
        for p in group:
            if p.rails != usual:
                odd = ", ".join(f"rail {i} -> {s}" for i, (s, u) in enumerate(zip(p.rails, usual)) if s != u)
                notes.append(
                    f"{p.host}: rails crossed ({odd}); the leaf set is the same, so the topology holds "
                    "(`fleet report` and `fleet validate --tests lldp` name the cables)"
                )
    return notes


def _some(names: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def uplinks_from_lldp(neighbours_by_switch: Mapping[str, Mapping[str, List[dict]]]) -> Dict[str, Set[str]]:
    """{switch: the other switches its ports hear}: each switch's LLDP neighbours (the parsed
    `lldpctl -f json0` of that switch, {interface: [neighbour]}), kept where the neighbour is
    itself one of the switches given: a host's LLDP name (its own hostname, perhaps with a domain)
    is never taken for a switch."""
    known = set(neighbours_by_switch)
    out: Dict[str, Set[str]] = {}
    for switch, interfaces in neighbours_by_switch.items():
        heard = out.setdefault(switch, set())
        for neighbours in interfaces.values():
            for n in neighbours:
                name = n.get("chassis")
                if name in known and name != switch:
                    heard.add(name)
    return out
