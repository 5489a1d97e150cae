"""Data files shipped inside rocetune's packages (nccl/data, model/data), read through the
package's own loader, so they are found in an installed tree and in the packed agent's zip alike."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


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
