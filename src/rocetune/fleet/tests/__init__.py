"""The tests `rocetune fleet validate` and `preflight` run, found by one registry.

A fleet test is one module of this package that defines `TEST = FleetTest(...)`: its name (what
`--tests` takes), its command-line options, and up to three steps, each optional:

- `node(ctx: HostContext) -> dict`: once per host, all hosts at once, before the pairs
  (NCCL on one node, a host's LLDP neighbours, GPU-memory loopback);
- `pair(ctx: PairContext) -> [dict]`: once per scheduled pair (fleet.schedule), each round's
  pairs at once; each dict is one test entry of the pair (`kind`, `status`, `path`, ...);
- `fleet(ctx: FleetContext) -> dict`: once, after the nodes and the pairs, over all of them
  (the cabling compared across hosts, a collective across the job's nodes).

Every result carries `status`: pass | fail | error | skipped | unjudged, and says `why` (or
`error`) when it is not pass. A step's own failure is its result, never the run's.

Adding a test is adding a module here (and its tests): `validate`, the CLI and the text and HTML
reports take it from the registry; the table of tests in docs/fleet.md is written by hand.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ...pkgdata import submodules

STATUSES = ("pass", "unjudged", "skipped", "fail", "error")
_RANK = {"pass": 0, "unjudged": 1, "skipped": 1, "fail": 2, "error": 3}


@dataclass
class HostContext:
    """One host that could be probed, as every step sees it."""

    name: str
    remote: Any  # validate.SshRemote or a stand-in: run(), start(), finish(), target, name
    endpoints: Any  # fleet.endpoints.HostEndpoints
    plan_env: Dict[str, str]
    features: dict
    results: Dict[str, dict] = field(default_factory=dict)  # this host's node results, by test
    plan: dict = field(default_factory=dict)  # the plan's `ranks` and `reports` (GPU pairing, GDR route)


@dataclass
class PairContext:
    a: HostContext
    b: HostContext
    round: int
    opts: Any  # validate.Options
    settings: Any  # this test's settings


@dataclass
class NodeContext:
    host: HostContext
    opts: Any
    settings: Any


@dataclass
class FleetContext:
    hosts: Dict[str, HostContext]  # the hosts that could be tested, in the run's order
    pairs: List[dict]  # every pair result so far
    down: List[str]  # hosts that could not be probed (or that preflight's doctor left out)
    opts: Any
    settings: Any


@dataclass(frozen=True)
class FleetTest:
    name: str
    summary: str  # one line: what it proves (--help, docs/fleet.md)
    order: int = 50  # position in a pair's tests and in the reports
    node: Optional[Callable[[NodeContext], dict]] = None
    pair: Optional[Callable[[PairContext], List[dict]]] = None
    fleet: Optional[Callable[[FleetContext], dict]] = None
    round_seconds: Callable[[Any], float] = lambda opts: 0.0  # what its pair step adds to a round, at most
    add_arguments: Optional[Callable[[Any], None]] = None  # (argument group) -> None
    settings: Optional[Callable[[argparse.Namespace], Any]] = None  # CLI args -> this test's settings
    defaults: Callable[[], Any] = lambda: None  # its settings when the caller gives none (a library call)
    node_row: Optional[Callable[[dict], List[str]]] = None  # a node result as text cells (figure, detail)
    fleet_lines: Optional[Callable[[dict], List[str]]] = None  # a fleet result as text lines
    needs_pairs: bool = False  # the run needs two hosts for it


# Keys a host's entry in the result already has: a node test's result sits beside them.
RESERVED = ("error", "notes", "doctor", "rdma", "socket", "plan_env")
_REGISTRY: Dict[str, FleetTest] = {}
_DISCOVERED = [False]


def register(test: FleetTest) -> FleetTest:
    if test.name in _REGISTRY and _REGISTRY[test.name] is not test:
        raise ValueError(f"fleet test {test.name} is registered twice")
    if not (test.node or test.pair or test.fleet):
        raise ValueError(f"fleet test {test.name} has no step")
    if test.node and test.name in RESERVED:
        raise ValueError(f"fleet test {test.name}: a node test cannot take a name a host's result uses")
    _REGISTRY[test.name] = test
    return test


def discover(force: bool = False) -> None:
    """Import every module of this package (its `TEST` registers it)."""
    if _DISCOVERED[0] and not force:
        return
    for name in submodules(__path__):
        if name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        test = getattr(module, "TEST", None)
        if isinstance(test, FleetTest):
            register(test)
    _DISCOVERED[0] = True


def all_tests() -> List[FleetTest]:
    discover()
    return sorted(_REGISTRY.values(), key=lambda t: (t.order, t.name))


def get(name: str) -> FleetTest:
    discover()
    return _REGISTRY[name]


def names() -> List[str]:
    return [t.name for t in all_tests()]


def selected(names_: Any) -> List[FleetTest]:
    """The registered tests named, in registry order."""
    wanted = set(names_)
    return [t for t in all_tests() if t.name in wanted]


def worst(statuses: Any) -> str:
    return max(statuses, key=lambda s: _RANK.get(s, 3), default="error")


def failed(status: Optional[str]) -> bool:
    return status in ("fail", "error")
