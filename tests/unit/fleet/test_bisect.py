"""Bisection of a slow collective, on simulated collectives whose pace is their slowest member's
(exactly what an all_reduce's bus bandwidth does): one slow node among 1,000 is found in about
2 log2(N) runs, two are both found, and slowness that needs the whole set is said as such."""

from __future__ import annotations

import math

import pytest

from rocetune.fleet.bisect import bisect


def collective(slow_nodes, rate=40.0, slow_rate=4.0):
    def measure(nodes):
        return slow_rate if set(nodes) & set(slow_nodes) else rate
    return measure


@pytest.mark.parametrize("n, culprit", [(3, 2), (3, 0), (16, 0), (17, 9), (17, 16), (1000, 613)])
def test_one_slow_node_is_found_in_about_two_log2_n_runs(n, culprit):
    nodes = [f"gpu{i:04d}" for i in range(n)]
    found = bisect(nodes, collective([nodes[culprit]]), slow=lambda v: v is None or v < 20)
    assert found["suspects"] == [nodes[culprit]] and found["why"] is None
    assert len(found["runs"]) <= 2 * math.ceil(math.log2(n)) and nodes[culprit] not in found["cleared"]


def test_two_nodes_alone_cannot_be_told_apart():
    found = bisect(["a", "b"], collective(["b"]), slow=lambda v: v < 20)
    assert found["suspects"] == ["a", "b"] and "a collective of two cannot tell" in found["why"]


def test_two_culprits_are_both_followed_and_a_failed_run_counts_as_slow():
    nodes = [f"n{i}" for i in range(64)]
    broken = {"n5"}

    def measure(group):
        if broken & set(group):
            return None  # the collective did not complete
        return collective(["n40"])(group)

    found = bisect(nodes, measure, slow=lambda v: v is None or v < 20)
    assert sorted(found["suspects"]) == ["n40", "n5"]


def test_slowness_that_needs_the_whole_set_is_not_pinned_on_a_node():
    nodes = [f"n{i}" for i in range(8)]
    found = bisect(nodes, lambda group: 4.0 if len(group) == 8 else 40.0, slow=lambda v: v < 20)
    assert found["suspects"] == nodes and "what they share" in found["why"]
