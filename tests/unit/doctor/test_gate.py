"""The gate's decisions: exit codes as Slurm reads them, what is done to a node in each state,
scontrol's node output read, and the deadline that bounds the checks."""

from __future__ import annotations

import os
import time

import pytest

from rocetune.doctor import deadline, gate
from rocetune.doctor.slurm_node import NodeState, parse_show_node
from rocetune.errors import ExitCode, RocetuneError
from rocetune.model.finding import Finding


def _f(fid, severity, message="m"):
    return Finding(id=fid, severity=severity, subject="s", message=message, kind="doctor", source="", fix="")


FAILING = gate.judge([_f("doctor-rail-mtu-mismatch", "error"), _f("w", "warning")])
WARNINGS = gate.judge([_f("doctor-memlock-services", "warning")])
HEALTHY = gate.judge([_f("n", "info")])
TOOL = gate.tool_error("--root /x: not a directory", 3)
TIMEOUT = gate.timed_out(20)


def test_outcomes():
    assert (FAILING.status, WARNINGS.status, HEALTHY.status) == ("failing", "warnings", "healthy")
    assert FAILING.reason.startswith("s doctor-rail-mtu-mismatch: m") and HEALTHY.reason == ""
    assert gate.judge([_f("w", "warning")], drain_on_warnings=True).status == "failing"
    assert gate.tool_error("x", 0).tool_code == 70  # never an exit status that reads as a verdict
    assert gate.tool_error("x", 5).tool_code == 70


@pytest.mark.parametrize("outcome, prolog, health", [
    (FAILING, 1, 1), (TIMEOUT, 1, 1), (WARNINGS, 0, 0), (HEALTHY, 0, 0),
    (TOOL, 0, 3),  # a prolog's non-zero exit drains; a health check's is only logged
    (gate.tool_error("bug", 70), 0, 70)])
def test_exit_codes_as_slurm_reads_them(outcome, prolog, health):
    assert gate.exit_code("prolog", outcome) == prolog
    assert gate.exit_code("health-check", outcome) == health


IDLE = NodeState("n1", "IDLE")
OURS = NodeState("n1", "IDLE", {"DRAIN"}, "rocetune: s doctor-rail-mtu-mismatch: m")
OURS_OLD = NodeState("n1", "IDLE", {"DRAIN"}, "rocetune: expect-rails rails: 7 rails")
ADMIN = NodeState("n1", "IDLE", {"DRAIN"}, "maintenance: fan swap")
DOWN = NodeState("n1", "DOWN", set(), "Not responding")


@pytest.mark.parametrize("outcome, state, kind", [
    (FAILING, IDLE, "drain"), (TIMEOUT, IDLE, "drain"),
    (FAILING, OURS, "none"),  # already drained by rocetune for this reason
    (FAILING, OURS_OLD, "drain"),  # the reason is brought up to date
    (FAILING, ADMIN, "none"), (FAILING, DOWN, "none"),  # someone else's: left as it is
    (HEALTHY, OURS, "resume"), (WARNINGS, OURS_OLD, "resume"),
    (HEALTHY, ADMIN, "none"), (HEALTHY, DOWN, "none"), (HEALTHY, IDLE, "none"),
    (TOOL, IDLE, "none"), (TOOL, OURS, "none")])  # a broken tool neither drains nor resumes
def test_node_actions(outcome, state, kind):
    assert gate.node_action(outcome, state).kind == kind


def test_the_line_names_skipped_checks_before_what_was_done():
    line = gate.line("health-check", "n1", FAILING, gate.node_action(FAILING, IDLE), skipped=["b", "a", "b"])
    assert line.startswith("rocetune: FAIL n1: s doctor-rail-mtu-mismatch: m")
    assert line.endswith(" [skipped by the check configuration: a, b] [drained]"), line
    assert "skipped" not in gate.line("prolog", "n1", HEALTHY)


def test_drain_reason_matches_what_scontrol_gives_back():
    assert gate.drain_reason(FAILING) == OURS.reason


SHOW_NODE = """NodeName=node02 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.52
   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=lab
   Reason=rocetune: doctor-rail-mtu-mismatch enp64s0np0: enp64s0np0 has MTU 1500 [root@2026-11-27T20:01:02]
"""


def test_scontrol_show_node_is_read():
    s = parse_show_node(SHOW_NODE, "node02")
    assert (s.base, s.flags, s.drained) == ("IDLE", {"DRAIN"}, True)
    assert s.reason == "rocetune: doctor-rail-mtu-mismatch enp64s0np0: enp64s0np0 has MTU 1500"
    s = parse_show_node("   State=DOWN* ThreadsPerCore=1\n   Reason=Not responding [slurm@2026-11-27T20:01:02]\n", "n")
    assert s.base == "DOWN" and "NOT_RESPONDING" in s.flags and s.drained and s.reason == "Not responding"
    s = parse_show_node("   State=MIXED ThreadsPerCore=1\n", "n")
    assert not s.drained and s.reason is None


def test_deadline_returns_the_value_an_error_or_a_timeout():
    assert deadline.run(lambda: {"a": [1, 2]}, 10).value == {"a": [1, 2]}

    def bad_input():
        raise RocetuneError("--root /x: not a directory", code=ExitCode.INPUT)

    done = deadline.run(bad_input, 10)
    assert (done.error, done.code) == ("--root /x: not a directory", 3)

    def bug():
        return {}["missing"]

    done = deadline.run(bug, 10)
    assert done.code == 70 and "KeyError" in done.error

    started = time.monotonic()

    def hangs():
        os.system("sleep 30")  # a tool that never answers: its process group is killed too
        return 1

    done = deadline.run(hangs, 0.5)
    assert done.timed_out and time.monotonic() - started < 5


def test_deadline_child_output_never_reaches_the_callers_stdout(capfd):
    def noisy():
        print("noise")
        os.write(2, b"more noise\n")
        return 1

    assert deadline.run(noisy, 10).value == 1
    out, err = capfd.readouterr()
    assert "noise" not in out and "noise" not in err


def test_what_slurm_may_not_keep_goes_to_syslog(monkeypatch, tmp_path, capsys):
    """A prolog that exits 0 leaves its output nowhere: a tool error is said to syslog
    (daemon.err, tagged rocetune[pid]); a verdict with nothing to do is not."""
    import syslog
    from pathlib import Path

    from rocetune.cli.main import main

    sent = []
    monkeypatch.setattr(syslog, "openlog", lambda *a: sent.append(("open", *a)))
    monkeypatch.setattr(syslog, "syslog", lambda *a: sent.append(("log", *a)))
    monkeypatch.setattr(syslog, "closelog", lambda: None)
    assert main(["doctor", "--gate", "prolog", "--node", "n1", "--root", str(tmp_path / "nope")]) == 0
    assert sent[0] == ("open", "rocetune", syslog.LOG_PID, syslog.LOG_DAEMON)
    assert sent[1][:2] == ("log", syslog.LOG_ERR)
    assert sent[1][2].startswith("rocetune: TOOL ERROR, node not judged: ") and "nope" in sent[1][2]
    sent.clear()
    warns = Path(__file__).resolve().parents[2] / "fixtures" / "hosts" / "dgx-h100-roce"
    assert main(["doctor", "--gate", "prolog", "--node", "n1", "--root", str(warns), "--no-counters"]) == 0
    assert sent == [] and capsys.readouterr().out.startswith("rocetune: OK with warnings n1: ")
