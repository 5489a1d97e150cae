"""Find the node that slows a collective down, by halving.

A collective across N nodes runs at the pace of its slowest member: one node with a bad link or a
throttled GPU makes every node's bus bandwidth low, and the figure alone cannot say which. Run the
same collective on each half of the nodes; the half that is still slow holds the culprit; repeat
in it. A half of one node is run with a node already cleared (a collective needs two). About
2 log2(N) runs find one slow node among N (20 at 1,000 nodes); where both halves are slow each is
followed (several culprits), and where neither is (the slowness needs the whole set: contention
in the fabric, not one node) that is said instead of guessing.

`measure(nodes)` runs the collective on those nodes and returns its bus bandwidth (GB/s), or None
when it did not complete (counted as slow: a node that breaks the collective is a culprit too);
`slow(value)` judges a figure.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

Measure = Callable[[List[str]], Optional[float]]


def bisect(nodes: Sequence[str], measure: Measure, slow: Callable[[Optional[float]], bool],
           max_runs: int = 64) -> Dict:
    """{"suspects": [...], "cleared": [...], "runs": [{"nodes", "busbw_gbs", "slow"}], "why"}."""
    runs: List[dict] = []
    cleared: List[str] = []

    def run(group: List[str]) -> bool:
        value = measure(list(group))
        bad = slow(value)
        runs.append({"nodes": list(group), "busbw_gbs": value, "slow": bad})
        if not bad:
            cleared.extend(n for n in group if n not in cleared)
        return bad

    suspects: List[str] = []
    pending = [list(nodes)]
    why = None
    while pending:
        group = pending.pop(0)
        if len(group) == 1:
            suspects.append(group[0])
            continue
        if len(runs) + 2 > max_runs:
            suspects.extend(group)
            why = f"stopped after {len(runs)} runs: the last groups are named whole"
            continue
        half = len(group) // 2
        halves = sorted([group[:half], group[half:]], key=len, reverse=True)  # a lone node last
        verdicts: List[Optional[bool]] = []
        for h in halves:
            if len(h) > 1:
                verdicts.append(run(h))
                continue
            # a lone node runs with a node already cleared, else with any node outside this group
            partner = next((c for c in cleared if c not in h), None) or \
                next((c for c in nodes if c not in group and c not in suspects), None)
            verdicts.append(run(h + [partner]) if partner is not None else None)
        if all(v is None for v in verdicts):  # two nodes, none cleared yet: one collective cannot tell
            suspects.extend(group)
            why = why or f"{' and '.join(group)}: a collective of two cannot tell which of them is slow"
            continue
        slow_halves = [h for h, bad in zip(halves, verdicts) if bad]
        if not slow_halves:
            lone = [h for h, v in zip(halves, verdicts) if v is None]
            if lone:  # the group is slow and the half that ran is not: the node that could not run alone
                suspects.extend(lone[0])
                continue
            why = (f"{len(group)} nodes together are slow, each half alone is not: the collective is slowed by "
                   "what they share (the fabric between them), not by one node")
            suspects.extend(group)
            continue
        pending.extend(slow_halves)
    return {"suspects": suspects, "cleared": sorted(set(cleared) - set(suspects)), "runs": runs, "why": why}
