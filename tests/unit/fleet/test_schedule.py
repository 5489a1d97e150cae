"""The schedules, exhaustively for 1 to 40 hosts."""

from __future__ import annotations

import itertools

import pytest

from rocetune.fleet.schedule import pairwise, ring


@pytest.mark.parametrize("n", range(1, 41))
def test_pairwise_every_pair_once_in_the_fewest_rounds(n):
    hosts = [f"h{i}" for i in range(n)]
    rounds = pairwise(hosts)
    assert len(rounds) == (0 if n < 2 else n - 1 if n % 2 == 0 else n)
    met = [frozenset(p) for r in rounds for p in r]
    assert len(met) == len(set(met)) == n * (n - 1) // 2
    assert set(met) == {frozenset(p) for p in itertools.combinations(hosts, 2)}
    for r in rounds:
        busy = [h for p in r for h in p]
        assert len(busy) == len(set(busy))
        assert len(r) == n // 2  # every round full: only an odd host out sits one out


@pytest.mark.parametrize("n", range(1, 41))
def test_ring_each_host_sends_to_the_next_once(n):
    hosts = list(range(n))
    rounds = ring(hosts)
    edges = [e for r in rounds for e in r]
    want = [] if n < 2 else [(i, (i + 1) % n) for i in range(n)]
    assert sorted(edges) == sorted(want) and len(edges) == len(set(edges))
    for r in rounds:
        busy = [h for p in r for h in p]
        assert len(busy) == len(set(busy))
    assert len(rounds) == (0 if n < 2 else 2 if n % 2 == 0 else 3)


def test_duplicate_hosts_are_refused():
    with pytest.raises(ValueError):
        pairwise(["a", "b", "a"])
    with pytest.raises(ValueError):
        ring(["a", "a"])


# --- the fabric schedule -------------------------------------------------------------------------
from rocetune.fleet.schedule import coverage, fabric  # noqa: E402


def cabled(n, per_leaf, rails=8):
    """n hosts in scalable units of `per_leaf`, rail r of unit u on leaf su<u>-r<r>."""
    hosts = [f"gpu{i:04d}" for i in range(n)]
    return hosts, {h: tuple(f"su{i // per_leaf}-r{r}" for r in range(rails)) for i, h in enumerate(hosts)}


@pytest.mark.parametrize("n, per_leaf", [(2, 1), (5, 2), (64, 8), (100, 32), (1000, 32), (1000, 16)])
def test_fabric_covers_every_host_rail_and_leaf_pair_in_few_rounds(n, per_leaf):
    hosts, leaves = cabled(n, per_leaf)
    plan = fabric(hosts, leaves)
    for r in plan.rounds:
        busy = [h for p in r for h in p]
        assert len(busy) == len(set(busy))
    assert plan.kinds[:len(ring(hosts))] == ["ring"] * len(ring(hosts))
    cov = coverage(hosts, [p for r in plan.rounds for p in r], leaves, {h: 8 for h in hosts})
    assert cov["hosts"] == {"reached": n, "of": n} and cov["rails"] == {"reached": 8 * n, "of": 8 * n}
    assert all(r["reached"] == r["of"] and not r["missing"] for r in cov["leaf_pairs"]), cov["leaf_pairs"][0]
    # The ring's 2-3 rounds, then as many as the smallest group of hosts behind the same leaves
    # needs to meet every other group once (pairwise would take n - 1: 999 at 1,000 hosts).
    groups = -(-n // per_leaf)
    smallest = n - (groups - 1) * per_leaf
    assert len(plan.rounds) <= 3 + -(-(groups - 1) // smallest)


def test_a_ring_alone_misses_leaf_pairs_and_coverage_names_them():
    hosts, leaves = cabled(64, 8, rails=1)
    cov = coverage(hosts, [p for r in ring(hosts) for p in r], leaves)
    (rail,) = cov["leaf_pairs"]
    assert rail["leaves"] == 8 and rail["of"] == 8 * 7 // 2 + 8 and rail["reached"] == 8 + 8
    assert rail["missing"][0] == "su0-r0-su2-r0"


def test_without_cabling_the_fabric_schedule_is_a_ring_and_leaf_coverage_is_unknown():
    hosts = [f"h{i}" for i in range(10)]
    plan = fabric(hosts)
    assert plan.rounds == ring(hosts) and plan.kinds == ["ring", "ring"]
    assert coverage(hosts, [p for r in plan.rounds for p in r])["leaf_pairs"] is None
