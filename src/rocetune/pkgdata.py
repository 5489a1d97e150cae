"""Data files shipped inside rocetune's packages (nccl/data, model/data), read through the
package's own loader, so they are found in an installed tree and in the packed agent's zip alike."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable, List, Set


def package_data(package: str, resource: str) -> bytes:
    """What pkgutil.get_data(package, resource) gives, without importing pkgutil on every run."""
    module = sys.modules[package]
    loader: Any = module.__spec__.loader if module.__spec__ else None
    if not hasattr(loader, "get_data") or not module.__file__:  # pragma: no cover - a broken installation
        raise FileNotFoundError(resource)
    path = os.path.join(os.path.dirname(module.__file__), *resource.split("/"))
    return loader.get_data(path)


def package_json(package: str, resource: str) -> Any:
    return json.loads(package_data(package, resource).decode("utf-8"))


def submodules(path: Iterable[str]) -> List[str]:
    """The names of the modules and packages in a package's `__path__`, sorted: what
    pkgutil.iter_modules lists, read with one directory listing. pkgutil imports inspect (a few
    milliseconds a run); it is asked only where the package is not a directory (a zip)."""
    names: Set[str] = set()
    for directory in path:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            import pkgutil

            names.update(info.name for info in pkgutil.iter_modules([directory]))
            continue
        for entry in entries:
            name, dot, ext = entry.name.partition(".")
            if not name.isidentifier():
                continue
            if ext == "py" and dot or not dot and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                names.add(name)
    return sorted(names - {"__init__"})
