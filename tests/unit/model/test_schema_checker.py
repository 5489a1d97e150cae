"""The Features schema file and the standard-library checker that reads it: the file is a valid
JSON Schema (draft 2020-12) using only what the checker implements, and each keyword the checker
implements names the wrong field the way a user reads it."""

from __future__ import annotations

import copy

import pytest

from rocetune.model.schema import ANNOTATIONS, KEYWORDS, check, empty, features_schema, section_schema

from ..rules.featurekit import rail_host

BASE = rail_host(2).build()


def _schemas(node, where="#"):
    """Every schema in the file, with where it sits."""
    yield where, node
    for key in ("properties", "$defs"):
        for name, sub in node.get(key, {}).items():
            yield from _schemas(sub, f"{where}/{key}/{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _schemas(node[key], f"{where}/{key}")


def test_the_schema_file_is_valid_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = features_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_uses_only_what_the_checker_implements():
    for where, node in _schemas(features_schema()):
        unknown = set(node) - KEYWORDS - ANNOTATIONS
        assert not unknown, f"{where}: {sorted(unknown)} (teach model/schema.py first)"
        assert "additionalProperties" not in node or isinstance(node["additionalProperties"], dict), where
        if "$ref" in node:
            assert node["$ref"].startswith("#/$defs/"), where
            assert not set(node) & (KEYWORDS - {"$ref"}), f"{where}: $ref with siblings"
        assert "format" not in node or node["format"] == "ip-address", where


def test_every_section_says_what_it_holds():
    """docs/features.md opens with one line per section, from its title or description."""
    bare = [k for k, v in features_schema()["properties"].items() if not (v.get("title") or v.get("description"))]
    assert not bare


@pytest.mark.parametrize("where, value, message", [
    (("rdma", "devices", 1, "ports", 0, "port"), "1", 'rdma.devices[1].ports[0].port: expected an integer, got "1"'),
    (("rdma", "devices", 0, "ports", 0, "port"), True, "rdma.devices[0].ports[0].port: expected an integer, got true"),
    (("rdma", "devices", 0, "ports", 0, "port"), 1.0, "rdma.devices[0].ports[0].port: expected an integer, got 1.0"),
    (("pci", "devices", 0, "bdf"), None, "pci.devices[0].bdf: expected a string, got null"),
    (("gpus",), {}, "gpus: expected a list, got {}"),
    (("host", "virtualization"), [], "host.virtualization: expected an object, got []"),
    (("kernel", "modules", "mlx5_ib"), "yes", 'kernel.modules.mlx5_ib: expected true or false, got "yes"'),
    (("net", "interfaces", 0, "addresses", 0, "address"), "10.0.0.300",
     'net.interfaces[0].addresses[0].address: expected an IP address, got "10.0.0.300"'),
    (("net", "interfaces", 0, "addresses", 0, "prefixlen"), 129,
     "net.interfaces[0].addresses[0].prefixlen: expected an integer in 0..128, got 129"),
    (("net", "interfaces", 0, "addresses", 0, "family"), "ipv4",
     'net.interfaces[0].addresses[0].family: expected one of "inet", "inet6", got "ipv4"'),
    (("schema_version",), "x" * 60, 'schema_version: expected an integer, got "' + "x" * 36 + "..."),
])
def test_the_first_wrong_field_is_named(where, value, message):
    doc = copy.deepcopy(BASE)
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    assert check(doc) == message


def test_a_missing_required_key_is_named_and_optional_ones_may_be_absent():
    doc = copy.deepcopy(BASE)
    del doc["rdma"]["devices"][0]["ports"][0]["gids"]
    assert check(doc) == "rdma.devices[0].ports[0].gids: missing"
    doc = copy.deepcopy(BASE)
    doc.pop("findings", None)
    doc["kernel"].pop("nccl", None)
    assert check(doc) is None


def test_older_files_with_findings_and_unknown_keys_still_fit():
    doc = copy.deepcopy(BASE)
    doc["findings"] = [{"id": "pci-link-degraded", "severity": "warning", "subject": "0000:0f:00.0",
                        "message": "x"}]
    doc["host"]["something_newer"] = {"any": ["shape"]}
    assert check(doc) is None
    doc["findings"] = [{"severity": "fatal"}, "not even an object"]  # dropped on load, whatever it holds
    assert check(doc) is None


def test_the_empty_section_of_a_failed_source_fits_the_schema():
    for name in features_schema()["properties"]:
        if name in ("schema_version", "tool", "sources", "findings"):
            continue
        doc = dict(BASE, **{name: empty(section_schema(name))})
        assert check(doc) is None, name
    assert empty(section_schema("net")) == {"interfaces": [], "default_route_interfaces": []}
    assert empty(section_schema("gpu")) == {"matrix": None, "bus_ids": {}, "names": {}}
