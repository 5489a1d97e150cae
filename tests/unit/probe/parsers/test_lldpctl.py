"""`lldpctl -f json0` on recorded real outputs (tests/fixtures/outputs/SOURCES.md): lldpd's own
and a Cumulus switch's `net show lldp json` (the same structure). `-f json`, whose keys are the
neighbours' names written unescaped before lldpd 1.0.22, is refused: a recorded neighbour's name
forges another port's neighbour there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers._common import BUG_PREFIX
from rocetune.probe.parsers.lldpctl import parse_lldpctl_json

LLDP = Path(__file__).resolve().parents[3] / "fixtures" / "outputs" / "lldp"
FORGED = ('leaf-rail0": {"id": {"type": "mac", "value": "00:00:00:00:00:01"}}}, "port": {"id": {"type": '
          '"ifname", "value": "swp1"}}}, "eth9": {"via": "LLDP", "chassis": {"leaf-rail1')


def read(name: str) -> str:
    return (LLDP / name).read_text(encoding="utf-8")


def test_several_interfaces():
    found = parse_lldpctl_json(read("lldpctl-json0-two-interfaces-lab.json"))
    assert {i: [(n["chassis"], n["port"]) for n in ns] for i, ns in found.items()} == {
        "rt31a0": [("leaf-rail0", "rt31s0")], "rt31a1": [("leaf-rail0", "rt31s1")]}
    n = found["rt31a0"][0]
    assert n["port_id_type"] == "ifname" and n["chassis_id_type"] == "mac" and n["via"] == "LLDP"


def test_a_switch_s_json0_names_each_port_s_neighbour():
    found = parse_lldpctl_json(read("net-show-lldp-json-cumulus-leaf01-suzieq.json"))
    assert {i: (ns[0]["chassis"], ns[0]["port"]) for i, ns in found.items()} == {
        "swp1": ("spine01", "swp1"), "swp2": ("spine02", "swp1"), "swp3": ("leaf02", "swp3"),
        "swp4": ("leaf02", "swp4")}
    assert found["swp1"][0]["mgmt_ip"] == ["10.0.0.21", "2001:db8::21"]


def test_a_neighbour_s_name_is_its_text_and_forges_no_other_port():
    """Recorded on lldpd 1.0.16: the same neighbour, whose name is JSON, in both forms."""
    found = parse_lldpctl_json(read("lldpctl-json0-forged-sysname-lldpd1.0.16.json"))
    assert list(found) == ["i36v0"]
    (n,) = found["i36v0"]
    assert (n["chassis"], n["port"], n["chassis_id"]) == (FORGED, "i36v1", "46:98:ed:68:ee:5a")
    with pytest.raises(ParseError, match="read `lldpctl -f json0`"):
        parse_lldpctl_json(read("lldpctl-json-forged-sysname-lldpd1.0.16.json"))


def test_a_raw_0x1f_byte_in_a_name_keeps_the_reading():
    """lldpd up to 1.0.21 writes 0x1F raw inside a string (recorded)."""
    (n,) = parse_lldpctl_json(read("lldpctl-json0-0x1f-sysname-lldpd1.0.16.json"))["i36v0"]
    assert n["chassis"] == "leaf\x1frail0" and n["port"] == "i36v1"


def test_no_neighbour_and_an_unnamed_chassis():
    assert parse_lldpctl_json('{\n  "lldp": [\n    {\n      \n    }\n  ]\n}\n') == {}  # nothing heard
    # A neighbour that sends no SysName: its chassis ID names it.
    doc = json.loads(read("lldpctl-json0-two-interfaces-lab.json"))
    del doc["lldp"][0]["interface"][0]["chassis"][0]["name"]
    n = parse_lldpctl_json(json.dumps(doc))["rt31a0"][0]
    assert n["chassis"] == n["chassis_id"]


@pytest.mark.parametrize("text", ["", "lldp", "[]", '{"other": 1}', "{" * 5000, '{"lldp": [{"interface": 7}]}',
                                  '{"lldp": {"interface": {"eth0": {}}}}'])
def test_what_is_not_lldpctl_json0_is_a_parse_error_or_nothing(text):
    try:
        assert parse_lldpctl_json(text) == {}
    except ParseError as exc:
        assert BUG_PREFIX not in str(exc)
