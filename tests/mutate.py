"""Seeded mutations of real inputs, for the readers' fuzz test (tests/unit/test_fuzz_readers.py).

Every mutant depends only on its seed (`random.Random(seed)`), so a failure names the seed that
gives the same bytes again: `mutant_bytes(seed, data)` or `mutant_doc(seed, doc)`.

Bytes: bit flips, hostile bytes inserted (controls, ESC sequences, bidi overrides, invalid
UTF-8, NUL, CR), spans deleted, repeated or truncated, lines swapped, numbers replaced by huge,
negative, fractional or non-finite ones. Documents (JSON or YAML): a value replaced by one of
another type or a hostile one of the same type (NaN, 10**30, a deep list, a long string of
controls), keys dropped, added or renamed, list items dropped or repeated.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any, List, Tuple

HOSTILE_BYTES = [b"\x00", b"\n", b"\r", b"\r\n", b"\x1b[2K\r", b"\x1b]0;t\x07", b"\xff", b"\xc3", b"\xe2\x80",
                 "\u202e".encode(), "\u2028".encode(), "\x85".encode(), "é".encode(), b"\t", b" ", b"\\", b'"',
                 b"'", b"$(id)", b"`", b"=", b",", b":", b";", b"#", b"[", b"]", b"{", b"}", b"|", b"-", b"%",
                 b"99999999999999999999999999", b"-1", b"0x", b"NaN", b"1e999", b"\xef\xbb\xbf"]
HOSTILE_NUMBERS = [b"0", b"-1", b"4294967296", b"18446744073709551616", b"9" * 60, b"1.5", b"-0", b"NaN",
                   b"Infinity", b"1e309", b"0x7fffffff", b"00", b"+1", b""]
HOSTILE_STRINGS = ["", " ", "\x1b[31mred\x1b[0m", "a\nb", "a\rb", "\u202eevil", "x" * 3000, "\x00", "../../etc",
                   "$(touch /tmp/x)", "mlx5_0", "mlx5_0:1", "eth0", "=eth0", "^docker", "1", "-1", "NaN",
                   "2.21.5", "0000:01:00.0", "é\ufffd", "%h%p", "\\", '"']


def _deep(depth: int) -> Any:
    node: Any = []
    for _level in range(depth):
        node = [node]
    return node


HOSTILE_VALUES = [None, True, False, 0, -1, 1, 2 ** 31, 2 ** 64, 10 ** 30, 1.5, -0.0, float("nan"), float("inf"),
                  "", "x" * 3000, "\x1b[2K\u202e\n", [], {}, [None], {"": None}, [1, "a", None, [], {}],
                  {"a": {"b": [1, {"c": None}]}}, _deep(150), "NaN", "1", "-1"]


def mutant_bytes(seed: Any, data: bytes) -> bytes:
    rng = random.Random(seed)
    out = bytearray(data)
    for _step in range(rng.choice((1, 1, 2, 3))):
        out = bytearray(_OPS[rng.randrange(len(_OPS))](rng, bytes(out)))
    return bytes(out)


def _flip(rng: random.Random, b: bytes) -> bytes:
    if not b:
        return bytes([rng.randrange(256)])
    i = rng.randrange(len(b))
    return b[:i] + bytes([b[i] ^ (1 << rng.randrange(8))]) + b[i + 1:]


def _insert(rng: random.Random, b: bytes) -> bytes:
    i = rng.randrange(len(b) + 1)
    return b[:i] + rng.choice(HOSTILE_BYTES) * rng.choice((1, 1, 1, 2, 50)) + b[i:]


def _delete(rng: random.Random, b: bytes) -> bytes:
    if not b:
        return b
    i = rng.randrange(len(b))
    return b[:i] + b[i + rng.randrange(1, 1 + min(200, len(b) - i)):]


def _repeat(rng: random.Random, b: bytes) -> bytes:
    if not b:
        return b
    i = rng.randrange(len(b))
    span = b[i:i + rng.randrange(1, 120)]
    return b[:i] + span * rng.choice((2, 3, 40)) + b[i:]


def _truncate(rng: random.Random, b: bytes) -> bytes:
    return b[:rng.randrange(len(b) + 1)]


def _swap_lines(rng: random.Random, b: bytes) -> bytes:
    lines = b.split(b"\n")
    if len(lines) < 2:
        return b
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines)), lines[rng.randrange(len(lines))])
    return b"\n".join(lines)


_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")


def _number(rng: random.Random, b: bytes) -> bytes:
    found = list(_NUMBER.finditer(b))
    if not found:
        return _insert(rng, b)
    m = rng.choice(found)
    return b[:m.start()] + rng.choice(HOSTILE_NUMBERS) + b[m.end():]


_OPS = [_flip, _insert, _insert, _delete, _repeat, _truncate, _swap_lines, _number, _number]


# --- documents -----------------------------------------------------------------------------------

def _paths(doc: Any, limit: int = 20000) -> List[Tuple[Any, ...]]:
    """The path of every node (the document itself is ()), breadth first, at most `limit`."""
    out: List[Tuple[Any, ...]] = [()]
    queue: List[Tuple[Tuple[Any, ...], Any]] = [((), doc)]
    while queue and len(out) < limit:
        path, node = queue.pop(0)
        kids = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in kids:
            out.append(path + (k,))
            queue.append((path + (k,), v))
    return out


def _get(doc: Any, path: Tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _same_kind(rng: random.Random, value: Any) -> Any:
    """A hostile value of the type the field has: it passes a type check and meets the logic."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([0, -1, 1, value + 1, value * 1000, 2 ** 31, 2 ** 63, -(2 ** 63), 10 ** 18])
    if isinstance(value, float):
        return rng.choice([0.0, -1.0, 1e308, 1e-308, value * 1000, float("nan"), float("inf")])
    if isinstance(value, str):
        return rng.choice(HOSTILE_STRINGS + [value * 3, value[:1], value + "\n", value.upper()])
    if isinstance(value, list):
        return rng.choice([[], value[:1], value + value, value[::-1]])
    if isinstance(value, dict):
        return rng.choice([{}, dict(list(value.items())[:1])])
    return rng.choice(HOSTILE_VALUES)


def mutant_doc(seed: Any, doc: Any) -> Any:
    """A mutated deep copy of a JSON-able document."""
    rng = random.Random(seed)
    doc = copy.deepcopy(doc)
    for _step in range(rng.choice((1, 1, 2, 3))):
        paths = _paths(doc)
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.1:
                doc = rng.choice(HOSTILE_VALUES)
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        op = rng.random()
        if op < 0.45:
            parent[key] = _same_kind(rng, parent[key])
        elif op < 0.7:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
        elif isinstance(parent, dict):
            if op < 0.8:
                del parent[key]
            elif op < 0.9:
                parent[rng.choice(HOSTILE_STRINGS)] = parent.pop(key)
            else:
                parent[rng.choice(HOSTILE_STRINGS)] = copy.deepcopy(rng.choice(HOSTILE_VALUES))
        else:
            if op < 0.85:
                del parent[key]
            else:
                parent.insert(key, copy.deepcopy(parent[key]))
    return doc


def json_bytes(doc: Any) -> bytes:
    """What a hostile writer sends: Python's JSON, NaN and Infinity included."""
    return json.dumps(doc, allow_nan=True).encode("utf-8")


def yaml_bytes(doc: Any) -> bytes:
    import yaml

    try:
        return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8")
    except (yaml.YAMLError, RecursionError):
        return json_bytes(doc)  # YAML reads JSON too
