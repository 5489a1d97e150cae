"""rocetune's catalog of NCCL environment variables (nccl/data/nccl_vars.json).

Built by tools/build_nccl_catalog.py from a public inventory of what one NCCL release reads.
Used by the plan's self-check, `rocetune lint` and `rocetune explain`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from ..pkgdata import package_json

_DATA = "data/nccl_vars.json"  # package data, read through the package's loader (a zip too)


class Catalog:
    def __init__(self, doc: Dict[str, Any]):
        self.doc = doc
        self.variables: Dict[str, Dict[str, Any]] = doc["variables"]
        self.retired_names: Dict[str, Dict[str, Any]] = doc["retired"]
        self.plugin_prefixes: Dict[str, str] = doc["plugin_prefixes"]
        self.nccl_version: str = doc["source"].get("nccl_version") or "?"

    def known(self, name: str) -> bool:
        return name in self.variables

    def info(self, name: str) -> Optional[Dict[str, Any]]:
        return self.variables.get(name)

    def retired(self, name: str) -> Optional[Dict[str, Any]]:
        return self.retired_names.get(name)

    def plugin(self, name: str) -> Optional[str]:
        for prefix, what in sorted(self.plugin_prefixes.items()):
            if name.startswith(prefix):
                return what
        return None

    def suggest(self, name: str) -> Optional[Tuple[str, int]]:
        """The closest real variable and its edit distance, when it is close enough to be a typo."""
        best: Optional[Tuple[int, str]] = None
        for cand in self.variables:
            if abs(len(cand) - len(name)) > 2:
                continue
            d = edit_distance(name, cand)
            if best is None or (d, cand) < best:
                best = (d, cand)
        if best is None:
            return None
        limit = 1 if len(name) < 10 else 2
        return (best[1], best[0]) if best[0] <= limit else None

    def describe_unknown(self, name: str) -> str:
        r = self.retired(name)
        if r:
            repl = f"; use {r['replacement']}" if r.get("replacement") else ""
            return f"{r['note']}{repl}"
        s = self.suggest(name)
        if s:
            return f"did you mean {s[0]}?"
        p = self.plugin(name)
        if p:
            return f"read by the {p}, not by libnccl"
        return "not in rocetune's catalog"


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    return Catalog(package_json(__package__, _DATA))


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours)."""
    prev2: List[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]
