"""What a probe source declares about itself (`SOURCE = Source(...)` in its module of
rocetune.probe.sources): its name, what it reads, and which other sources' sections it takes.
The module's `probe(ctx, *sections)` does the reading: `ctx` is its ProbeContext (root, runner,
status), then one section per name in `needs`, in that order."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Tuple

from ..model.record import FrozenRecord


class Source(FrozenRecord):
    """name: its section of the Features and its entry in `sources`. reads: what it reads under
    the root (paths, commands). needs: the sources whose sections its probe takes, in that order.
    order: where it runs among the sources whose needs are met, lower first (the run's reads, and
    the root's warnings each source is given, keep one order from run to run). sysfs: it reads
    /sys, so on a root of recorded outputs alone it is not run and its status says why.
    optional: its section and status exist only where it gave a section or crashed (a tool absent
    on most hosts: their Features stay as they were). starts: commands the probe starts as it
    begins (a live runner runs them side by side). unread: keys set over the schema's empty
    section when the source gave nothing (an unread address list is not an empty one)."""

    __slots__ = ("name", "reads", "needs", "order", "sysfs", "optional", "starts", "unread")
    _fields = __slots__
    name: str
    reads: str
    needs: Tuple[str, ...]
    order: int
    sysfs: bool
    optional: bool
    starts: Tuple[Tuple[str, ...], ...]
    unread: Tuple[Tuple[str, Any], ...]

    def __init__(self, name: str, reads: str, needs: Sequence[str] = (), order: int = 100, sysfs: bool = False,
                 optional: bool = False, starts: Sequence[Sequence[str]] = (),
                 unread: Optional[Mapping[str, Any]] = None):
        self._set(name, reads, tuple(needs), order, sysfs, optional, tuple(tuple(a) for a in starts),
                  tuple(sorted((unread or {}).items())))
