"""The shape of a Features document, and a checker that names the first field that is wrong:
`rdma.devices[3].ports[0].port: expected an integer, got "1"`.

A saved Features file is user input (`--features FILE`): it may be hand-edited, truncated or
from another tool. Everything the rules, the analysis, lint and the renderers read is described
in data/features.schema.json (JSON Schema, draft 2020-12; docs/features.md is generated from it
by tools/features_doc.py), so a bad file is an input error with the field's path, never a crash
deep in a rule.

The node agent has the standard library only, so the checker here implements the part of JSON
Schema that file uses: `type` (a name or a list, "null" included), `properties`, `required`,
`additionalProperties` (a schema, or false: no other key), `items`, `enum`, `minimum`/`maximum`, `format` ("ip-address":
an IPv4 or IPv6 address) and `$ref` into `#/$defs/`. NaN and Infinity are no number (JSON has
none; a node that sends one fails the check). One deliberate difference: a number written
with a fraction (1.0) is not an integer here, where JSON Schema would take it: a rule that counts
or indexes with it would fail.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..pkgdata import package_json

SCHEMA_FILE = "data/features.schema.json"

# What the checker understands; any other keyword in the schema file fails a unit test.
KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum",
                      "minimum", "maximum", "format", "$ref"})
ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})


@lru_cache(maxsize=1)
def features_schema() -> dict:
    return package_json(__package__, SCHEMA_FILE)


def _valid_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


FORMATS: Dict[str, Callable[[str], bool]] = {"ip-address": _valid_ip}
_FORMAT_NAMES = {"ip-address": "an IP address"}

_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "object": "an object", "array": "a list", "null": "null"}
# JSON Schema's types as Python's (bool is an int in Python, never in JSON Schema)
_PY_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
             "object": (dict,), "array": (list,), "null": (type(None),)}

# A compiled schema: value -> None, or (path parts innermost first, what is wrong)
_Problem = Optional[Tuple[List[str], str]]
_Check = Callable[[Any], _Problem]


def check(doc: Any) -> Optional[str]:
    """None when `doc` fits the Features schema, else its first problem."""
    problem = _features_checker()(doc)
    if problem is None:
        return None
    parts, message = problem
    return f"{_where(''.join(reversed(parts)))}: {message}"


@lru_cache(maxsize=1)
def _features_checker() -> _Check:
    root = features_schema()
    return _compile(root, root, {})


def checker(schema: dict) -> Callable[[Any], Optional[str]]:
    """A checker of documents against another schema file in this subset (the expectations, a
    check configuration): None when a document fits, else its first problem, named by path."""
    compiled = _compile(schema, schema, {})

    def check_doc(doc: Any) -> Optional[str]:
        problem = compiled(doc)
        if problem is None:
            return None
        parts, message = problem
        return f"{_where(''.join(reversed(parts)))}: {message}"

    return check_doc


def section_schema(name: str) -> dict:
    """The schema of one top-level section of a Features document, its `$ref` followed."""
    root = features_schema()
    return _resolve(root, root["properties"][name])


def empty(schema: dict, root: Optional[dict] = None) -> Any:
    """The smallest value that fits `schema`: null where null is allowed, else an empty list or
    map, false, or an object holding only its required keys, each empty. What a section holds
    when its source could not run."""
    root = features_schema() if root is None else root
    schema = _resolve(root, schema)
    types = _types(schema)
    if "null" in types:
        return None
    if "array" in types:
        return []
    if "boolean" in types:
        return False
    if "object" in types:
        properties = schema.get("properties", {})
        return {key: empty(properties[key], root) for key in schema.get("required", ())}
    raise ValueError(f"no empty value for a required {'/'.join(types) or 'untyped'} field")


def _types(schema: dict) -> List[str]:
    types = schema.get("type", [])
    return [types] if isinstance(types, str) else list(types)


def _resolve(root: dict, schema: dict) -> dict:
    while "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r}: only #/$defs/NAME")
        schema = root["$defs"][ref[len("#/$defs/"):]]
    return schema


def _where(path: str) -> str:
    return path.lstrip(".") or "the document"


def _got(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(schema: dict, types: List[str]) -> str:
    names = [_TYPE_NAMES[t] for t in types if t != "null"] or ["null"]
    if schema.get("format") in _FORMAT_NAMES:
        names = [_FORMAT_NAMES[schema["format"]]]
    return " or ".join(names)


def _compile(schema: dict, root: dict, done: Dict[int, _Check]) -> _Check:
    """One function per schema node, built once: a 6 MB Features document is checked in a
    single walk that builds a field's path only when the field is wrong."""
    schema = _resolve(root, schema)
    if id(schema) in done:
        return done[id(schema)]
    types = _types(schema)
    matches = _type_matcher(types)
    expected = _expected(schema, types) if types else ""
    parts = [_compile_scalar(schema, types)]
    if "items" in schema:
        parts.append(_compile_items(_compile(schema["items"], root, done)))
    if "properties" in schema or "required" in schema or isinstance(schema.get("additionalProperties"), dict):
        parts.append(_compile_object(schema, root, done))
    steps = [p for p in parts if p is not None]

    def check_node(value: Any) -> _Problem:
        if matches is not None and not matches(value):
            return [], f"expected {expected}, got {_got(value)}"
        if value is None:
            return None
        for step in steps:
            problem = step(value)
            if problem is not None:
                return problem
        return None

    done[id(schema)] = check_node
    return check_node


def _type_matcher(types: List[str]) -> Optional[Callable[[Any], bool]]:
    if not types:
        return None
    exact = frozenset(t for name in types for t in _PY_TYPES[name])
    classes = tuple(exact)

    def matches(value: Any) -> bool:
        kind = type(value)
        if kind is float and not math.isfinite(value):  # NaN and Infinity: no JSON number
            return False
        return kind in exact or (kind is not bool and isinstance(value, classes))

    return matches


def _compile_scalar(schema: dict, types: List[str]) -> Optional[_Check]:
    enum = schema.get("enum")
    low, high = schema.get("minimum"), schema.get("maximum")
    valid = FORMATS[schema["format"]] if "format" in schema else None
    if enum is None and low is None and high is None and valid is None:
        return None
    bounds = f"{'' if low is None else low}..{'' if high is None else high}"

    def check_scalar(value: Any) -> _Problem:
        if enum is not None and not any(value == e and type(value) is type(e) for e in enum):
            return [], f"expected one of {', '.join(map(_got, enum))}, got {_got(value)}"
        if isinstance(value, (int, float)) and ((low is not None and value < low)
                                                or (high is not None and value > high)):
            return [], f"expected {_expected(schema, types)} in {bounds}, got {_got(value)}"
        if valid is not None and isinstance(value, str) and not valid(value):
            return [], f"expected {_FORMAT_NAMES[schema['format']]}, got {_got(value)}"
        return None

    return check_scalar


def _compile_items(item: _Check) -> _Check:
    def check_items(value: Any) -> _Problem:
        if not isinstance(value, list):
            return None
        for i, element in enumerate(value):
            problem = item(element)
            if problem is not None:
                problem[0].append(f"[{i}]")
                return problem
        return None

    return check_items


def _compile_object(schema: dict, root: dict, done: Dict[int, _Check]) -> _Check:
    required = set(schema.get("required", ()))
    names = list(schema.get("properties", {}))
    keys = [(name, name in required, _compile(schema["properties"][name], root, done)) for name in names]
    keys += [(name, True, None) for name in schema.get("required", ()) if name not in names]
    extra_schema = schema.get("additionalProperties")
    extra = _compile(extra_schema, root, done) if isinstance(extra_schema, dict) else None
    closed = extra_schema is False
    known = set(names)

    def check_object(value: Any) -> _Problem:
        if not isinstance(value, dict):
            return None
        for name, needed, sub in keys:
            if name not in value:
                if needed:
                    return ["." + name], "missing"
                continue
            problem = sub(value[name]) if sub is not None else None
            if problem is not None:
                problem[0].append("." + name)
                return problem
        if closed:
            for key in sorted((k for k in value if k not in known), key=str):
                from ..text import suggest

                close = suggest(str(key), names)
                hint = f" (did you mean {close}?)" if close else f" (known: {', '.join(names)})"
                return [f".{key}"], "not a known key" + hint
        if extra is not None:
            for key in sorted((k for k in value if k not in known), key=str):
                problem = extra(value[key])
                if problem is not None:
                    problem[0].append(f".{key}")
                    return problem
        return None

    return check_object
