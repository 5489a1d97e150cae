"""What lies below NCCL compared across a fleet: a host whose NIC firmware forces relaxed ordering,
whose compute port trained down or lost its FEC, or whose GPUs are not registered with the NVLink
fabric is the odd one, named with the card, port or GPU; a host without the reading adds no fact."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rocetune import app
from rocetune.fleet.compare import compare
from rocetune.fleet.results import SCHEMA, from_doc

ROOT = str(Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "dgx-h100-roce")


@pytest.fixture(scope="module")
def features():
    return app.host_features(ROOT)


def ports(features):
    from rocetune.analysis.hostview import HostView

    return list(HostView(features).selection().chosen)


def host(name, features, *, ordering="per_mkey(0)", speed="400G", fec="Standard_RS-FEC - (544,514)",
         fabric=("Completed", "Success")):
    from rocetune.core.nic_firmware_params import first_function

    f = copy.deepcopy(features)
    cards = sorted({first_function(p.pci) for p in ports(f) if p.pci})
    f["nic_firmware"] = {"tool": "mlxconfig", "devices": {b: {"error": None, "params": {
        "PCI_WR_ORDERING": {"default": "per_mkey(0)", "current": ordering, "next_boot": ordering}}} for b in cards}}
    f["phy"] = {"link_tool": "mlxlink", "ports": {p.name: {
        "netdev": p.netdev, "pci": p.pci, "fec": None, "module": None, "errors": {},
        "link": {"speed": speed if i == 0 else "400G", "fec": fec}} for i, p in enumerate(ports(f))}}
    f["nvlink"] = {"nvswitches": 4, "fabric": {"0000:18:00.0": {"state": fabric[0], "status": fabric[1]}},
                   "links": None, "link_errors": None, "services": None, "errors": {}}
    return from_doc(name, {"schema": SCHEMA, "host": name, "probe": {"features": f, "plan": {"env": {}}},
                           "doctor": {"findings": []}, "gathered_at": None, "error": None})


def test_the_odd_firmware_speed_fec_and_fabric_are_named(features):
    report = compare([host("n1", features), host("n2", features, ordering="force_relax(1)"),
                      host("n3", features, speed="200G"), host("n4", features, fabric=("In Progress", None)),
                      host("n5", features)])
    odd = {(e["host"], e["fact"]) for e in report.entries()}
    assert odd == {("n2", "fw.PCI_WR_ORDERING"), ("n3", "phy.speed"), ("n4", "nvlink.fabric")}
    entry = next(e for e in report.entries() if e["fact"] == "phy.speed")
    assert entry["value"] == ["200G", "400G"] and ports(features)[0].name in entry["detail"]
    assert next(e for e in report.entries() if e["fact"] == "fw.PCI_WR_ORDERING")["label"] == \
        "NIC firmware PCI_WR_ORDERING"


def test_no_below_reading_no_below_facts(features):
    plain = from_doc("p", {"schema": SCHEMA, "host": "p", "probe": {"features": copy.deepcopy(features)},
                           "error": None})
    keys = {r.key for r in compare([plain, plain]).rows}
    assert not {k for k in keys if k.startswith(("fw.", "phy.", "nvlink."))}


def test_doctor_s_compact_facts_carry_the_below_and_rail_facts(features):
    from rocetune.fleet.facts import features_facts, from_json, to_json

    f = host("n1", features, ordering="force_relax(1)").features
    f["lldp"] = {"tool": "lldpctl -f json0", "error": None, "interfaces": {}}
    carried = from_json(to_json(features_facts(f, {})))
    assert carried["fw.PCI_WR_ORDERING"].value == ["force_relax(1)"]
    assert carried["phy.speed"].value == ["400G"] and carried["nvlink.fabric"].value == ["Completed/Success"]
    assert "rail.0.switch" in carried and carried["hca.count"].value == len(ports(features))
    with pytest.raises(ValueError, match="fleet_facts.fw.ATS_ENABLED"):
        from_json({"fw.ATS_ENABLED": {"value": {"not": "a scalar"}}})
