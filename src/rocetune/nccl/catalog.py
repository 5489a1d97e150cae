"""rocetune's catalog of NCCL environment variables (nccl/data/nccl_vars.json).

Built by tools/build_nccl_catalog.py from a public inventory of what one NCCL release reads.
Used by the plan's self-check, `rocetune lint` and `rocetune explain`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Set, Tuple

from ..pkgdata import package_json

_DATA = "data/nccl_vars.json"  # package data, read through the package's loader (a zip too)
_MAX_SUGGEST_EDITS = 2  # a suggestion is at most this many edits away
_SUGGEST_CACHE = 1 << 16  # answers kept per catalog (distinct names), then forgotten at once


class Catalog:
    def __init__(self, doc: Dict[str, Any]):
        self.doc = doc
        self.variables: Dict[str, Dict[str, Any]] = doc["variables"]
        self.retired_names: Dict[str, Dict[str, Any]] = doc["retired"]
        self.plugin_prefixes: Dict[str, str] = doc["plugin_prefixes"]
        self.nccl_version: str = doc["source"].get("nccl_version") or "?"
        self._longest = max((len(v) for v in self.variables), default=0)
        self._index: Optional[Dict[str, List[str]]] = None
        self._suggested: Dict[str, Optional[Tuple[str, int]]] = {}

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
        """The closest real variable and its edit distance, when it is close enough to be a typo
        (1 edit for a name shorter than 10, else 2). The answer for a name is kept: a file may
        repeat one unknown name, or hold many thousands of them."""
        if name in self._suggested:
            return self._suggested[name]
        if len(self._suggested) >= _SUGGEST_CACHE:
            self._suggested.clear()
        got = self._suggested[name] = self._closest(name, 1 if len(name) < 10 else 2)
        return got

    def _closest(self, name: str, limit: int) -> Optional[Tuple[str, int]]:
        # Two names within `limit` edits (insert, delete, substitute, swap) both become one
        # string after at most `limit` deletions each: only catalog names that share one of
        # this name's deletion variants are measured, so a name costs the same whatever the
        # catalog holds, and a name too long to be close to any costs nothing.
        if len(name) > self._longest + limit:
            return None
        index = self._deletion_index()
        found: Set[str] = set()
        for variant in deletion_variants(name, limit):
            found.update(index.get(variant, ()))
        best: Optional[Tuple[int, str]] = None
        for cand in found:
            d = edit_distance(name, cand)
            if d <= limit and (best is None or (d, cand) < best):
                best = (d, cand)
        return None if best is None else (best[1], best[0])

    def _deletion_index(self) -> Dict[str, List[str]]:
        if self._index is None:
            index: Dict[str, List[str]] = {}
            for cand in self.variables:
                for variant in deletion_variants(cand, _MAX_SUGGEST_EDITS):
                    index.setdefault(variant, []).append(cand)
            self._index = index
        return self._index

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


def deletion_variants(word: str, most: int) -> Set[str]:
    """`word` with any 0 to `most` of its characters deleted."""
    out = {word}
    layer = {word}
    for _ in range(most):
        layer = {w[:i] + w[i + 1:] for w in layer for i in range(len(w))}
        out |= layer
    return out


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
