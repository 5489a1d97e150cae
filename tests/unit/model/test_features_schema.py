"""A --features file is user input: a damaged one is an input error naming the field, never a
crash in a rule (fuzzed: any leaf of a real Features document replaced by any JSON value)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocetune.envfiles.write import render
from rocetune.errors import ExitCode, RocetuneError
from rocetune.model.features import load
from rocetune.planner import build_plan

from ..rules.featurekit import rail_host

BASE = rail_host(2).build()


def leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaves(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaves(v, path + (i,))
    yield path


PATHS = [p for p in leaves(BASE) if p]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
                    max_leaves=4)


def _replace(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), JSON)
def test_a_damaged_features_file_is_an_input_error_or_plans(tmp_path_factory, path, value):
    doc = copy.deepcopy(BASE)
    _replace(doc, path, value)
    f = tmp_path_factory.mktemp("f") / "features.json"
    f.write_text(json.dumps(doc))
    try:
        features = load(str(f))
    except RocetuneError as exc:
        assert exc.code == ExitCode.INPUT and "features.json" in exc.message
        return
    try:
        plan = build_plan(features)
        render(plan, "sh", features)
    except RocetuneError as exc:
        assert exc.code != ExitCode.INTERNAL, exc.message


def test_the_message_names_the_field(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["rdma"]["devices"][1]["ports"][0]["port"] = "1"
    f = tmp_path / "f.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(RocetuneError) as e:
        load(str(f))
    assert "rdma.devices[1].ports[0].port: expected an integer" in e.value.message
    assert e.value.code == ExitCode.INPUT


def test_missing_sections_are_an_input_error(tmp_path):
    f = tmp_path / "f.json"
    f.write_text(json.dumps({"schema_version": 1, "host": {}}))
    with pytest.raises(RocetuneError) as e:
        load(str(f))
    assert e.value.code == ExitCode.INPUT and "missing" in e.value.message


def test_an_older_file_with_stored_findings_loads_and_plans_as_a_fresh_probe(tmp_path):
    """Files saved before findings moved to report time carry them, in any shape: ignored."""
    from rocetune.model.features import fingerprint

    old = copy.deepcopy(BASE)
    old["findings"] = [{"id": "memlock-limited", "severity": "warning", "subject": "host",
                        "message": "max locked memory is 65536 bytes"}, {"not": "a finding"}]
    f = tmp_path / "old.json"
    f.write_text(json.dumps(old))
    loaded = load(str(f))
    assert "findings" not in loaded and fingerprint(loaded) == fingerprint(BASE)
    assert render(build_plan(loaded), "sh", loaded) == render(build_plan(BASE), "sh", BASE)
