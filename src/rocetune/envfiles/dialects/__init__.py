"""The registry of env dialects: every module of this package that declares a DIALECT
(base.Dialect) is one, found when the package is first asked. Everything that writes, reads,
detects, lists or lints a dialect asks here, so a new dialect is one module (and its tests).

A file's dialect by name: the first dialect, by precedence, with a file pattern matching the
lower-cased base name. Writing takes that dialect when it writes, else the fallback (sh);
reading takes the content's word first (envfiles.detect).
"""

from __future__ import annotations

import importlib
from fnmatch import fnmatchcase
from typing import Dict, Optional, Tuple

from ...errors import ExitCode, RocetuneError
from ...pkgdata import submodules
from .base import Dialect

_REGISTRY: Dict[str, Dialect] = {}


def _load() -> Dict[str, Dialect]:
    if not _REGISTRY:
        found = []
        for name in submodules(__path__):
            module = importlib.import_module(f"{__name__}.{name}")
            dialect = getattr(module, "DIALECT", None)
            if isinstance(dialect, Dialect):
                found.append(dialect)
        loaded: Dict[str, Dialect] = {}
        for dialect in sorted(found, key=lambda d: d.listed):
            if dialect.name in loaded:
                raise ValueError(f"two env dialects are named {dialect.name!r}")
            loaded[dialect.name] = dialect
        _REGISTRY.update(loaded)  # at once: a reader never sees half the dialects
    return _REGISTRY


def all_dialects() -> Tuple[Dialect, ...]:
    """Every dialect, in the order --format lists them."""
    return tuple(_load().values())


def names(written: bool = False) -> Tuple[str, ...]:
    """The dialects' names (`written`: only those rocetune writes), in --format order."""
    return tuple(d.name for d in all_dialects() if d.writes or not written)


def get(name: str) -> Dialect:
    dialect = _load().get(name)
    if dialect is None:
        raise RocetuneError(f"unknown env format {name!r}", hint="formats: " + ", ".join(names(True)),
                            code=ExitCode.USAGE)
    return dialect


def by_precedence() -> Tuple[Dialect, ...]:
    return tuple(sorted(all_dialects(), key=lambda d: d.precedence))


def fallback() -> Dialect:
    return next(d for d in all_dialects() if d.fallback)


def for_file_name(path: str, written: bool = False) -> Optional[Dialect]:
    """The dialect a file's name claims (`written`: of those rocetune writes), or None."""
    base = path.rsplit("/", 1)[-1].lower()
    for dialect in by_precedence():
        if (dialect.writes or not written) and any(fnmatchcase(base, p) for p in dialect.file_patterns):
            return dialect
    return None


def for_output(path: Optional[str]) -> str:
    """The dialect to write a file of this name in (none: the fallback's)."""
    dialect = for_file_name(path, written=True) if path else None
    return (dialect or fallback()).name
