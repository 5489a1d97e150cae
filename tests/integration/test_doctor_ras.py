"""`rocetune doctor --ras` on NCCL's published ncclras samples (tests/fixtures/ncclras): one answer, two
polls in order, and input that is not an ncclras answer."""

from __future__ import annotations

from pathlib import Path

from .clirun import no_traceback, rocetune, rocetune_json

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
RAS = Path(__file__).resolve().parents[1] / "fixtures" / "ncclras"


def doctor(*args):
    code, out = rocetune_json("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--no-counters", *args)
    return code, {(f["id"], f["subject"]): f for f in out["data"]["findings"] if f["id"].startswith("ras-")}, out


def test_a_dead_process_after_an_incomplete_poll_fails_the_node():
    code, found, _ = doctor("--ras", str(RAS / "docs-2.31.2-status-incomplete.txt"),
                              "--ras", str(RAS / "docs-2.31.2-status-dead.txt"))
    assert code == 1 and found[("ras-dead", "RAS")]["severity"] == "error"
    assert "process 3487984 on 172.16.64.213 (GPU 5)" in found[("ras-dead", "RAS")]["message"]
    assert found[("ras-incomplete", "#0-0")]["severity"] == "error"


def test_one_running_ok_answer_is_only_a_note(tmp_path):
    _, found, _ = doctor("--ras", str(RAS / "docs-2.31.2-status-ok.txt"))
    assert {k: f["severity"] for k, f in found.items()} == {("ras-one-poll", "RAS"): "info"}


def test_what_is_not_an_ncclras_answer_is_an_input_error(tmp_path):
    (tmp_path / "x.txt").write_text("hello\n")
    proc = rocetune("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--ras", str(tmp_path / "x.txt"))
    assert proc.returncode == 3 and no_traceback(proc) and "not ncclras output" in proc.stderr
    proc = rocetune("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--ras-addr", "127.0.0.1:1")
    assert proc.returncode == 3 and no_traceback(proc) and "cannot reach RAS" in proc.stderr


def test_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "ras.fifo"
    os.mkfifo(fifo)
    proc = rocetune("--root", str(HOSTS / "dgx-h100-roce"), "doctor", "--no-counters", "--ras", str(fifo))
    assert proc.returncode == 3 and no_traceback(proc) and "--ras" in proc.stderr
