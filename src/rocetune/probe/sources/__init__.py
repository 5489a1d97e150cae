"""Sources: one per subsystem of the host, each failing alone (ok, reason, warnings).

A source is a module of this package that declares `SOURCE = Source(...)` (rocetune.probe.source)
and defines `probe(ctx, *sections)`. This registry finds the modules and orders them so that
each runs after the sources it needs; the probe runs them in that order. Adding a source is one
new module here (its section described in model/data/features.schema.json) and its tests.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, Iterable, List, Tuple

from ...errors import ExitCode, RocetuneError
from ...pkgdata import submodules
from ..source import Source

# Modules of this package that are not sources: readers the sources share (cpu_identity for
# host, nccl_libs for kernel) and doctor's counter snapshot (nic_counters, read twice a window).
HELPERS = ("cpu_identity", "nccl_libs", "nic_counters")
_FOUND: List[Tuple[Source, ModuleType]] = []


class SourceRegistryError(RocetuneError):
    """The sources cannot be found or ordered (a bug of the package): said in one line, exit 70."""

    def __init__(self, message: str):
        super().__init__(f"probe sources: {message}", code=ExitCode.INTERNAL)


def registry() -> List[Tuple[Source, ModuleType]]:
    """Every source with its module, in run order; the modules are imported once."""
    if not _FOUND:
        modules: Dict[str, ModuleType] = {}
        for name in submodules(__path__):
            if name.startswith("_") or name in HELPERS:
                continue
            module = importlib.import_module(f"{__name__}.{name}")
            source = getattr(module, "SOURCE", None)
            if not isinstance(source, Source) or not callable(getattr(module, "probe", None)):
                raise SourceRegistryError(f"{module.__name__} declares no SOURCE = Source(...) and probe()")
            if source.name in modules:
                raise SourceRegistryError(f"{source.name} is declared by {modules[source.name].__name__} "
                                       f"and {module.__name__}")
            modules[source.name] = module
        _FOUND.extend((s, modules[s.name]) for s in ordered(m.SOURCE for m in modules.values()))
    return _FOUND


def forget() -> None:
    """Look the modules up again on the next call (tests that add a source module)."""
    _FOUND.clear()


def ordered(sources: Iterable[Source]) -> List[Source]:
    """Each source after every source it needs; among those ready, by (order, name). An unknown
    need or a cycle is a SourceRegistryError naming the sources."""
    by_name = {s.name: s for s in sources}
    for s in by_name.values():
        unknown = [n for n in s.needs if n not in by_name]
        if unknown:
            raise SourceRegistryError(f"{s.name} needs {', '.join(unknown)}, which no source declares "
                                   f"(sources: {', '.join(sorted(by_name))})")
    done: List[Source] = []
    left = dict(by_name)
    while left:
        ready = [s for s in left.values() if all(n not in left for n in s.needs)]
        if not ready:
            raise SourceRegistryError(f"a cycle of needs: {_cycle(left)}")
        first = min(ready, key=lambda s: (s.order, s.name))
        done.append(first)
        del left[first.name]
    return done


def _cycle(left: Dict[str, Source]) -> str:
    """One cycle among sources none of which is ready, as `a -> b -> a`."""
    path: List[str] = []
    name = min(left)
    while name not in path:
        path.append(name)
        name = min(n for n in left[name].needs if n in left)
    return " -> ".join(path[path.index(name):] + [name])
