"""JSON read with the limits a hostile file meets, each turned into one ValueError.

Python's reader raises RecursionError for a document nested past the interpreter's stack, and a
document just inside it passes that depth on to every reader after it; an integer of more than
4300 digits raises a ValueError of its own. `load_json` refuses both with a JsonError (a
ValueError, so a caller's `except ValueError` names the file as it does for any bad JSON), and
refuses a document nested deeper than MAX_DEPTH: none of rocetune's goes past a dozen levels.

Parsed, JSON takes up to 70 times its size in memory (a list of empty objects), so the values
of a document are counted before any is built, and one of more than MAX_VALUES is refused: the
largest document rocetune itself writes (`doctor --json` of a 522-device host: 6.2 MB, 363,000
values) is well inside it, a hostile one costs at most about 280 MiB (a million one-key objects;
bench/hostile_node_output.py). NaN and Infinity, which
Python's reader takes and JSON does not have, are refused.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

MAX_DEPTH = 100
MAX_VALUES = 1_000_000
# What a document rocetune reads may honestly weigh: a 522-device host's doctor --json is 6.2 MB.
MAX_DOCUMENT_BYTES = 16 << 20


class JsonError(ValueError):
    """The text is not JSON this reader accepts; the message says why."""


def load_json(text: Union[str, bytes], max_values: int = MAX_VALUES, strict: bool = True) -> Any:
    """`strict=False` takes control characters inside strings (a producer that writes them raw)."""
    if count_values(text) > max_values:
        raise JsonError(f"more than {max_values} values: larger than any document rocetune reads")
    try:
        doc = json.loads(text, parse_constant=_no_constant, strict=strict)
    except RecursionError:
        raise JsonError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, an integer past the digit limit, bad UTF-8
        raise JsonError(str(exc)) from None
    if text_depth(text) > MAX_DEPTH:
        raise JsonError(f"nested deeper than {MAX_DEPTH} levels")
    return doc


def count_values(text: Union[str, bytes]) -> int:
    """An upper bound of the values in a JSON text, without parsing it: every value after the
    first follows a comma or opens a list or object (commas inside strings count too)."""
    if isinstance(text, str):
        return text.count(",") + text.count("[") + text.count("{") + 1
    return text.count(b",") + text.count(b"[") + text.count(b"{") + 1


def _no_constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON number")


# What text_depth keeps of a JSON text: brackets and quotes (UTF-8 never puts these bytes
# inside a multi-byte character).
_KEEP = b'[]{}"'
_DELETE = bytes(c for c in range(256) if c not in _KEEP)
_PAIR = re.compile(rb"\[\]|\{\}")


def text_depth(text: Union[str, bytes], limit: int = MAX_DEPTH) -> int:
    """How deep the lists and objects of a valid JSON text nest (at most `limit` + 1: deeper is
    not measured further). The same number `check_depth` finds on the parsed document, read off
    the text with C-speed passes instead of a Python step per value (a 95 KB doctor result:
    under half a millisecond, about what json.loads takes): the escapes that could hide a quote
    go (`\\\\` first, then `\\"`, left to right as JSON reads them), every byte but brackets and
    quotes goes, the strings go (with any bracket in them), and each pass then removes the
    innermost `[]` and `{}` pairs.
    JSON has no shared or self-containing values, so the depth is all there is to measure."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # quotes now pair up exactly: the text between an odd quote and the next is a string's
    brackets = b"".join(data.translate(None, _DELETE).split(b'"')[0::2])
    depth = 0
    while brackets and depth <= limit:
        brackets, removed = _PAIR.subn(b"", brackets)
        if not removed:  # not balanced: not valid JSON, which json.loads refused already
            break
        depth += 1
    return depth


def check_depth(doc: Any, limit: int = MAX_DEPTH, max_nodes: Optional[int] = None) -> None:
    """JsonError when lists and mappings in `doc` nest deeper than `limit`, when one contains
    itself, or (with `max_nodes`) when it holds more than `max_nodes` values once each shared
    one is counted where it is used (YAML aliases). Walked without recursion and each shared
    value once, so any depth and any sharing is measured in time linear in the document."""
    measured: Dict[int, Tuple[int, int]] = {}  # id -> (depth, values) of a finished container
    open_ids = set()  # containers on the path being walked: one met again contains itself
    stack: List[Tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        kids = [c for c in _children(node) if isinstance(c, (dict, list))]
        if finished:
            open_ids.discard(key)
            depth = 1 + max((measured[id(c)][0] for c in kids), default=0)
            values = 1 + len(node) + sum(measured[id(c)][1] for c in kids)
            if depth > limit:
                raise JsonError(f"nested deeper than {limit} levels")
            if max_nodes is not None and values > max_nodes:
                raise JsonError(f"more than {max_nodes} values once its aliases are expanded")
            measured[key] = (depth, values)
            continue
        if key in measured or not isinstance(node, (dict, list)):
            continue
        if len(open_ids) >= limit:
            raise JsonError(f"nested deeper than {limit} levels")
        open_ids.add(key)
        stack.append((node, True))
        for child in kids:
            if id(child) in open_ids:
                raise JsonError("a list or mapping that contains itself")
            if id(child) not in measured:
                stack.append((child, False))


def _children(node: Any) -> Iterable[Any]:
    if isinstance(node, dict):
        return node.values()
    if isinstance(node, list):
        return node
    return ()
