"""lldpctl's JSON, both of lldpd's forms, on recorded real outputs (tests/fixtures/outputs/SOURCES.md):
`-f json` with one interface (an object) and with several (a list), `-f json0`, and a Cumulus
switch's `net show lldp json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers._common import BUG_PREFIX
from rocetune.probe.parsers.lldpctl import parse_lldpctl_json

LLDP = Path(__file__).resolve().parents[2] / "fixtures" / "outputs" / "lldp"


def read(name: str) -> str:
    return (LLDP / name).read_text(encoding="utf-8")


def test_one_interface_is_an_object_keyed_by_its_name():
    found = parse_lldpctl_json(read("lldpctl-json-one-interface-lab.json"))
    assert list(found) == ["rt31a0"]
    (n,) = found["rt31a0"]
    assert n["chassis"] == "leaf-rail0" and n["port"] == "rt31s0" and n["port_id_type"] == "ifname"
    assert n["chassis_id_type"] == "mac" and n["chassis_id"] == "b6:c6:90:83:90:4c" and n["via"] == "LLDP"
    assert n["mgmt_ip"] == ["fe80::b4c6:90ff:fe83:904c"]


@pytest.mark.parametrize("name", ["lldpctl-json-two-interfaces-lab.json", "lldpctl-json0-two-interfaces-lab.json"])
def test_several_interfaces_json_and_json0_read_alike(name):
    found = parse_lldpctl_json(read(name))
    assert {i: [(n["chassis"], n["port"]) for n in ns] for i, ns in found.items()} == {
        "rt31a0": [("leaf-rail0", "rt31s0")], "rt31a1": [("leaf-rail0", "rt31s1")]}


def test_a_switch_s_json0_names_each_port_s_neighbour():
    found = parse_lldpctl_json(read("net-show-lldp-json-cumulus-leaf01-suzieq.json"))
    assert {i: (ns[0]["chassis"], ns[0]["port"]) for i, ns in found.items()} == {
        "swp1": ("spine01", "swp1"), "swp2": ("spine02", "swp1"), "swp3": ("leaf02", "swp3"),
        "swp4": ("leaf02", "swp4")}
    assert found["swp1"][0]["mgmt_ip"] == ["10.0.0.21", "2001:db8::21"]


def test_no_neighbour_and_an_unnamed_chassis():
    assert parse_lldpctl_json('{\n  "lldp": {\n    \n  }\n}\n') == {}  # lldpd 1.0.16, nothing heard
    assert parse_lldpctl_json('{\n  "lldp": [\n    {\n      \n    }\n  ]\n}\n') == {}  # the same, json0
    # A neighbour that sends no SysName: json_writer.c has no `name` to key the chassis by, so
    # the chassis object stays as it is ({"id": ..., "descr": ...}); its ID names it then.
    doc = json.loads(read("lldpctl-json-one-interface-lab.json"))
    body = doc["lldp"]["interface"]["rt31a0"]
    body["chassis"] = body["chassis"]["leaf-rail0"]
    (n,) = parse_lldpctl_json(json.dumps(doc))["rt31a0"]
    assert n["chassis"] == n["chassis_id"] == "b6:c6:90:83:90:4c"


@pytest.mark.parametrize("text", ["", "lldp", "[]", '{"other": 1}', "{" * 5000, '{"lldp": {"interface": 7}}'])
def test_what_is_not_lldpctl_json_is_a_parse_error_or_nothing(text):
    try:
        assert parse_lldpctl_json(text) == {}
    except ParseError as exc:
        assert BUG_PREFIX not in str(exc)
