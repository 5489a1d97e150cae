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
