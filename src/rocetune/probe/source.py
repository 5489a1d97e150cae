"""What a probe source declares about itself (`SOURCE = Source(...)` in its module of
rocetune.probe.sources): its name, what it reads, and which other sources' sections it takes.
The module's `probe(ctx, *sections)` does the reading: `ctx` is its ProbeContext (root, runner,
status), then one section per name in `needs`, in that order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Sequence, Tuple


@dataclass(frozen=True)
class Source:
    name: str  # its section of the Features, and its entry in `sources`
    reads: str  # what it reads under the root (paths, commands): said in its docs and errors
    needs: Tuple[str, ...] = ()  # sources whose sections its probe takes, in that order
    # Where it runs among the sources whose needs are met, lower first: the run's reads, and the
    # root's warnings each source is given, keep one order from run to run.
    order: int = 100
    # It reads /sys: on a root of recorded outputs alone it is not run, and its status says why.
    sysfs: bool = False
    # Its section and status exist only where it gave a section or crashed (a tool that is
    # absent on most hosts: the Features of those hosts stay as they were).
    optional: bool = False
    # Commands the probe starts as it begins (a live runner runs them side by side).
    starts: Tuple[Tuple[str, ...], ...] = ()
    # Set in the section when the source gave nothing, over the schema's empty form (e.g. an
    # unread address list is not an empty one).
    unread: Dict[str, Any] = field(default_factory=dict)


def argvs(*commands: Sequence[str]) -> Tuple[Tuple[str, ...], ...]:
    """`starts=` from argv lists."""
    return tuple(tuple(c) for c in commands)
