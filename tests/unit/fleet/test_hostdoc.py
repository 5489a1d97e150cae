"""The fleet host document, as fleet gather and the fleet_results module both write it, and as
fleet report reads it back."""

from __future__ import annotations

import json

from rocetune.core import fleet_host_doc as hostdoc
from rocetune.fleet import results

ENVELOPE = {"schema": "rocetune.result/1", "status": "ok", "errors": [],
            "data": {"findings": [], "fleet_facts": {"nics": 8}}}


def test_an_unreachable_host_names_ssh_in_one_line_without_the_banner():
    msg = ("@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
           "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
           "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\nHost key verification failed.")
    doc = hostdoc.from_registered("gpu07", {"unreachable": True, "msg": msg}, "2026-11-27T00:00:00Z")
    assert doc["error"] == ("unreachable: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! "
                            "Host key verification failed.")
    assert doc["doctor"] is None and doc["schema"] == hostdoc.SCHEMA == results.SCHEMA


def test_a_host_where_doctor_did_not_run_or_gave_no_result_says_why():
    assert "did not run" in hostdoc.from_registered("gpu01", None, None)["error"]
    doc = hostdoc.from_registered("gpu01", {"rc": 127, "stdout": "", "stderr": "sh: rocetune: not found\n"}, None)
    assert doc["error"] == "rocetune doctor exited 127 without a result: sh: rocetune: not found"
    doc = hostdoc.from_registered("gpu01", {"rc": 1, "stdout": "{not json", "stderr": ""}, None)
    assert doc["error"] == "rocetune doctor exited 1 without a result: {not json"


def test_a_result_is_kept_whole_and_read_back_by_fleet_report():
    registered = {"rc": 5, "stdout": json.dumps(ENVELOPE), "stderr": ""}
    doc = hostdoc.from_registered("gpu01", registered, "2026-11-27T00:00:00Z")
    assert doc["error"] is None and doc["doctor"] == ENVELOPE
    assert sorted(doc) == sorted(hostdoc.new_doc("x", None)) == ["doctor", "error", "gathered_at", "host",
                                                                 "probe", "schema"]
    text = hostdoc.dumps(doc)
    assert text == hostdoc.dumps(json.loads(text)) and text.endswith("}\n")
    res = results.from_doc("gpu01", json.loads(text), need_features=False)
    assert res.gathered_at == "2026-11-27T00:00:00Z" and res.host == "gpu01"
