"""Rail cabling compared across a fleet: each host's `lldp` reading (lldpctl's neighbours, the
Features section) gives `rail.I.switch` per compute port in rail order; the host whose rail
reaches another switch is odd, named with the port and the switch port, and a manifest's `rails`
names the switches outright."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rocetune import app
from rocetune.fleet import manifest
from rocetune.fleet.compare import compare
from rocetune.fleet.results import SCHEMA, from_doc

ROOT = str(Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "dgx-h100-roce")


@pytest.fixture(scope="module")
def features():
    return app.host_features(ROOT)


def rails(features):
    from rocetune.analysis.hostview import HostView
    from rocetune.model.vocab import natural_key

    return sorted(HostView(features).selection().chosen, key=lambda p: natural_key(p.name))


def host(name, features, leaves, error=None):
    f = copy.deepcopy(features)
    ports = rails(f)
    f["lldp"] = {"tool": "lldpctl -f json0", "error": error, "interfaces": {
        p.netdev: [{"chassis": leaf, "port": f"swp{n}", "chassis_id": None, "chassis_id_type": None,
                    "port_id_type": "ifname", "port_descr": None, "mgmt_ip": [], "via": "LLDP"}]
        for p, leaf, n in zip(ports, leaves, range(1, 99)) if leaf}}
    return from_doc(name, {"schema": SCHEMA, "host": name, "probe": {"features": f, "plan": {"env": {}}},
                           "doctor": {"findings": []}, "gathered_at": None, "error": None})


def test_a_crossed_cable_is_named_by_host_rail_and_switch_port(features):
    n = len(rails(features))
    straight = [f"leaf-r{i}" for i in range(n)]
    crossed = ["leaf-r1", "leaf-r0"] + straight[2:]
    report = compare([host("n1", features, straight), host("n2", features, crossed), host("n3", features, straight)])
    assert report.differing == ["n2"]
    odd = {e["fact"]: e for e in report.entries()}
    assert set(odd) == {"rail.0.switch", "rail.1.switch"}
    first = odd["rail.0.switch"]
    assert first["value"] == "leaf-r1" and first["reasons"][0]["expected"] == "leaf-r0"
    assert first["label"] == "rail 0: the switch its cable reaches (LLDP)"
    assert first["detail"].startswith(rails(features)[0].name) and first["detail"].endswith("-> leaf-r1 port swp1")


def test_a_silent_rail_and_an_unreadable_host(features):
    n = len(rails(features))
    straight = [f"leaf-r{i}" for i in range(n)]
    report = compare([host("n1", features, straight), host("n2", features, [None] + straight[1:]),
                      host("n3", features, straight), host("n4", features, [], error="lldpd is not running")])
    row = next(r for r in report.rows if r.key == "rail.0.switch")
    assert row.cells["n2"].status == "odd" and row.cells["n2"].fact.detail.endswith("no LLDP neighbour")
    assert row.cells["n4"].status == "unknown" and "lldpd is not running" in row.cells["n4"].fact.detail
    assert report.differing == ["n2"]


def test_no_lldp_reading_no_rail_facts(features):
    plain = from_doc("p", {"schema": SCHEMA, "host": "p", "probe": {"features": copy.deepcopy(features)},
                           "error": None})
    assert not [r for r in compare([plain, plain]).rows if r.key.startswith("rail.")]


def test_the_manifest_names_the_switches(features):
    n = len(rails(features))
    straight = [f"leaf-r{i}" for i in range(n)]
    checks = manifest.checks({"rails": ["leaf-r0", "leaf-r9"]})
    report = compare([host("n1", features, straight), host("n2", features, straight)], checks)
    assert report.differing == ["n1", "n2"]
    entry = next(e for e in report.entries() if e["host"] == "n1")
    assert entry["fact"] == "rail.1.switch" and entry["reasons"] == [
        {"kind": "manifest", "key": "rails[1]", "expected": "leaf-r9"}]
    with pytest.raises(ValueError, match="rails: expected a list of switch names"):
        manifest.checks({"rails": "leaf-r0"})
