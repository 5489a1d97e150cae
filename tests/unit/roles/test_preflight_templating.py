"""The site's preflight (its action plugin, on the controller) templates each role's check as the
role's tasks would: a bare reference to an option is the option's value as the argument-spec
check templated it, a bare reference to another dict or list is that structure taken the same
way, everything else goes to Ansible's templar, leaf by leaf, once; a role that runs no module
has no arguments built."""

from __future__ import annotations

import importlib
import sys

import pytest

from tests.unit.roles import REPO

pytest.importorskip("ansible", reason="the action plugin runs inside ansible-core")
sys.path.insert(0, str(REPO / "collections"))
ACTION = importlib.import_module("ansible_collections.rocetune.fabric.plugins.action.preflight")


class Templar:
    """Ansible's templar as far as the preflight uses it: every string it is given is recorded."""

    def __init__(self):
        self.seen = []

    def template(self, value):
        if "{{" not in value:  # a plain string is itself
            return value
        self.seen.append(value)
        return "T<%s>" % value


def test_bare_references_are_taken_without_a_template_and_the_rest_templated_once():
    provided = {"x_mtu": 9000, "x_ifs": ["rtf0"], "x_text": "{{ not again }}"}
    task_vars = dict(provided, __x_args={"mtu": "{{ x_mtu }}", "ifs": "{{x_ifs}}", "file": "/etc/{{ x_unit }}",
                                         "text": "{{ x_text }}", "n": 3, "nested": "{{ __x_more }}"},
                     __x_more=["{{ x_mtu }}", "{{ x_mtu + 1 }}"], x_unit="a.service", __x_name="plain")
    templar = Templar()
    out = ACTION._templated({"args": "{{ __x_args }}", "name": "{{ __x_name }}"}, provided, task_vars, templar)
    assert out == {"args": {"mtu": 9000, "ifs": ["rtf0"], "file": "T</etc/{{ x_unit }}>", "text": "{{ not again }}",
                            "n": 3, "nested": [9000, "T<{{ x_mtu + 1 }}>"]},
                   "name": "T<{{ __x_name }}>"}  # a string variable is the templar's to resolve
    assert templar.seen == ["/etc/{{ x_unit }}", "{{ x_mtu + 1 }}", "{{ __x_name }}"]


def test_an_undefined_or_self_referencing_name_is_left_to_the_templar():
    templar = Templar()
    assert ACTION._templated("{{ nowhere }}", {}, {}, templar) == "T<{{ nowhere }}>"
    loop = {"__a": ["{{ __a }}"]}
    out = ACTION._templated("{{ __a }}", {}, loop, templar)
    while isinstance(out, list):
        out = out[0]
    assert out == "T<{{ __a }}>"


def test_a_role_with_no_module_gets_no_arguments_built():
    templar = Templar()
    raw = {"role": "x", "module": "", "args": "{{ __x_args }}", "payload": {"src": "{{ y }}"}, "always": True}
    out = ACTION._template_check(raw, {}, {"__x_args": {"a": "{{ boom }}"}}, templar)
    assert out == {"role": "x", "module": "", "always": True} and templar.seen == []
    out = ACTION._template_check(dict(raw, module="x_apply"), {}, {"__x_args": {"a": "{{ b }}"}}, templar)
    assert out["module"] == "x_apply" and out["args"] == {"a": "T<{{ b }}>"} and out["payload"] == {"src": "T<{{ y }}>"}
