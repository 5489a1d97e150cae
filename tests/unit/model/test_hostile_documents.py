"""JSON and YAML readers on hostile documents: each refusal a ValueError with a reason, never a
RecursionError, TypeError or a value that breaks the code after it."""

from __future__ import annotations

import pytest

from rocetune.model.jsonread import JsonError, check_depth, load_json
from rocetune.model.yamlread import YamlError, load_yaml

DEEP = 200000


@pytest.mark.parametrize("text, why", [
    ("[" * DEEP + "]" * DEEP, "nested deeper than 100 levels"),
    ('{"a":' * DEEP + "1" + "}" * DEEP, "nested deeper than 100 levels"),
    ("[" * 150 + "]" * 150, "nested deeper than 100 levels"),  # read by Python, refused after
    ('{"n": ' + "9" * 5000 + "}", "4300 digits"),
    ('{"a": ', "Expecting value"),
])
def test_json_refusals(text, why):
    with pytest.raises(JsonError, match=why):
        load_json(text)


def test_json_within_the_limits_reads():
    doc = {"a": [{"b": [1, 2, {"c": "d"}]}] * 3, "n": int("9" * 4000)}
    import json
    assert load_json(json.dumps(doc)) == doc
    nested = "[" * 100 + "]" * 100
    assert load_json(nested) == eval(nested)  # noqa: S307 - a literal of brackets


@pytest.mark.parametrize("text, why", [
    ("[" * DEEP, "nested deeper than 100 levels"),
    ("{a: " * DEEP, "nested deeper than 100 levels"),
    ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 150)), "nested deeper than 100 levels"),
    ("? {a: 1}\n: 2\n", "line 1: a dict used as a key"),
    ("{[a, b]: 1}\n", "line 1: a list used as a key"),
    ("x: 1\n? !!set {a}\n: 2\n", "line 2: a set used as a key"),
    ("tc: " + "9" * 5000 + "\n", "line 1: an integer of 5000 characters"),
    ("tc: 0x" + "f" * 5000 + "\n", "an integer of 5002 characters"),
    ("tc: 0" + "7" * 5000 + "\n", "an integer of 5001 characters"),
    ("when: 2024-13-45\n", "line 1: 2024-13-45 is not a date"),
    ("a: &x [*x]\n", "contains itself"),
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcdefg", "bcdefgh")),
     "more than 1000000 values"),
])
def test_yaml_refusals(text, why):
    with pytest.raises(YamlError, match=why):
        load_yaml(text)


def test_yaml_within_the_limits_reads():
    text = "base: &b {tc: 106, dscp: 26}\nports: [*b, *b]\nbig: " + "9" * 60 + "\n"
    assert load_yaml(text) == {"base": {"tc": 106, "dscp": 26}, "ports": [{"tc": 106, "dscp": 26}] * 2,
                               "big": int("9" * 60)}


def test_depth_is_measured_once_per_shared_value():
    shared = [0] * 10
    for _ in range(60):  # 10**60 values once expanded, 60 levels
        shared = [shared] * 10
    check_depth(shared)  # one walk per distinct list: returns at once
    with pytest.raises(JsonError, match="more than 1000 values"):
        check_depth(shared, max_nodes=1000)
    with pytest.raises(JsonError, match="deeper than 50"):
        check_depth(shared, limit=50)
