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
    loader = module.__spec__.loader
    path = os.path.join(os.path.dirname(module.__file__), *resource.split("/"))
    if not hasattr(loader, "get_data"):  # pragma: no cover - a broken installation
        raise FileNotFoundError(resource)
    return loader.get_data(path)


def package_json(package: str, resource: str) -> Any:
    return json.loads(package_data(package, resource).decode("utf-8"))
