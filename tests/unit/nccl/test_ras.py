"""ncclras answers read and judged: NCCL's published samples (tests/fixtures/ncclras, verbatim), and
answers built from client_support.cc's format strings (v2.30.7-1, the line numbers in rocetune.nccl.ras)
where no published one shows the case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocetune.nccl.log import read_log
from rocetune.nccl.ras import RasError, judge, read_status

RAS = Path(__file__).resolve().parents[2] / "fixtures" / "ncclras"
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"


def sample(*names: str) -> str:
    return "\n".join((RAS / n).read_text() for n in names)


def ids(verdicts):
    return {(v.id, v.severity) for v in verdicts}


def test_the_job_summary_and_a_running_group():
    st = read_status(sample("docs-2.31.2-job-summary.txt"))
    assert st.job == {"nodes": 4, "processes_per_node": 8, "gpus_per_process": 1, "processes": 32, "gpus": 32}
    (g,) = read_status(sample("docs-2.31.2-status-ok.txt")).groups
    assert (g.group, g.comms, g.nodes, g.ranks_per_comm, g.ranks_in_group, g.status, g.errors) == (
        0, 8, 4, 4, 32, "RUNNING", ["OK"])


def test_one_running_ok_poll_is_no_proof_of_progress():
    assert ids(judge(read_status(sample("docs-2.31.2-status-ok.txt")))) == {("ras-one-poll", "info")}


def test_a_mismatch_is_info_on_one_poll_and_stuck_on_two_naming_the_ranks_behind():
    # the page prints the Warnings section "underneath" the group line: two blocks of one answer, joined
    text = sample("docs-2.31.2-status-mismatch.txt", "docs-2.31.2-warnings-mismatch.txt")
    one = judge(read_status(text))
    assert ("ras-mismatch", "info") in ids(one) and not any(v.id == "ras-stuck" for v in one)
    (stuck,) = [v for v in judge(read_status(text), read_status(text)) if v.id == "ras-stuck"]
    assert stuck.severity == "error" and stuck.subject == "#0-0"
    assert stuck.message.endswith("the suspects are the 6 ranks behind: 0, 2, 3, 4, 5, 7")


def test_counts_that_moved_between_polls_are_no_stuck_communicator():
    text = sample("docs-2.31.2-status-mismatch.txt", "docs-2.31.2-warnings-mismatch.txt")
    later = text.replace("operation 6650", "operation 7012").replace("operation 6649", "operation 7011")
    assert not any(v.id == "ras-stuck" for v in judge(read_status(text), read_status(later)))


def _ahead(n_ahead: int = 2, size: int = 32) -> str:
    """A MISMATCH where RAS names the ranks ahead (the nccl#1911 case: two ranks ahead, 30 behind), built
    from client_support.cc v2.30.7-1 :1206/:1240 (the table), :1440, :1574, :1603, :1614."""
    rows = ("Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
            "    #  in group  per comm  per node  per comm  in group\n"
            "%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s\n" % (0, 1, 4, "8", size, size, "RUNNING", "MISMATCH"))
    lines = ["", "Warnings", "========", "", "#%d-%d (%016x) MISMATCH" % (0, 0, 0x27a079b828ff1a75),
             "  Communicator ranks have different %s operation counts" % "AllReduce",
             "  %d ranks have launched up to operation %d" % (size - n_ahead, 811),
             "  %d ranks have launched up to operation %d" % (n_ahead, 812)]
    lines += ["  Rank %d -- GPU %s managed by process %d on node %s" % (r, str(r % 8), 4000 + r, "10.0.0.%d" % (r // 8))
              for r in (9, 17)[:n_ahead]]
    return rows + "\n".join(lines) + "\n"


def test_when_ras_names_the_ranks_ahead_the_ones_behind_are_the_suspects():
    st = read_status(_ahead())
    (stuck,) = [v for v in judge(st, read_status(_ahead())) if v.id == "ras-stuck"]
    assert "RAS named ranks 9, 17, which are ahead; the suspects are the 30 ranks behind" in stuck.message
    assert "0, 1, 2, 3, 4, 5, 6, 7, 8, 10" in stuck.message and " 9," not in stuck.message.split("behind")[1]


def test_a_process_that_stopped_is_incomplete_then_dead():
    st = read_status(sample("docs-2.31.2-status-incomplete.txt"))
    (row,) = st.groups
    assert row.errors == ["INCOMPLETE"]
    v = judge(st)
    assert ("ras-incomplete", "warning") in ids(v)
    assert any("process 3487984 on 172.16.64.213 (GPU 5)" in x.message for x in v)
    assert any("missing rank(s) 21" in x.message for x in v)
    dead = judge(st, read_status(sample("docs-2.31.2-status-dead.txt")))
    assert ("ras-dead", "error") in ids(dead) and ("ras-incomplete", "error") in ids(dead)  # missing in both polls


def test_the_tear_down_sample_is_read_whole():
    st = read_status(sample("docs-2.31.2-status-finalize.txt"))
    assert [g.status for g in st.groups] == ["FINALIZE", "RUNNING", "INIT"]
    (e,) = st.entries
    assert (e.kind, e.comm, e.groups[0]) == ("MISMATCH", "#0-0", (26, "have status UNKNOWN"))
    assert sorted(e.rank_in) == [0, 4, 8, 16, 20, 24]


def test_json_missing_ranks_and_two_polls_without_progress():
    doc = json.loads(sample("docs-2.31.2-status.json"))
    assert ("ras-incomplete", "warning") in ids(judge(read_status(json.dumps(doc))))
    doc["communicators"][0]["missing_ranks"][0]["status"]["considered_dead"] = True
    assert ("ras-dead", "error") in ids(judge(read_status(json.dumps(doc))))
    # a RUNNING communicator whose counts do not move between polls (nccl#1730: RUNNING OK, watchdog fired)
    doc["communicators"][0]["missing_ranks"] = []
    doc["communicators"][0]["ranks"][0]["collective_counts"]["AllReduce"] = 120
    same = read_status(json.dumps(doc))
    assert ("ras-stuck", "error") in ids(judge(same, same))
    doc["communicators"][0]["ranks"][0]["collective_counts"]["AllReduce"] = 121
    assert ("ras-stuck", "error") not in ids(judge(same, read_status(json.dumps(doc))))
    doc["communicators"][0]["ranks"][0]["status"]["async_error"] = 6
    assert ("ras-error", "error") in ids(judge(read_status(json.dumps(doc))))


def test_ras_diagnostics_env_lines_against_the_plan():
    diag = [d for d, _ in read_log(LOGS.joinpath("nccl-docs-2.31.2-ras-diagnostics-mismatch.log").read_text()).diag]
    st = read_status(sample("docs-2.31.2-status-ok.txt"))
    v = [x for x in judge(st, None, {"NCCL_DEBUG": "WARN"}, diag) if x.id == "ras-env-differs"]
    assert [x.message for x in v] == ["ranks {0,1,2,3} run with NCCL_DEBUG=INFO; the plan sets NCCL_DEBUG=WARN"]


@pytest.mark.parametrize("text", ["", "hello\n", "{\"a\": 1}", "{not json"])
def test_what_is_not_an_ncclras_answer_is_refused(text):
    with pytest.raises(RasError):
        read_status(text)


def test_hostile_input_is_bounded():
    st = read_status("Group     Comms\n" + "  " + "9" * 50000 + "\n" + "#0-0 (zz) MISMATCH\n" * 10)
    assert st.groups == [] and st.unread_lines >= 1
    with pytest.raises(RasError):
        read_status(b"x" * ((64 << 20) + 1))


def test_the_release_ras_answers_from_against_the_plans():
    # the JSON sample names NCCL 2.29.1 (ras.rst's "JSON Output")
    st = read_status(sample("docs-2.31.2-status.json"))
    (v,) = [x for x in judge(st, plan_nccl="2.30.7") if x.id == "ras-version-differs"]
    assert v.severity == "warning" and "RAS answers from NCCL 2.29.1; the plan was made for NCCL 2.30.7" in v.message
    assert not [x for x in judge(st, plan_nccl="2.29.1") if x.id == "ras-version-differs"]


def test_the_text_answers_release_header():
    # client_support.cc v2.30.7-1 :575-577, before the job summary
    head = "NCCL version %s compiled with CUDA %s\nCUDA runtime version %d, driver version %d\n\n" % (
        "2.30.7", "12.9", 12090, 13000)
    st = read_status(head + sample("docs-2.31.2-status-ok.txt"))
    assert st.version == "2.30.7" and st.unread_lines == 0
    assert [v.id for v in judge(st, plan_nccl="2.31.2") if v.id == "ras-version-differs"] == ["ras-version-differs"]


def test_json_ranks_that_did_not_move_while_others_did_are_the_suspects():
    doc = json.loads(sample("docs-2.31.2-status.json"))
    comm = doc["communicators"][0]
    second = json.loads(json.dumps(comm["ranks"][0]))
    second["rank"], second["pid"] = 1, 1524345
    comm["ranks"].append(second)
    comm["missing_ranks"] = []
    before = read_status(json.dumps(doc))
    comm["ranks"][0]["collective_counts"]["AllReduce"] = 5
    (v,) = [x for x in judge(before, read_status(json.dumps(doc))) if x.id == "ras-stuck"]
    assert v.severity == "warning" and "rank(s) 1 launched no operation between the two polls" in v.message
