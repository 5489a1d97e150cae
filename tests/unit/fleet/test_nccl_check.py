"""`fleet validate --tests nccl` judged on real NCCL logs (tests/fixtures/nccl-logs/SOURCES.md):
what NCCL printed is read by doctor's reader and held against the node's plan; the two ranks'
own result lines (fleet/nccl_probe_script.py's format) give the bus bandwidth."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from rocetune.errors import RocetuneError
from rocetune.fleet import nccl_check

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"
RXE = (LOGS / "rxe-2.20.5-nccl_node0.log").read_text() + (LOGS / "rxe-2.20.5-nccl_node1.log").read_text()
SOCKET = (LOGS / "nccl-1267-2.19.3-ib-no-device-socket.log").read_text()
RXE_PLAN = {"NCCL_IB_HCA": "rxe0", "NCCL_IB_GID_INDEX": "1", "NCCL_SOCKET_IFNAME": "eth0"}


def ranks(busbw: float = 1.5, ok: bool = True) -> str:
    return "".join(f"rocetune-nccl-check: rank {r} ok={ok} bytes=67108864 seconds=0.9 busbw_gbs={busbw}\n"
                   for r in (0, 1))


def test_the_rdma_path_nccl_took_is_the_plans_and_the_figure_is_kept():
    r = nccl_check.judge("n1", 0, RXE + ranks(), RXE_PLAN, nccl_check.Settings())
    assert r["status"] == "pass", r
    assert r["busbw_gbs"] == 1.5 and [x["rank"] for x in r["ranks"]] == [0, 1]
    assert {p["network"] for p in r["processes"]} == {"IB"}
    assert {d["name"] for p in r["processes"] for d in p["devices"]} == {"rxe0:1"}
    assert r["nccl_warnings"] >= 1  # "Could not find real path of rxe0": counted, not fatal


def test_nccl_on_sockets_where_the_plan_wants_rdma_fails_with_the_reason():
    plan = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "ens7"}
    r = nccl_check.judge("n1", 0, SOCKET + ranks(), plan, nccl_check.Settings())
    assert r["status"] == "fail" and "nccl-log-socket-fallback" in {d["id"] for d in r["differences"]}
    assert "Socket" in r["why"]


def test_below_the_baseline_fails_and_a_node_without_torch_is_skipped():
    s = nccl_check.Settings(baseline={"n1": 2.0}, fraction=0.9)
    r = nccl_check.judge("n1", 0, RXE + ranks(1.5), RXE_PLAN, s)
    assert r["status"] == "fail" and "below 90% of the baseline's 2 GB/s" in r["why"]
    assert nccl_check.judge("n2", 0, RXE + ranks(1.9), RXE_PLAN, s)["status"] == "pass"  # no baseline for n2
    skipped = nccl_check.judge("n1", 1, "ModuleNotFoundError: No module named 'torch'\n", RXE_PLAN, s)
    assert skipped["status"] == "skipped" and "python3 on the node" in skipped["why"]


def test_a_rank_that_did_not_finish_is_an_error_with_the_logs_tail():
    r = nccl_check.judge("n1", 1, RXE + "rocetune-nccl-check: rank 0 ok=True bytes=1 seconds=1 busbw_gbs=1\n",
                         RXE_PLAN, nccl_check.Settings())
    assert r["status"] == "error" and r["error"] == "exited 1" and r["evidence"]
    r = nccl_check.judge("n1", 0, RXE + ranks(ok=False), RXE_PLAN, nccl_check.Settings())
    assert r["status"] == "error" and "did not complete" in r["error"]


def test_the_node_command_sources_the_env_and_quotes_what_it_is_given():
    cmd = nccl_check.command(nccl_check.Settings(env_file="/etc/x y.env", python="/opt/py 3/bin/python"))
    words = shlex.split(cmd)
    assert words[:4] == ["set", "-a", "&&", "."] and "/etc/x y.env" in words and "/opt/py 3/bin/python" in words
    assert "NCCL_DEBUG=INFO" in cmd and "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH" in cmd
    # set after the env file: a node whose rank cannot open a NIC fails the check instead of hanging it
    assert words.index("NCCL_IGNORE_NET_MISMATCH=0") > words.index("/etc/x y.env")


def test_baseline_is_read_from_an_earlier_validate_result(tmp_path):
    f = tmp_path / "v.json"
    f.write_text(json.dumps({"hosts": {"n1": {"nccl": {"busbw_gbs": 2.5}}, "n2": {"error": "down"}}}))
    assert nccl_check.load_baseline(str(f)) == {"n1": 2.5}
    f.write_text(json.dumps({"hosts": {"n2": {"error": "down"}}}))
    with pytest.raises(RocetuneError, match="no host with an NCCL figure"):
        nccl_check.load_baseline(str(f))
    f.write_text("[" * 100000)
    with pytest.raises(RocetuneError, match="not JSON"):
        nccl_check.load_baseline(str(f))


def test_a_variable_nccl_read_that_is_not_the_plans_fails():
    plan = dict(RXE_PLAN, NCCL_IB_HCA="=rxe0:1")  # the node's env file is older than its plan
    r = nccl_check.judge("n1", 0, RXE + ranks(), plan, nccl_check.Settings())
    assert r["status"] == "fail" and "the plan sets NCCL_IB_HCA==rxe0:1" in r["why"]


def test_the_script_sent_to_the_nodes_prints_what_the_judge_reads():
    source = nccl_check.SCRIPT.read_text()
    compile(source, str(nccl_check.SCRIPT), "exec")
    line = 'print("rocetune-nccl-check: rank %d ok=%s bytes=%d seconds=%.6f busbw_gbs=%.3f"'
    assert line in source
    sample = "rocetune-nccl-check: rank %d ok=%s bytes=%d seconds=%.6f busbw_gbs=%.3f" % (1, True, 4, 0.5, 2.25)
    assert nccl_check.RESULT.search(sample).groups() == ("1", "True", "4", "0.500000", "2.250")


def test_the_check_turns_nccls_diagnostics_on_and_reads_their_lines():
    assert "NCCL_RUN_DIAGNOSTICS=1 NCCL_RUN_RAS_DIAGNOSTICS=1" in nccl_check.command(nccl_check.Settings())
    # NCCL's own published DIAG lines (SOURCES.md: nccl-docs-2.31.2-*), after the job's log
    diag = (LOGS / "nccl-docs-2.31.2-ras-diagnostics-mismatch.log").read_text()
    r = nccl_check.judge("n1", 0, RXE + diag + ranks(), RXE_PLAN, nccl_check.Settings())
    assert r["status"] == "pass"  # NCCL's diagnostics are informational: a warning, not a failure
    assert [d["check"] for d in r["diagnostics"]] == ["NCCL environment"] * 4
    assert [d["severity"] for d in r["differences"] if d["id"] == "nccl-log-diag"] == ["warning"]
