"""The expectations' `firmware` section: NVCONFIG values declared for every rail's card (and per
RDMA device), held against the Current column that the nic_firmware reader parses from recorded
real `mlxconfig` outputs (tests/fixtures/outputs/SOURCES.md, tests/unit/roles/fixtures/PROVENANCE.md);
written from a node where it was read, said (not passed) where it could not be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocetune.analysis.expect import node_facts
from rocetune.core.nic_firmware_params import parse_query
from rocetune.model import expect as e
from rocetune.probe.sources import nic_firmware
from tests.unit.rules.featurekit import Host

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CX4LX = FIXTURES / "outputs" / "mlxconfig" / "mlxconfig-q-connectx4lx-xtremeownage.txt"  # Next Boot only
CX6 = Path(__file__).resolve().parents[2] / "unit" / "roles" / "fixtures" / "mlxconfig-e-q-egrep-connectx6-shs-docs.txt"
CX5 = FIXTURES / "outputs" / "mlxconfig" / "mlxconfig-q-connectx5-bluebanquise.txt"


def card(path: Path) -> dict:
    """What the nic_firmware source keeps of one card's query (its WATCHED parameters)."""
    rows = parse_query(path.read_text())
    return {"error": None, "params": {k: {nic_firmware._COLUMNS[c]: v for c, v in r.items()}
                                      for k, r in rows.items() if k in nic_firmware.WATCHED}}


def features(*cards, tool="mlxconfig"):
    """Two single-port cards (mlx5_0 at 3b:00.0, mlx5_1 at 5e:00.0), each a rail; `cards` their
    read-back in that order (None: no nic_firmware section at all)."""
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0, bdf="0000:18:00.0")
    h.gpu(1, bdf="0000:58:00.0")
    h.rdma("mlx5_0", netdev="eth2", ipv4="192.168.0.5/24", pci="0000:3b:00.0", paths={0: "PIX", 1: "SYS"})
    h.rdma("mlx5_1", netdev="eth3", ipv4="192.168.1.5/24", pci="0000:5e:00.0", paths={0: "SYS", 1: "PIX"})
    f = h.build()
    if cards:
        f["nic_firmware"] = {"tool": tool, "devices": dict(zip(("0000:3b:00.0", "0000:5e:00.0"), cards))}
    return f


def held(doc: dict, f: dict):
    facts = node_facts(f)
    return [(d.check, d.field, d.subject, d.severity) for d in e.evaluate(e.validate(doc), facts)], facts


ROCE = {"PCI_WR_ORDERING": "per_mkey", "ROCE_CC_PRIO_MASK_P1": 255, "CNP_DSCP_P1": 48, "CNP_802P_PRIO_P1": 6}


def test_the_connectx4_lx_defaults_meet_a_declaration_of_them_on_every_rail():
    f = features(card(CX4LX), card(CX4LX))
    found, facts = held({"firmware": dict(ROCE, PCI_WR_ORDERING="per_mkey(0)", CNP_DSCP_P2="0x30")}, f)
    assert found == []
    assert sorted(facts.firmware["cards"]) == ["0000:3b:00.0", "0000:5e:00.0"]
    assert facts.firmware["cards"]["0000:3b:00.0"]["devices"] == ["mlx5_0"]


def test_another_value_is_a_failure_naming_the_card_and_the_column_it_read():
    f = features(card(CX4LX), card(CX4LX))
    diffs = e.evaluate(e.validate({"firmware": {"CNP_DSCP_P1": 26}}), node_facts(f))
    assert [(d.field, d.subject, d.severity) for d in diffs] == [
        ("firmware.CNP_DSCP_P1", "0000:3b:00.0", "error"), ("firmware.CNP_DSCP_P1", "0000:5e:00.0", "error")]
    assert diffs[0].message == ("0000:3b:00.0 (mlx5_0): CNP_DSCP_P1 is 48 (next boot; the query has no Current "
                                "column), expected 26")
    assert (diffs[0].expected, diffs[0].actual) == (26, "48")


def test_a_reset_pending_to_another_value_is_a_warning_current_wins():
    f = features(card(CX6), card(CX6))
    found, _ = held({"firmware": {"PCI_WR_ORDERING": "per_mkey"}}, f)
    assert found == [("expect-firmware", "firmware.PCI_WR_ORDERING", "0000:3b:00.0", "warning"),
                     ("expect-firmware", "firmware.PCI_WR_ORDERING", "0000:5e:00.0", "warning")]
    found, _ = held({"firmware": {"PCI_WR_ORDERING": "force_relax"}}, f)
    assert {x[3] for x in found} == {"error"}  # what runs now is per_mkey


def test_a_value_that_cannot_be_read_is_said_never_passed():
    doc = {"firmware": dict(ROCE)}
    found, _ = held(doc, features())  # neither mlxconfig nor mstconfig answered
    assert found == [("expect-firmware", "firmware", "firmware", "info")]
    diff = e.evaluate(e.validate(doc), node_facts(features()))[0]
    assert diff.message.startswith("not checked: neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint) answered")
    assert "firmware.CNP_802P_PRIO_P1" in diff.message
    # a card the tool could not query, and a one-port ConnectX-5 whose query has no _P2 parameter
    failed = {"error": "exit 3: -E- Failed to open device", "params": {}}
    doc = {"firmware": dict(ROCE, ROCE_CC_PRIO_MASK_P2=255)}
    diffs = e.evaluate(e.validate(doc), node_facts(features(failed, card(CX5))))
    assert [(d.field, d.subject, d.severity) for d in diffs] == [
        ("firmware", "0000:3b:00.0", "info"), ("firmware.ROCE_CC_PRIO_MASK_P2", "0000:5e:00.0", "info")]
    assert all(d.message.startswith("not checked: ") for d in diffs)
    assert "Failed to open device" in diffs[0].message
    assert "mlxconfig shows no ROCE_CC_PRIO_MASK_P2 for 0000:5e:00.0 (mlx5_1)" in diffs[1].message
    assert not any(d.severity == "error" for d in diffs)  # the verdict is not short, nor is it a pass


def test_a_device_s_own_values_replace_the_common_ones_on_its_card_only():
    f = features(card(CX4LX), card(CX4LX))
    doc = {"firmware": {"CNP_DSCP_P1": 48, "devices": {"mlx5_1": {"CNP_DSCP_P1": 46}, "mlx5_9": {"SRIOV_EN": 0}}}}
    found, _ = held(doc, f)
    assert found == [("expect-firmware", "firmware.devices.mlx5_1.CNP_DSCP_P1", "0000:5e:00.0", "error"),
                     ("expect-firmware", "firmware.devices.mlx5_9.SRIOV_EN", "mlx5_9", "info")]


@pytest.mark.parametrize("text, says", [
    ("firmware: {PCI_WR_ORDER: per_mkey}", "firmware.PCI_WR_ORDER: not a known key (did you mean PCI_WR_ORDERING?)"),
    ("firmware: {CNP_DSCP_P1: ''}", "firmware.CNP_DSCP_P1: CNP_DSCP_P1: '' is not a firmware value"),
    ("firmware: {CNP_DSCP_P1: [48]}", "firmware.CNP_DSCP_P1: expected"),
    ("firmware: {devices: {mlx5_0: {ATS: 0}}}", "firmware.devices.mlx5_0.ATS: not a known key"),
])
def test_a_bad_firmware_section_is_refused_naming_the_field(text, says):
    with pytest.raises(e.ExpectError) as exc:
        e.load_text(text, "x.yml")
    assert says in exc.value.message


def test_the_schema_knows_exactly_the_parameters_the_source_reads():
    schema = e.schema()
    assert list(schema["$defs"]["nvconfig"]["properties"]) == list(nic_firmware.WATCHED)
    assert set(schema["properties"]["firmware"]["properties"]) == set(nic_firmware.WATCHED) | {"devices"}
    assert set(e.FIRMWARE_HELD) <= set(nic_firmware.WATCHED)


def test_write_expect_takes_what_every_rail_s_card_shows_and_meets_it():
    f = features(card(CX4LX), card(CX4LX))
    facts = node_facts(f)
    doc = e.document_of(facts)
    assert doc["firmware"] == {"PCI_WR_ORDERING": "per_mkey(0)", "ROCE_CC_PRIO_MASK_P1": 255,
                               "ROCE_CC_PRIO_MASK_P2": 255, "CNP_DSCP_P1": 48, "CNP_DSCP_P2": 48,
                               "CNP_802P_PRIO_P1": 6, "CNP_802P_PRIO_P2": 6}
    assert e.evaluate(doc, facts) == []
    text = e.dump(doc)
    assert "firmware:\n  CNP_802P_PRIO_P1: 6\n" in text and e.load_text(text, "w.yml") == doc
    assert e.dump(e.load_text(text, "w.yml")) == text
    # facts travel through doctor's JSON
    again = e.NodeFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert e.document_of(again) == doc
    # cards that disagree, one unread, or no reading: the section is left out
    other = card(CX4LX)
    other["params"]["CNP_DSCP_P1"] = {"next_boot": "26"}
    assert "CNP_DSCP_P1" not in e.document_of(node_facts(features(card(CX4LX), other)))["firmware"]
    assert "firmware" not in e.document_of(node_facts(features(card(CX4LX), {"error": "x", "params": {}})))
    assert "firmware" not in e.document_of(node_facts(features()))
    assert "firmware" in e.unset_fields({"version": 1})


def test_the_fleet_majority_is_kept_per_parameter():
    docs = [{"version": 1, "firmware": {"CNP_DSCP_P1": 48, "PCI_WR_ORDERING": "per_mkey(0)"}},
            {"version": 1, "firmware": {"CNP_DSCP_P1": 48, "PCI_WR_ORDERING": "force_relax(1)"}},
            {"version": 1, "firmware": {"CNP_DSCP_P1": 26, "PCI_WR_ORDERING": "per_mkey(0)"}}]
    m = e.majority(docs)
    assert m.document["firmware"] == {"CNP_DSCP_P1": 48, "PCI_WR_ORDERING": "per_mkey(0)"}
    assert m.dissent["firmware.CNP_DSCP_P1"] == {"26": [2]}
