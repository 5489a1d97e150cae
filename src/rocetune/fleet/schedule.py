"""Who tests whom, round by round, so that every host is busy at most once per round.

`pairwise(hosts)`: every pair meets exactly once, in N-1 rounds for an even N and N rounds for
an odd N -- the fewest possible, since a round holds at most N/2 disjoint pairs. The circle
method: the hosts sit on a circle with one held fixed (a bye takes a seat when N is odd); each
round pairs seat i with seat N-1-i, then every seat but the fixed one moves one place.
`ring(hosts)`: each host sends to the next, in two rounds (three for an odd N) so that no host
is in two transfers of one round.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple, TypeVar

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
