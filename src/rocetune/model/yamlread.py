"""YAML read the way Ansible reads it (PyYAML's safe loader), minus what readers disagree on.

Refused, with the line: duplicate keys (PyYAML keeps the last one silently), and integers with a
leading zero (`010` is 8 to YAML 1.1 readers such as PyYAML and Ansible, 10 to YAML 1.2 ones).
Refused as well, as YamlError rather than whatever Python raises: a list or mapping used as a key,
an integer longer than Python converts, a date that is no date, .nan or .inf (no JSON number), a
document nested deeper than the reader's stack or than MAX_DEPTH, one that contains itself, and
one whose aliases expand to more than MAX_VALUES values.
PyYAML is imported on first use: a host without a QoS plan never needs it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+\Z")
MAX_DEPTH = 100
_MAX_INT_CHARS = 64
MAX_VALUES = 1_000_000


class YamlError(ValueError):
    """The text is not YAML this reader accepts; the message names the line."""


@lru_cache(maxsize=1)
def _loader():
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def line(node) -> int:
        return node.start_mark.line + 1

    def mapping(loader, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, (dict, list, set)):
                raise YamlError(f"line {line(key_node)}: a {type(key).__name__} used as a key; "
                                "keys must be strings or numbers")
            if key in seen:
                raise YamlError(f"line {line(key_node)}: duplicate key {key!r} (first on line {seen[key]})")
            seen[key] = line(key_node)
        return loader.construct_mapping(node, deep=deep)

    def integer(loader, node):
        if len(node.value) > _MAX_INT_CHARS:  # int() refuses 4300 digits, str() a long hex
            raise YamlError(f"line {line(node)}: an integer of {len(node.value)} characters: "
                            "larger than any value rocetune reads")
        if _LEADING_ZERO.match(node.value):
            raise YamlError(f"line {line(node)}: {node.value} has a leading zero: YAML 1.1 readers "
                            f"(PyYAML, Ansible) take it as octal {loader.construct_yaml_int(node)}, "
                            "YAML 1.2 readers as decimal; write the number without the zero")
        return loader.construct_yaml_int(node)

    def timestamp(loader, node):
        try:
            return loader.construct_yaml_timestamp(node)
        except ValueError as exc:  # 2024-13-45 matches YAML's date pattern, and is no date
            raise YamlError(f"line {line(node)}: {node.value} is not a date: {exc}") from None

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    StrictLoader.add_constructor("tag:yaml.org,2002:int", integer)
    def floating(loader, node):
        value = loader.construct_yaml_float(node)
        if value != value or value in (float("inf"), float("-inf")):  # .nan, .inf: no JSON number
            raise YamlError(f"line {line(node)}: {node.value} is not a number rocetune reads")
        return value

    StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", timestamp)
    StrictLoader.add_constructor("tag:yaml.org,2002:float", floating)
    return yaml, StrictLoader


def load_yaml(text: str) -> Any:
    """The document in `text`; YamlError with the line for bad YAML or an ambiguous value."""
    yaml, loader = _loader()
    from .jsonread import JsonError, check_depth

    try:
        doc = yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except YamlError:
        raise
    except RecursionError:
        raise YamlError(f"not valid YAML: nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"{where}not valid YAML: {problem}") from None
    try:
        check_depth(doc, MAX_DEPTH, MAX_VALUES)
    except JsonError as exc:
        raise YamlError(str(exc)) from None
    return doc
