"""The JSON reader's depth, read off the text, is the parsed document's depth: on any document
(hypothesis), with strings full of brackets, quotes and escapes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocetune.model.jsonread import JsonError, load_json, text_depth


def tree_depth(doc) -> int:
    if isinstance(doc, dict):
        return 1 + max((tree_depth(v) for v in doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max((tree_depth(v) for v in doc), default=0)
    return 0


tricky = st.text(alphabet='[]{}"\\,: ab\u00e9\n\t', max_size=12)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | tricky
documents = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(tricky, kids, max_size=4),
                         max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(documents, st.booleans(), st.booleans())
def test_text_depth_is_the_tree_depth(doc, indent, as_bytes):
    text = json.dumps(doc, indent=1 if indent else None, ensure_ascii=False)
    data = text.encode("utf-8") if as_bytes else text
    assert text_depth(data) == tree_depth(doc)
    assert load_json(data) == doc


def test_depth_past_the_limit_is_refused_and_at_it_read():
    assert load_json('{"a": ' * 100 + "1" + "}" * 100) is not None
    with pytest.raises(JsonError, match="deeper than 100"):
        load_json('{"a": ' * 101 + '"]]]"' + "}" * 101)
    assert text_depth('["[[[[", {"k": "}}}}"}]') == 2
