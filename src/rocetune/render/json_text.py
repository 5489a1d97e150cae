"""The JSON envelope as text, exactly as cli.result.dumps writes it, with the GPU matrix's link
table written row by row.

On a host with hundreds of NICs `nvidia-smi topo -m` is a 530-column matrix: 280k cells, 4.8 of
the 6 MB a `probe --json` prints. json's encoder sorts and escapes every cell; the table has a
few hundred distinct strings, so each is encoded once here and the rows are joined from those.
The text is the same, byte for byte: anything that is not a dict of dicts of strings is left to
json.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from ..cli.result import dumps
from ..text import json_text

# Below this many rows the table is a small part of the document: json writes it.
MIN_ROWS = 64


def envelope_text(envelope: Any) -> str:
    """cli.result.dumps(envelope), the matrix links of data.features written row by row."""
    matrix = _matrix_of(envelope)
    links = matrix.get("links") if matrix is not None else None
    if not isinstance(links, dict) or len(links) < MIN_ROWS:
        return dumps(envelope)
    table = links_text(links)
    if table is None:
        return dumps(envelope)
    # A string no host can print: a NUL and 16 random bytes. Put where the table goes, and
    # replaced by it in the text once it is written.
    token = "\x00links-" + os.urandom(16).hex()
    matrix["links"] = token
    try:
        text = dumps(envelope)
    finally:
        matrix["links"] = links
    marker = json.dumps(token, ensure_ascii=False)
    if text.count(marker) != 1:
        return dumps(envelope)
    return json_text(text.replace(marker, table, 1))


def _matrix_of(envelope: Any) -> Optional[dict]:
    node = envelope
    for key in ("data", "features", "gpu", "matrix"):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node if isinstance(node, dict) else None


def links_text(links: Dict[Any, Any]) -> Optional[str]:
    """json.dumps(links, sort_keys=True, ensure_ascii=False) for a dict of dicts whose keys and
    values are strings; None for anything else (json decides what that gives)."""
    keys_seen: Dict[str, str] = {}  # key -> ', "key": ' (the first cell of a row drops the ", ")
    values_seen: Dict[str, str] = {}  # value -> '"value"'
    rows: List[str] = []
    try:
        labels = sorted(links)
    except TypeError:  # keys of mixed types
        return None
    for label in labels:
        row = links[label]
        if type(label) is not str or type(row) is not dict:
            return None
        try:
            cols = sorted(row)
        except TypeError:
            return None
        values = list(map(row.__getitem__, cols))
        # key, value, key, value ... in one list: one join per row, no string per cell
        parts: List[Optional[str]] = [None] * (2 * len(cols))
        try:
            parts[0::2] = map(keys_seen.__getitem__, cols)
            parts[1::2] = map(values_seen.__getitem__, values)
        except (KeyError, TypeError):
            if not _learn(cols, values, keys_seen, values_seen):
                return None
            parts[0::2] = map(keys_seen.__getitem__, cols)
            parts[1::2] = map(values_seen.__getitem__, values)
        rows.append(json.dumps(label, ensure_ascii=False) + ": {" + "".join(parts)[2:] + "}")
    return "{" + ", ".join(rows) + "}"


def _learn(cols: List[Any], values: List[Any], keys_seen: Dict[str, str], values_seen: Dict[str, str]) -> bool:
    """Encode the keys and values of one row not seen before; False when one is not a str."""
    for k in cols:
        if type(k) is not str:
            return False
        if k not in keys_seen:
            keys_seen[k] = ", " + json.dumps(k, ensure_ascii=False) + ": "
    for v in values:
        if type(v) is not str:
            return False
        if v not in values_seen:
            values_seen[v] = json.dumps(v, ensure_ascii=False)
    return True
