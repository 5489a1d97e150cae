import json

import pytest

from rocetune.render.json_text import MIN_ROWS, dumps, envelope_text, links_text


def _matrix(n_gpus=8, n_nics=MIN_ROWS):
    labels = [f"GPU{i}" for i in range(n_gpus)] + [f"NIC{j}" for j in range(n_nics)]
    kinds = ["PIX", "PXB", "NODE", "SYS", "NV18"]
    return {a: {b: kinds[(i * 7 + j) % len(kinds)] for j, b in enumerate(labels) if b != a}
            for i, a in enumerate(labels)}


def _envelope(links):
    return {"schema": "rocetune.result/1", "command": "probe", "status": "ok", "exit_code": 0,
            "data": {"features": {"gpu": {"matrix": {"gpus": [], "nics": [], "links": links}},
                                  "host": {"hostname": "n\u00e9\u0000\"x"}}},
            "warnings": [], "errors": []}


def test_envelope_text_is_what_json_writes():
    env = _envelope(_matrix())
    assert envelope_text(env) == dumps(env)


def test_envelope_text_leaves_the_envelope_as_it_was():
    links = _matrix()
    env = _envelope(links)
    envelope_text(env)
    assert env["data"]["features"]["gpu"]["matrix"]["links"] is links


@pytest.mark.parametrize("links", [
    {"A": {}}, {"B": {"a": "x"}, "A": {"b": "y\u00e9\"\n", "a": "x"}},
    {"GPU0": {"NIC0": "PIX"}, "NIC0": {"GPU0": "weird \\ value"}},
])
def test_links_text_is_json_for_string_tables(links):
    assert links_text(links) == json.dumps(links, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("links", [
    {"A": {"b": 1}}, {"A": {1: "x"}}, {"A": {"a": None}}, {"A": {"a": ["x"]}}, {"A": "x"}, {1: {}},
    {"A": {"a": "x", 2: "y"}}, {"A": {"a": "1"}, "B": {"a": 1}}, {"A": {"a": "x"}, "B": {"a": True}},
])
def test_links_text_leaves_other_tables_to_json(links):
    assert links_text(links) is None


def test_envelope_text_with_odd_cells_is_still_json():
    links = _matrix()
    links["GPU0"]["NIC3"] = 4  # not a string: json writes the whole envelope
    env = _envelope(links)
    assert envelope_text(env) == dumps(env)


def test_small_or_missing_tables_go_to_json():
    for env in (_envelope(_matrix(2, 2)), {"command": "env", "data": {"features": None}}, {"data": []}):
        assert envelope_text(env) == dumps(env)
