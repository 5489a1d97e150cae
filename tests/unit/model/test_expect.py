"""The expectations document: read, refused with the field named, written back the same, and a
node's facts held against it; a fleet's majority."""

import pytest

from rocetune.errors import ExitCode
from rocetune.model import expect as e


def _rail(i, **kw):
    base = dict(name=f"mlx5_{i}:1", device=f"mlx5_{i}", rail=True, link_layer="Ethernet", state="ACTIVE",
                speed_gbps=400, mtu=9000, ipv4_gid=True, pcie_speed_gts=32.0, pcie_width=16,
                firmware="28.39.1002", local_gpus=[i])
    base.update(kw)
    return e.PortFacts(**base)


def _node(n=8, **kw):
    base = dict(gpus=["NVIDIA H100 80GB HBM3"] * n, ports=[_rail(i) for i in range(n)], gpudirect="dmabuf",
                versions={"nvidia_driver": "570.124.06", "rdma_core": "50", "nccl": "2.26.2",
                          "kernel": "6.8.0-1017-nvidia"},
                qos_plan="/etc/rocetune/qos.yml", env={"NCCL_IB_TC": "106", "NCCL_IB_HCA": "=mlx5_0:1"})
    base.update(kw)
    return e.NodeFacts(**base)


def test_a_document_reads_with_defaults_filled_and_env_values_as_text():
    doc = e.load_text("rails: {count: 8}\nenv: {NCCL_IB_TC: 106, NCCL_IB_HCA: null}\n", "x.yml")
    assert doc == {"version": 1, "rails": {"count": 8}, "env": {"NCCL_IB_TC": "106", "NCCL_IB_HCA": None}}
    assert e.load_text("", "empty.yml") == {"version": 1}


@pytest.mark.parametrize("text, says", [
    ("rails: {cuont: 8}", "x.yml: rails.cuont: not a known key (did you mean count?)"),
    ("gpus: {count: -1}", "gpus.count: expected an integer in 0..1024, got -1"),
    ("version: 2", "version: expected one of 1, got 2"),
    ("gpudirect: yes", "gpudirect: expected a string, got true"),
    ("rails: {link_layer: ethernet}", 'rails.link_layer: expected one of "Ethernet", "InfiniBand"'),
    ("env: {1X: a}", "env.1X: not an environment variable name"),
    ("rails: [1, 2]", "rails: expected an object"),
    ("- 1", "expected a mapping of fields"),
    ("gpus: {count: 8}\ngpus: {count: 4}", "duplicate key 'gpus'"),
])
def test_a_bad_document_is_an_input_error_naming_the_field(text, says):
    with pytest.raises(e.ExpectError) as exc:
        e.load_text(text, "x.yml")
    assert says in exc.value.message
    assert exc.value.code == ExitCode.INPUT


def test_a_written_document_reads_back_the_same_and_is_byte_stable():
    doc = e.document_of(_node())
    text = e.dump(doc, ["written from a known-good node"])
    assert text.startswith("# written from a known-good node\nversion: 1\ngpus:\n")
    assert e.load_text(text, "w.yml") == doc
    assert e.dump(e.load_text(text, "w.yml"), ["written from a known-good node"]) == text


def test_unset_fields_are_named():
    assert e.unset_fields({"version": 1, "rails": {"count": 8}, "env": {"A": None}})[:3] == [
        "gpus.count", "gpus.model", "rails.per_gpu"]
    assert "env" not in e.unset_fields({"env": {"A": None}})
    assert "gpudirect" in e.unset_fields(None)


def test_a_known_good_node_meets_its_own_document():
    node = _node()
    doc = e.document_of(node)
    assert doc["rails"]["devices"][:3] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1"]
    assert doc["rails"]["per_gpu"] is True and doc["qos"] == {"plan_required": True}
    assert doc["env"] == {"NCCL_IB_TC": "106"}  # only the traffic class: the rest follows the host
    assert e.evaluate(doc, node) == []


def test_a_lost_rail_is_a_failure_named_three_ways():
    doc = e.document_of(_node())
    lost = _node(ports=[_rail(i) for i in range(8) if i != 4], gpus_without_rail=[4])
    found = {(d.check, d.field, d.subject, d.severity) for d in e.evaluate(doc, lost)}
    assert ("expect-rails", "rails.devices", "mlx5_4:1", "error") in found
    assert ("expect-rails", "rails.count", "rails", "error") in found
    assert ("expect-rails", "rails.per_gpu", "GPU4", "error") in found


def test_a_rail_present_but_left_out_says_why():
    doc = {"rails": {"devices": ["mlx5_4:1"]}}
    node = _node(ports=[_rail(4, rail=False, why_not="no IPv4/IPv6 RoCE v2 GID", ipv4_gid=False)])
    (d,) = e.evaluate(doc, node)
    assert d.severity == "error" and "not used: no IPv4/IPv6 RoCE v2 GID" in d.message


def test_slower_narrower_and_other_mtu_rails_fail_faster_ones_do_not():
    doc = {"rails": {"speed_gbps": 400, "mtu": 9000, "pcie_width": 16, "pcie_speed_gts": 32}}
    node = _node(ports=[_rail(0, speed_gbps=200), _rail(1, mtu=1500), _rail(2, pcie_width=8),
                        _rail(3, pcie_speed_gts=16.0), _rail(4, speed_gbps=800)])
    found = {(d.subject, d.field) for d in e.evaluate(doc, node)}
    assert found == {("mlx5_0:1", "rails.speed_gbps"), ("mlx5_1:1", "rails.mtu"),
                     ("mlx5_2:1", "rails.pcie_width"), ("mlx5_3:1", "rails.pcie_speed_gts")}


def test_patterns_match_rails_and_an_unnamed_rail_is_a_warning():
    node = _node(n=2)
    assert e.evaluate({"rails": {"devices": ["mlx5_*"]}}, node) == []
    (d,) = e.evaluate({"rails": {"devices": ["ib*"]}}, node)[:1]
    assert d.severity == "error" and d.message == "no rail matches ib*"
    found = e.evaluate({"rails": {"devices": ["mlx5_0"]}}, node)
    assert [(d.subject, d.severity) for d in found] == [("mlx5_1:1", "warning")]


def test_more_gpus_or_rails_than_expected_is_a_warning_fewer_an_error():
    assert [d.severity for d in e.evaluate({"gpus": {"count": 4}}, _node())] == ["warning"]
    assert [d.severity for d in e.evaluate({"gpus": {"count": 8}}, _node(n=7))] == ["error"]
    assert [d.severity for d in e.evaluate({"rails": {"count": 9}}, _node())] == ["error"]


def test_versions_gpudirect_qos_and_env():
    doc = {"versions": {"nccl": "2.26.*", "nic_firmware": "28.39.1002", "nvidia_driver": "570.124.06"},
           "gpudirect": "peermem", "qos": {"plan_required": True}, "env": {"NCCL_IB_TC": "106", "NCCL_IB_SL": None}}
    node = _node(n=2, ports=[_rail(0), _rail(1, firmware="28.36.1010")], qos_plan=None, gpudirect="dmabuf",
                 versions={"nvidia_driver": "550.54.15", "nccl": "2.26.5"}, env={})
    got = {(d.check, d.subject): d.message for d in e.evaluate(doc, node)}
    assert got[("expect-versions", "mlx5_1")] == "mlx5_1's firmware is 28.36.1010, expected 28.39.1002"
    assert got[("expect-versions", "versions.nvidia_driver")].startswith("the NVIDIA driver is 550.54.15")
    assert ("expect-versions", "versions.nccl") not in got  # 2.26.5 matches 2.26.*
    assert got[("expect-gpudirect", "gpudirect")] == "GPUDirect RDMA is dmabuf, expected peermem"
    assert ("expect-qos-plan", "qos") in got
    assert got[("expect-env", "NCCL_IB_TC")] == "the plan does not set NCCL_IB_TC (expected 106)"
    assert got[("expect-env", "NCCL_IB_SL")] == "the plan does not set NCCL_IB_SL"
    assert e.evaluate({"gpudirect": "any"}, node) == []


def test_facts_travel_as_plain_data():
    import json

    node = _node(n=2)
    assert e.NodeFacts.from_dict(json.loads(json.dumps(node.to_dict()))) == node


def test_the_majority_keeps_what_most_nodes_agree_on_and_names_the_others():
    good = e.document_of(_node())
    lost = e.document_of(_node(ports=[_rail(i) for i in range(8) if i != 4], gpus_without_rail=[4]))
    old_fw = e.document_of(_node(ports=[_rail(i, firmware="28.36.1010") for i in range(8)]))
    m = e.majority([good, good, lost, old_fw])
    assert m.document["rails"] == good["rails"] and m.document["versions"] == good["versions"]
    assert m.agree["rails.count"] == 3
    assert m.dissent["rails.count"] == {"7": [2]}
    assert m.dissent["versions.nic_firmware"] == {'"28.36.*"': [3]}
    assert m.undecided == []


def test_a_field_no_value_wins_is_left_out():
    a, b = {"versions": {"nccl": "2.26.2"}}, {"versions": {"nccl": "2.27.3"}}
    m = e.majority([a, b])
    assert "versions" not in m.document and m.undecided == ["versions.nccl"]
    # a field most documents lack is not kept either
    m = e.majority([a, {}, {}])
    assert "versions" not in m.document
