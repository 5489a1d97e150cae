"""Who tests whom, round by round, so that every host is busy at most once per round.

`pairwise(hosts)`: every pair meets exactly once, in N-1 rounds for an even N and N rounds for
an odd N -- the fewest possible, since a round holds at most N/2 disjoint pairs. The circle
method: the hosts sit on a circle with one held fixed (a bye takes a seat when N is odd); each
round pairs seat i with seat N-1-i, then every seat but the fixed one moves one place.
`ring(hosts)`: each host sends to the next, in two rounds (three for an odd N) so that no host
is in two transfers of one round.
`fabric(hosts, leaves)`: a ring, then pairs across leaves from the LLDP cabling -- every host,
rail and leaf-to-leaf path in a few rounds at any size; `coverage()` says what the pairs that ran
reached (below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypeVar

T = TypeVar("T")
Round = List[Tuple[T, T]]


def pairwise(hosts: Sequence[T]) -> List[Round]:
    """Rounds of disjoint pairs covering every pair of `hosts` once (in the order given)."""
    seats: List = list(hosts)
    if len(set(seats)) != len(seats):
        raise ValueError("hosts must be distinct")
    if len(seats) < 2:
        return []
    bye = object()
    if len(seats) % 2:
        seats.append(bye)
    n = len(seats)
    rounds: List[Round] = []
    for _ in range(n - 1):
        pairs = [(seats[i], seats[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not bye and b is not bye])
        seats = [seats[0], seats[-1]] + seats[1:-1]
    return rounds


def ring(hosts: Sequence[T]) -> List[Round]:
    """Rounds of (sender, receiver) pairs in which each host sends once to the next (the last to
    the first); within a round no host appears twice."""
    h = list(hosts)
    if len(set(h)) != len(h):
        raise ValueError("hosts must be distinct")
    n = len(h)
    if n < 2:
        return []
    if n == 2:
        return [[(h[0], h[1])], [(h[1], h[0])]]
    edges = [(h[i], h[(i + 1) % n]) for i in range(n)]
    even = n - n % 2
    rounds = [edges[0:even:2], edges[1:even:2]]
    if n % 2:
        rounds.append([edges[-1]])
    return rounds


# --- a schedule that fits a budget at scale ------------------------------------------------------
# `pairwise` needs N-1 rounds (999 at 1,000 hosts). What a pair test proves is a path: host a's
# rail i, its leaf, the fabric, host b's leaf and rail i. `fabric()` covers every host, every rail
# and every leaf-to-leaf path of every rail in a handful of rounds, in the order a budget should
# spend them:
#
# 1. a ring over the hosts sorted by their leaves (the switch each rail reaches, from LLDP): every
#    host sends and receives once on every rail, neighbours mostly share their leaves, and each
#    boundary between two groups of hosts is one leaf-to-leaf path;
# 2. pairs across leaves, chosen from the cabling: for every two leaves of a rail no ring edge
#    joined, one pair of hosts behind them -- each pair tests all rails at once, so one pair
#    covers a leaf pair on every rail -- the groups of hosts (same leaves) meeting as in a
#    round-robin tournament, each sending another of its hosts each time, packed into rounds
#    where each host is busy at most once: about (groups - 1) / hosts per group rounds.
Leaves = Tuple[Optional[str], ...]


@dataclass
class FabricPlan:
    rounds: List[Round]
    kinds: List[str]  # per round: "ring" or "cross-leaf"
    leaves: Dict[Any, Leaves]  # host -> the switch of each rail (None: not known)


def fabric(hosts: Sequence[T], leaves: Optional[Dict[T, Leaves]] = None) -> FabricPlan:
    """Ring rounds, then cross-leaf rounds, for `hosts` cabled as `leaves` says."""
    hs = list(hosts)
    if len(set(hs)) != len(hs):
        raise ValueError("hosts must be distinct")
    cabling: Dict[Any, Leaves] = {h: tuple((leaves or {}).get(h) or ()) for h in hs}
    order = sorted(hs, key=lambda h: (_sort_key(cabling[h]), hs.index(h)))
    rings = ring(order)
    covered = {pair for r in rings for a, b in r for pair in _leaf_pairs(cabling[a], cabling[b])}
    groups: Dict[Leaves, List[Any]] = {}
    for h in order:
        groups.setdefault(cabling[h], []).append(h)
    keys = list(groups)
    chosen: List[Tuple[Any, Any]] = []
    # The groups meet in the rounds of `pairwise` over the groups, where each group is in one pair
    # a round; in group-round t a group sends its host t (mod its size), so `size` group-rounds in
    # a row use distinct hosts and pack into one round of hosts.
    for t, meetings in enumerate(pairwise(list(range(len(keys))))):
        for x, y in meetings:
            gain = set(_leaf_pairs(keys[x], keys[y])) - covered
            if not gain:
                continue
            a = groups[keys[x]][t % len(groups[keys[x]])]
            b = groups[keys[y]][t % len(groups[keys[y]])]
            chosen.append((a, b))
            covered |= gain
    extra = _pack(chosen)
    return FabricPlan(rings + extra, ["ring"] * len(rings) + ["cross-leaf"] * len(extra), cabling)


def _sort_key(leaves: Leaves) -> Tuple:
    return tuple((s is None, s or "") for s in leaves)


def _leaf_pairs(a: Leaves, b: Leaves) -> List[Tuple[int, str, str]]:
    """(rail, leaf, leaf) for each rail both hosts reach a known switch on, the leaves sorted."""
    out: List[Tuple[int, str, str]] = []
    for rail, (x, y) in enumerate(zip(a, b)):
        if x is not None and y is not None:
            low, high = sorted((x, y))
            out.append((rail, low, high))
    return out


def _pack(pairs: List[Tuple[Any, Any]]) -> List[Round]:
    """First fit: each pair into the first round where neither host is busy yet."""
    rounds: List[Round] = []
    busy: List[set] = []
    for a, b in pairs:
        for i, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[i].append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def coverage(hosts: Sequence[Any], tested: Sequence[Tuple[Any, Any]], leaves: Optional[Dict[Any, Leaves]] = None,
             rails: Optional[Dict[Any, int]] = None) -> dict:
    """What the pairs that ran reached: hosts, rails of those hosts, leaf-to-leaf paths per rail
    (every two leaves of a rail, and each leaf to itself where it has two hosts), host pairs."""
    hs = list(hosts)
    cabling = {h: tuple((leaves or {}).get(h) or ()) for h in hs}
    seen = {h for p in tested for h in p}
    doc: dict = {"hosts": {"reached": sum(h in seen for h in hs), "of": len(hs)},
                 "host_pairs": {"reached": len({frozenset(p) for p in tested}), "of": len(hs) * (len(hs) - 1) // 2}}
    if rails is not None:
        doc["rails"] = {"reached": sum(rails.get(h, 0) for h in hs if h in seen),
                        "of": sum(rails.get(h, 0) for h in hs)}
    width = max((len(v) for v in cabling.values()), default=0)
    if not any(s for v in cabling.values() for s in v):
        doc["leaf_pairs"] = None  # no cabling known: leaf-to-leaf coverage cannot be stated
        return doc
    got = {pair for a, b in tested for pair in _leaf_pairs(cabling[a], cabling[b])}
    per_rail = []
    for rail in range(width):
        members: Dict[str, int] = {}
        for h in hs:
            leaf = cabling[h][rail] if rail < len(cabling[h]) else None
            if leaf is not None:
                members[leaf] = members.get(leaf, 0) + 1
        names = sorted(members)
        want = {(rail, x, y) for i, x in enumerate(names) for y in names[i + 1:]}
        want |= {(rail, x, x) for x in names if members[x] > 1}
        per_rail.append({"rail": rail, "leaves": len(names), "reached": len(want & got), "of": len(want),
                         "missing": [f"{x}-{y}" for _, x, y in sorted(want - got)][:20]})
    doc["leaf_pairs"] = per_rail
    return doc
