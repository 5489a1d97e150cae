"""rocetune's catalog of NCCL environment variables (nccl/data/nccl_vars.json).

Built by tools/build_nccl_catalog.py from a public inventory of what one NCCL release reads.
Used by the plan's self-check, `rocetune lint` and `rocetune explain`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Set, Tuple

from ..pkgdata import package_json

_DATA = "data/nccl_vars.json"  # package data, read through the package's loader (a zip too)
_SUGGEST_CACHE = 1 << 16  # answers kept per catalog (distinct names), then forgotten at once


class Catalog:
    def __init__(self, doc: Dict[str, Any]):
        self.doc = doc
        self.variables: Dict[str, Dict[str, Any]] = doc["variables"]
        self.retired_names: Dict[str, Dict[str, Any]] = doc["retired"]
        self.plugin_prefixes: Dict[str, str] = doc["plugin_prefixes"]
        self.nccl_version: str = doc["source"].get("nccl_version") or "?"
        # the newest release whose added names the catalog holds (NEWER in tools/build_nccl_catalog.py)
        self.newest: str = doc["source"].get("newest") or self.nccl_version
        self._longest = max((len(v) for v in self.variables), default=0)
        self._index: Optional[Tuple[Dict[str, List[str]], Dict[str, Set[str]]]] = None
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
        # Each edit (insert, delete, substitute, swap) removes at most three of a name's distinct
        # two-letter pieces from the other name, so a catalog name within `limit` edits holds all
        # but 3*limit of them. A name with more pieces than that found in no catalog name at all
        # costs one set of its pieces and nothing more (most unknown names); the others are
        # measured only against the names holding one of their rarest pieces, within reach of
        # their length, holding enough of their pieces, and then with an edit distance that
        # stops past `limit`. Exact: the same answer as measuring every catalog name.
        if len(name) > self._longest + limit:
            return None
        index, pieces_of = self._bigram_index()
        pieces = bigrams(name)
        spare = 3 * limit - sum(1 for p in pieces if p not in index)
        if spare < 0:
            return None
        need = len(pieces) - 3 * limit
        if need > 0:
            present = sorted((p for p in pieces if p in index), key=lambda p: (len(index[p]), p))
            found: Set[str] = set()
            for p in present[:spare + 1]:
                found.update(index[p])
        else:  # too short for the pieces to tell: every name of a length within reach
            found = {c for c in self.variables if abs(len(c) - len(name)) <= limit}
        best: Optional[Tuple[int, str]] = None
        for cand in found:
            if abs(len(cand) - len(name)) > limit or (need > 0 and len(pieces & pieces_of[cand]) < need):
                continue
            d = edit_distance(name, cand, limit)
            if d <= limit and (best is None or (d, cand) < best):
                best = (d, cand)
        return None if best is None else (best[1], best[0])

    def _bigram_index(self) -> Tuple[Dict[str, List[str]], Dict[str, Set[str]]]:
        if self._index is None:
            index: Dict[str, List[str]] = {}
            pieces_of = {cand: bigrams(cand) for cand in self.variables}
            for cand, pieces in sorted(pieces_of.items()):
                for p in pieces:
                    index.setdefault(p, []).append(cand)
            self._index = (index, pieces_of)
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


def bigrams(word: str) -> Set[str]:
    """The distinct two-letter pieces of `word`."""
    return {word[i:i + 2] for i in range(len(word) - 1)}


def deletion_variants(word: str, most: int) -> Set[str]:
    """`word` with any 0 to `most` of its characters deleted."""
    out = {word}
    layer = {word}
    for _ in range(most):
        layer = {w[:i] + w[i + 1:] for w in layer for i in range(len(w))}
        out |= layer
    return out


def edit_distance(a: str, b: str, limit: Optional[int] = None) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours); with
    `limit`, any distance past it is given as limit + 1, and only the cells within `limit` of
    the diagonal are filled (an alignment that leaves them costs more than `limit`)."""
    if limit is None:
        limit = max(len(a), len(b))
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    big = limit + 1
    prev2: List[int] = []
    prev = [j if j <= limit else big for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        cur = [big] * (len(b) + 1)
        cur[0] = i if i <= limit else big
        for j in range(max(1, i - limit), min(len(b), i + limit) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v if v <= limit else big
        if min(cur) > limit:
            return big
        prev2, prev = prev, cur
    return prev[len(b)]
