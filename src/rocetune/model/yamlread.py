"""YAML read the way Ansible reads it (PyYAML's safe loader), minus what readers disagree on.

Refused, with the line: duplicate keys (PyYAML keeps the last one silently), and integers with a
leading zero (`010` is 8 to YAML 1.1 readers such as PyYAML and Ansible, 10 to YAML 1.2 ones).
PyYAML is imported on first use: a host without a QoS plan never needs it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+$")


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
            if key in seen:
                raise YamlError(f"line {line(key_node)}: duplicate key {key!r} (first on line {seen[key]})")
            seen[key] = line(key_node)
        return loader.construct_mapping(node, deep=deep)

    def integer(loader, node):
        if _LEADING_ZERO.match(node.value):
            raise YamlError(f"line {line(node)}: {node.value} has a leading zero: YAML 1.1 readers "
                            f"(PyYAML, Ansible) take it as octal {loader.construct_yaml_int(node)}, "
                            "YAML 1.2 readers as decimal; write the number without the zero")
        return loader.construct_yaml_int(node)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    StrictLoader.add_constructor("tag:yaml.org,2002:int", integer)
    return yaml, StrictLoader


def load_yaml(text: str) -> Any:
    """The document in `text`; YamlError with the line for bad YAML or an ambiguous value."""
    yaml, loader = _loader()
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except YamlError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"{where}not valid YAML: {problem}") from None
