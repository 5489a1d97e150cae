"""Read an NCCL topology file (input under a root: a vendor's, the owner's, or one rocetune wrote)
into TopoNode trees, refusing what could hurt: more than MAX_BYTES, a DOCTYPE or entity
declaration (no expansion, no billion laughs), more than MAX_NODES elements or MAX_DEPTH levels.
Malformed text is a TopoReadError with one line saying why, never an exception from the parser.

NCCL's own reader (src/graph/xml.cc) knows elements, double- or single-quoted attributes and
comments; it has no entities, so a file that needs them would not load in NCCL either.

The Features keep a file as a flat list (`nodes`: tag, attrs, parent index), which the schema
can check; `to_nodes` / `from_nodes` convert.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from .topo import TopoNode

MAX_BYTES = 1 << 20
MAX_NODES = 4096
MAX_DEPTH = 16
_DECL = re.compile(r"<!(DOCTYPE|ENTITY|\[CDATA\[)", re.I)


class TopoReadError(ValueError):
    pass


def parse_topology(text: str) -> TopoNode:
    """The `<system>` tree of `text`; TopoReadError when it cannot or must not be read."""
    import xml.etree.ElementTree as ET

    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        raise TopoReadError(f"larger than {MAX_BYTES // 1024} KiB")
    m = _DECL.search(text)
    if m:
        raise TopoReadError(f"holds a <!{m.group(1)} declaration (NCCL's reader knows none)")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise TopoReadError(f"not well-formed XML ({exc})") from None
    count = 0

    def convert(el, depth: int) -> TopoNode:
        nonlocal count
        count += 1
        if count > MAX_NODES:
            raise TopoReadError(f"more than {MAX_NODES} elements")
        if depth > MAX_DEPTH:
            raise TopoReadError(f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(el.tag, str):
            raise TopoReadError("holds a processing instruction")
        return TopoNode(el.tag, dict(el.attrib), [convert(c, depth + 1) for c in el
                                                  if isinstance(c.tag, str)])

    tree = convert(root, 1)
    if tree.tag != "system":
        raise TopoReadError(f"the root element is <{tree.tag}>, not <system>")
    return tree


def to_nodes(tree: TopoNode) -> List[dict]:
    """The tree as a flat list in document order: {"tag", "attrs", "parent"} (parent: index)."""
    out: List[dict] = []
    index: Dict[int, int] = {}
    for node, parents in tree.walk():
        index[id(node)] = len(out)
        out.append({"tag": node.tag, "attrs": dict(node.attrs),
                    "parent": index[id(parents[-1])] if parents else None})
    return out


def from_nodes(nodes: List[dict]) -> Optional[TopoNode]:
    """Back from to_nodes; None when the list is not one tree (a hand-edited Features file)."""
    built: List[TopoNode] = []
    root: Optional[TopoNode] = None
    for i, n in enumerate(nodes or []):
        node = TopoNode(str(n.get("tag")), {str(k): str(v) for k, v in (n.get("attrs") or {}).items()})
        parent = n.get("parent")
        if parent is None:
            if root is not None:
                return None
            root = node
        elif isinstance(parent, int) and 0 <= parent < i:
            built[parent].children.append(node)
        else:
            return None
        built.append(node)
    return root
