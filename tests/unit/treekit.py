"""Tiny helper to lay out a host root in a temp dir for unit tests."""

from __future__ import annotations

import os
from typing import Dict, Union


class Link(str):
    """A relative symlink target."""


class Dir(str):
    """An empty directory."""


def make(root, tree: Dict[str, Union[str, bytes, Link, Dir]]) -> str:
    root = str(root)
    for rel, value in sorted(tree.items()):
        path = os.path.join(root, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(value, Link):
            os.symlink(value, path)
        elif isinstance(value, Dir):
            os.makedirs(path, exist_ok=True)
        elif isinstance(value, bytes):
            with open(path, "wb") as fh:
                fh.write(value)
        else:
            with open(path, "w") as fh:
                fh.write(value)
    return root
