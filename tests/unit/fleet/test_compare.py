"""The comparison's rules on results built in the test: the reference is the value most hosts
hold, a tie names every host, unknown values do not vote, a manifest value missed is drift."""

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


def _result(host, features, env=None, findings=None, **extra):
    doc = {"schema": SCHEMA, "host": host, "probe": {"features": copy.deepcopy(features),
                                                     "plan": {"env": env or {"NCCL_IB_TIMEOUT": "20"}}},
           "doctor": {"findings": findings or []}, "gathered_at": None, "error": None}
    doc.update(extra)
    return from_doc(host, doc)


def _set_mtu(result, device, mtu):
    for d in result.features["rdma"]["devices"]:
        if d["name"] == device:
            for p in d["ports"]:
                p["netdev_mtu"] = mtu


def test_most_hosts_set_the_reference_and_the_other_is_odd(features):
    hosts = [_result(f"n{i}", features) for i in range(3)]
    _set_mtu(hosts[1], "mlx5_0", 4200)
    report = compare(hosts)
    row = next(r for r in report.rows if r.key == "mtu")
    assert row.reference == [9000] and (row.holders, row.known) == (2, 3)
    assert {h: c.status for h, c in row.cells.items()} == {"n0": "ok", "n1": "odd", "n2": "ok"}
    assert report.differing == ["n1"] and [h.host for h in report.hosts][0] == "n1"


def test_unknown_values_do_not_vote(features):
    hosts = [_result(f"n{i}", features) for i in range(3)]
    for h in hosts[:2]:
        for d in h.features["rdma"]["devices"]:
            d["fw_ver"] = None
    hosts[2].features["rdma"]["devices"][0]["fw_ver"] = "1.0"
    row = next(r for r in compare(hosts).rows if r.key == "nic.fw")
    assert row.known == 1 and row.cells["n0"].status == "unknown"


def test_a_failed_host_is_listed_first_and_not_compared(features):
    hosts = [_result("a", features), from_doc("b", {"host": "b", "error": "timeout"}), _result("c", features)]
    report = compare(hosts)
    assert [h.host for h in report.hosts] == ["b", "a", "c"]
    assert report.failed[0].error == "gather failed: timeout"
    assert all("b" not in r.cells for r in report.rows) and not report.clean


def test_manifest_checks_name_the_key(features):
    checks = manifest.checks({"mtu": 9000, "gid_index": 3, "hca_count": 8, "nic_fw": "28.39.1002",
                              "env": {"NCCL_IB_TIMEOUT": 20, "NCCL_IB_HCA": None}})
    report = compare([_result("a", features)], checks)
    assert report.clean
    report = compare([_result("a", features)], manifest.checks({"gid_index": 5, "env": {"NCCL_IB_HCA": "mlx5"}}))
    missed = {e["fact"]: e["reasons"] for e in report.entries()}
    assert missed["gid_index"] == [{"kind": "manifest", "key": "gid_index", "expected": "5"}]
    assert missed["env.NCCL_IB_HCA"][0]["key"] == "env.NCCL_IB_HCA"


@pytest.mark.parametrize("doc, word", [
    ({"mtu": "9000"}, "mtu"), ({"mtu": True}, "mtu"), ({"hcas": "mlx5_0"}, "hcas"),
    ({"nccl_version": "2.21"}, "nccl_version"), ({"link": {"lanes": 16}}, "link.lanes"),
    ({"env": {"1BAD": 1}}, "1BAD"), ({"mtuu": 1}, "mtuu"), ([], "mapping")])
def test_bad_manifest_values(doc, word):
    with pytest.raises(ValueError, match=word):
        manifest.checks(doc)


def test_result_file_shapes(features):
    envelope = {"schema": "rocetune.result/1", "data": {"features": features, "plan": {"env": {"A": "1"}}}}
    r = from_doc("h", {"host": "other", "probe": envelope, "error": None})
    assert r.ok and r.plan_env == {"A": "1"} and r.doctor_findings is None
    assert r.warnings == ["h.json names host 'other'; reported as h"]
    assert "rocetune.fleet-host/9" in from_doc("h", {"schema": "rocetune.fleet-host/9"}).error
    assert "schema_version" in from_doc("h", {"probe": {"features": {"schema_version": 2}}}).error
    assert from_doc("h", []).error == "result file is not a JSON object"


def test_a_net_plugin_on_one_node_only_is_odd(features):
    hosts = [_result(f"n{i}", features) for i in range(3)]
    plug = {"path": "/usr/lib/x86_64-linux-gnu/libnccl-net.so.1.14.2", "names": ["libnccl-net.so"], "kind": "net",
            "variant": None, "version": "1.14.2", "via": ["system"], "controlled_by": None}
    hosts[2].features["kernel"]["nccl"]["plugins"] = [plug]
    row = next(r for r in compare(hosts).rows if r.key == "nccl.plugins")
    assert row.reference == [] and row.cells["n2"].status == "odd"
    assert row.cells["n2"].fact.value == ["net libnccl-net.so.1.14.2 1.14.2"]
    hosts[2].features["kernel"]["nccl"]["plugin_env"] = {"NCCL_NET_PLUGIN": "none"}
    assert next(r for r in compare(hosts).rows if r.key == "nccl.plugins").cells["n2"].status == "ok"


def test_a_result_holding_another_hosts_name_is_a_copy_not_a_healthy_host(features):
    from rocetune.fleet.compare import compare

    envelope = {"schema": "rocetune.result/1", "data": {"features": features, "plan": {"env": {"A": "1"}}}}
    good = from_doc("gpu01", {"host": "gpu01", "probe": envelope, "error": None})
    copied = from_doc("gpu09", {"host": "gpu01", "probe": envelope, "error": None})  # cp gpu01.json gpu09.json
    alias = from_doc("gpu10", {"host": "node-a", "probe": envelope, "error": None})  # a name no file has
    report = compare([good, copied, alias])
    assert [h.host for h in report.failed] == ["gpu09"]
    assert "gpu09.json holds the result of host 'gpu01', not of gpu09" in copied.error
    assert alias.ok and alias.warnings == ["gpu10.json names host 'node-a'; reported as gpu10"]


def test_differences_are_weighed_by_what_they_cost_a_job():
    from rocetune.fleet.compare import Cell, Row, impact
    from rocetune.fleet.facts import Fact

    picked = Row("gid_index", cells={"h": Cell(Fact([5], detail="NCCL's own pick: the first RoCE v2 IPv4 GID"))})
    pinned = Row("gid_index", cells={"h": Cell(Fact([3], detail="pinned by NCCL_IB_GID_INDEX"))})
    rails = Row("hca.names", cells={"h": Cell(Fact(["mlx5_0:1"]))})
    assert impact(picked, picked.cells["h"]) == "bookkeeping"
    assert impact(pinned, pinned.cells["h"]) == "breaks jobs"
    assert impact(rails, rails.cells["h"]) == "breaks jobs"
    kernel = Row("kernel", cells={"h": Cell(Fact("6.8.0-1018"))})
    memlock = Row("warning.memlock-limited", cells={"h": Cell(Fact(True))})
    assert impact(kernel, kernel.cells["h"]) == "bookkeeping" and impact(memlock, memlock.cells["h"]) == "slows jobs"


def test_the_text_report_says_what_doctor_found_not_only_its_ids(features):
    from rocetune.render.fleet_text import report_text

    pfc = {"id": "doctor-rail-qos-mismatch", "severity": "error", "subject": "enp94s0np0",
           "message": "enp94s0np0: PFC is off on priority 3, the QoS plan's lossless class; " + "x" * 200}
    hosts = [_result(f"gpu0{i}", features, findings=[pfc] if i == 3 else []) for i in (1, 2, 3)]
    text = report_text(compare(hosts))
    line = next(ln for ln in text.splitlines() if "doctor-rail-qos-mismatch: enp94s0np0: PFC is off" in ln)
    assert line.endswith("...") and len(line.strip()) <= 160


def test_the_page_lists_the_warnings_every_host_shares(features):
    from rocetune.render.fleet_html import report_html

    memlock = {"id": "memlock-limited", "severity": "warning", "subject": "host",
               "message": "services get an 8 MiB memlock"}
    report = compare([_result(f"gpu0{i}", features, findings=[memlock]) for i in (1, 2, 3)])
    assert report.clean and [r.key for r in report.shared] == ["warning.memlock-limited"]
    page = report_html(report)
    assert "sharing 1 warning(s)" in page and "<h2>Warnings every host shares</h2>" in page
    assert "services get an 8 MiB memlock" in page
