"""`fleet gather --via srun` (fleet.srun_gather): the labelled, interleaved output of one srun step
told apart per node. A stand-in srun prints what srun --label prints; tests/lab/test_topology_lab.py
gathers through the lab's real Slurm."""

from __future__ import annotations

import json
import textwrap

from rocetune.fleet import srun_gather

ENV = json.dumps(
    {
        "schema": "rocetune.result/1",
        "command": "doctor",
        "status": "ok",
        "exit_code": 0,
        "data": {"findings": [], "summary": {}},
    }
)


def fake_srun(tmp_path, body: str):
    path = tmp_path / "srun"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return srun_gather.Options(command="rocetune", timeout=20, srun=str(path))


def test_interleaved_tasks_are_told_apart_and_forged_names_refused(tmp_path):
    opts = fake_srun(
        tmp_path,
        f"""\
        echo ' 0: @node gpu01'
        echo ' 1: @node gpu02'
        echo ' 2: @node gpu01'
        echo ' 0: {ENV}'
        echo ' 1: not json'
        echo ' 2: {ENV}'
        echo ' 0: @rc 0'
        echo ' 1: @rc 3'
        echo ' 2: @rc 0'
        echo 'srun: error: gpu04: task 3: Exited with exit code 1' >&2
        exit 1
        """,
    )
    out = tmp_path / "out"
    out.mkdir()
    got = srun_gather.gather(["gpu01", "gpu02", "gpu04"], str(out), opts)
    assert [(o.host, o.error) for o in got] == [
        ("gpu01", "2 tasks of the srun step named themselves gpu01"),
        ("gpu02", "doctor on gpu02 exited 3 and printed no JSON rocetune reads ('not json')"),
        ("gpu04", "no result from the srun step (exit 1); srun: srun: error: gpu04: task 3: Exited with exit code 1"),
    ]
    assert json.loads((out / "gpu01.json").read_text())["doctor"] is None


def test_each_node_s_result_is_written_as_gather_writes_it(tmp_path):
    # srun ends each message from a node with a newline of its own: a long line comes in pieces.
    a, b = ENV[:40], ENV[40:]
    opts = fake_srun(
        tmp_path,
        f"""\
        echo ' 1: @node gpu02'
        echo ' 0: @node gpu01'
        echo ' 1: {ENV}'
        echo ' 0: {a}'
        echo ' 1: @rc 0'
        echo ' 0: {b}'
        echo ' 0: @rc 5'
        """,
    )
    out = tmp_path / "out"
    out.mkdir()
    got = srun_gather.gather(["gpu01", "gpu02"], str(out), opts)
    assert [(o.host, o.error) for o in got] == [("gpu01", None), ("gpu02", None)]
    doc = json.loads((out / "gpu01.json").read_text())
    assert doc["schema"] == "rocetune.fleet-host/1" and doc["doctor"] == {"findings": [], "summary": {}}


def test_the_step_has_one_deadline(tmp_path):
    opts = fake_srun(tmp_path, "echo ' 0: @node gpu01'\nexec sleep 30\n")
    opts.timeout = 0.5
    out = tmp_path / "out"
    out.mkdir()
    (o,) = srun_gather.gather(["gpu01"], str(out), opts)
    assert o.error == "no result within the step's 0.5 s"


def test_the_command_line_gives_slurm_one_task_per_named_node():
    argv = srun_gather.argv(
        ["gpu01", "gpu02"], srun_gather.Options(command="/usr/local/bin/rocetune", srun_args=("--partition=gpu",))
    )
    assert argv[:9] == [
        "srun",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--nodelist=gpu01,gpu02",
        "--label",
        "--kill-on-bad-exit=0",
        "--job-name=rocetune-gather",
        "--partition=gpu",
    ]
    assert argv[9:11] == ["sh", "-c"] and argv[11].startswith('echo "@node $SLURMD_NODENAME"; /usr/local/bin/rocetune')


def test_options_that_do_not_go_with_the_path_are_usage_errors(tmp_path):
    import pytest

    from rocetune.app.fleet import GatherRequest, SshRequest, gather
    from rocetune.errors import ExitCode, RocetuneError

    for request, said in (
        (
            GatherRequest(SshRequest(hosts=("gpu01",)), str(tmp_path), "rocetune", "ssh", ("--partition=gpu",)),
            "--srun-arg goes with --via srun",
        ),
        (
            GatherRequest(SshRequest(inventory="hosts.yml"), str(tmp_path), "rocetune", "srun"),
            "--via srun takes Slurm node names (or the job's nodes), not --inventory",
        ),
    ):
        with pytest.raises(RocetuneError) as err:
            gather(request)
        assert str(err.value) == said and err.value.code == ExitCode.USAGE
