"""The shape of a Features document, and a checker that names the first field that is wrong:
`rdma.devices[3].ports[0].port: expected an integer, got "1"`.

A saved Features file is user input (`--features FILE`): it may be hand-edited, truncated or
from another tool. Everything the rules, the analysis, lint and the renderers read is described
in data/features.schema.json (JSON Schema, draft 2020-12; docs/features.md is generated from it
by tools/features_doc.py), so a bad file is an input error with the field's path, never a crash
deep in a rule.

The node agent has the standard library only, so the checker here implements the part of JSON
Schema that file uses: `type` (a name or a list, "null" included), `properties`, `required`,
`additionalProperties` (a schema), `items`, `enum`, `minimum`/`maximum`, `format` ("ip-address":
an IPv4 or IPv6 address) and `$ref` into `#/$defs/`. One deliberate difference: a number written
with a fraction (1.0) is not an integer here, where JSON Schema would take it: a rule that counts
or indexes with it would fail.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional

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


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, {"string": str, "integer": int, "number": (int, float),
                              "object": dict, "array": list}[name])


def check(doc: Any) -> Optional[str]:
    """None when `doc` fits the Features schema, else its first problem."""
    root = features_schema()
    return _check(doc, root, root, "")


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


def _check(value: Any, schema: dict, root: dict, path: str) -> Optional[str]:
    schema = _resolve(root, schema)
    types = _types(schema)
    if types and not any(_is_type(value, t) for t in types):
        return f"{_where(path)}: expected {_expected(schema, types)}, got {_got(value)}"
    if value is None:
        return None
    problem = _check_scalar(value, schema, path)
    if problem:
        return problem
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problem = _check(item, schema["items"], root, f"{path}[{i}]")
            if problem:
                return problem
    if isinstance(value, dict):
        return _check_object(value, schema, root, path)
    return None


def _check_scalar(value: Any, schema: dict, path: str) -> Optional[str]:
    if "enum" in schema and not any(value == e and type(value) is type(e) for e in schema["enum"]):
        return f"{_where(path)}: expected one of {', '.join(map(_got, schema['enum']))}, got {_got(value)}"
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(value, (int, float)) and ((low is not None and value < low) or (high is not None and value > high)):
        bounds = f"{'' if low is None else low}..{'' if high is None else high}"
        return f"{_where(path)}: expected {_expected(schema, _types(schema))} in {bounds}, got {_got(value)}"
    if isinstance(value, str) and "format" in schema and not FORMATS[schema["format"]](value):
        return f"{_where(path)}: expected {_FORMAT_NAMES[schema['format']]}, got {_got(value)}"
    return None


def _check_object(value: dict, schema: dict, root: dict, path: str) -> Optional[str]:
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    for name in list(properties) + [r for r in required if r not in properties]:
        if name not in value:
            if name in required:
                return f"{_where(path + '.' + name)}: missing"
            continue
        if name in properties:
            problem = _check(value[name], properties[name], root, f"{path}.{name}")
            if problem:
                return problem
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key in sorted((k for k in value if k not in properties), key=str):
            problem = _check(value[key], extra, root, f"{path}.{key}")
            if problem:
                return problem
    return None
