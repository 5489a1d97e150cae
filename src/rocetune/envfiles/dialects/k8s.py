"""k8s: a Kubernetes ConfigMap (mounted with `envFrom`), its `data` read as the API server
reads it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, List, Optional

from ..parsed import Assignment, ParsedFile, rule_of, template_reason
from .base import Add, Dialect

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "k8s"
CONFIGMAP_NAME = "rocetune-env"
_CONFIGMAP = re.compile(r"(?m)^[^\S\n]*(?:-\s+)?kind:\s*[\"']?ConfigMap[\"']?\s*(?:#.*)?$")
_WHY = "a ConfigMap (kind: ConfigMap)"


def render(plan: Plan, features: dict) -> str:
    from ... import __version__
    from ...model.features import fingerprint
    from ..writing import header_lines, rule_comment, yaml_quote

    out = ["# " + h for h in header_lines(plan, features, NAME)]
    out += [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        f"  name: {CONFIGMAP_NAME}",
        "  labels:",
        "    app.kubernetes.io/managed-by: rocetune",
        "  annotations:",
        f"    rocetune/version: {yaml_quote(__version__)}",
        f"    rocetune/features-sha256: {yaml_quote(fingerprint(features))}",
    ]
    if not plan.decisions:
        out.append("data: {}")
    else:
        out.append("data:")
        for d in plan.decisions:
            out.append("  # " + rule_comment(d))
            out.append(f"  {d.key}: {yaml_quote(d.value)}")
    return "\n".join(out) + "\n"


def detect(text: str) -> Optional[str]:
    """A ConfigMap in YAML, or in JSON (an object of kind ConfigMap, or unreadable JSON that
    names that kind)."""
    if not text.lstrip().startswith("{"):
        return _WHY if _CONFIGMAP.search(text) else None
    from ...model.jsonread import load_json

    try:
        doc = load_json(text)
    except ValueError:
        doc = None
    if (isinstance(doc, dict) and doc.get("kind") == "ConfigMap") or \
            (doc is None and re.search(r"[\"']?kind[\"']?\s*:\s*[\"']ConfigMap", text)):
        return _WHY
    return None


def read(text: str, out: ParsedFile) -> None:
    """The `data` of every ConfigMap in the file (one or several YAML documents, or JSON), read
    by PyYAML: block scalars, flow mappings and quoting as Kubernetes reads them. Values must be
    strings: the API server refuses `NCCL_IB_TC: 106` (an integer) in a ConfigMap."""
    import yaml

    from ...model.yamlread import YamlError, load_yaml

    lines = text.split("\n")
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except RecursionError:
        out.problems.append((1, "k8s-unreadable", "not valid YAML: nested deeper than PyYAML reads"))
        return
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        out.problems.append((mark.line + 1 if mark else 1, "k8s-unreadable", f"not valid YAML: {problem}"))
        return
    configmaps = 0
    for node in docs:
        if node is None:
            continue
        try:  # duplicate keys and leading-zero numbers, with the file's line numbers
            load_yaml("\n" * node.start_mark.line + " " * node.start_mark.column
                      + text[node.start_mark.index:node.end_mark.index])
        except YamlError as exc:
            m = re.match(r"line (\d+): ", str(exc))
            out.problems.append((int(m.group(1)) if m else node.start_mark.line + 1, "k8s-unreadable",
                                 str(exc)[m.end():] if m else str(exc)))
        if not isinstance(node, yaml.MappingNode):
            continue
        fields = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        kind = fields.get("kind")
        if not (isinstance(kind, yaml.ScalarNode) and kind.value == "ConfigMap"):
            continue
        configmaps += 1
        data = fields.get("data")
        if data is None or (isinstance(data, yaml.ScalarNode) and _yaml_type(data) == "null"):
            continue
        if not isinstance(data, yaml.MappingNode):
            out.problems.append((data.start_mark.line + 1, "k8s-unreadable",
                                 "data is not a mapping of names to strings"))
            continue
        for key_node, value_node in data.value:
            _k8s_entry(text, lines, key_node, value_node, out)
    if not configmaps:
        out.problems.append((1, "k8s-no-configmap", "no ConfigMap (kind: ConfigMap) in this file"))


def _yaml_type(node) -> str:
    return node.tag.rsplit(":", 1)[-1]


def _k8s_entry(text: str, lines: List[str], key_node, value_node, out: ParsedFile) -> None:
    import yaml

    line = key_node.start_mark.line + 1
    key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
    if not isinstance(value_node, yaml.ScalarNode):
        out.problems.append((line, "k8s-not-a-string",
                             f"{key}: a {'list' if isinstance(value_node, yaml.SequenceNode) else 'mapping'}, "
                             "not a string: the API server refuses the ConfigMap"))
        return
    raw = text[value_node.start_mark.index:value_node.end_mark.index]
    kind = _yaml_type(value_node)
    value = "" if kind == "null" else value_node.value
    if kind not in ("str", "null"):
        out.problems.append((line, "k8s-not-a-string",
                             f"{key}: {raw} is a YAML {kind}, and ConfigMap data values are strings: "
                             "the API server refuses the ConfigMap"))
    rule = None
    above = lines[line - 2].strip() if line >= 2 else ""
    if above.startswith("#"):
        rule = rule_of(above[1:])
    out.assignments.append(Assignment(key, value, raw, line, NAME, rule, template_reason(value)))


def lint_value(a: Assignment, add: Add) -> None:
    if a.value is not None and a.value != a.value.strip():
        add("k8s-whitespace", "error", a.line, a.key,
            f"the container gets {a.key}={a.value!r}, whitespace included"
            + (" (a '|' block keeps the final newline)" if a.raw.lstrip().startswith("|") else ""),
            "use '|-' or '>-', or a quoted string")


DIALECT = Dialect(NAME, listed=60, precedence=10, read=read, render=render,
                  file_patterns=("*.yaml", "*.yml"), detect=detect,
                  lint_value=lint_value)
