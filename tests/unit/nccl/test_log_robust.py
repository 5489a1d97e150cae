"""read_log on what is not a clean NCCL log: garbage, cut lines, colour, carriage returns, size."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocetune.errors import ExitCode, RocetuneError
from rocetune.nccl.log import load_log, read_log
from rocetune.nccl.log_lines import MAX_LINE

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"
NODE0 = (LOGS / "rxe-2.20.5-nccl_node0.log").read_text()


@pytest.mark.parametrize("garbage", [
    "", "\n\n  \n",
    "Traceback (most recent call last):\n  File \"train.py\", line 1\nRuntimeError: NCCL error\n",
    '{"NCCL_IB_HCA": "mlx5_0", "note": "NCCL INFOrmation"}\n',
    "NCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5_0\n",          # an env file is not a log
    "\x00\x01\x02\xff" * 1000,
])
def test_text_that_is_not_an_nccl_log_is_refused_with_one_line(garbage):
    with pytest.raises(RocetuneError) as e:
        read_log(garbage, source="job.out")
    assert e.value.code == ExitCode.INPUT
    assert e.value.message.startswith("job.out: not an NCCL debug log") and "\n" not in e.value.message
    assert "NCCL_DEBUG=INFO" in e.value.hint


def test_binary_bytes_are_refused_not_crashed_on():
    with pytest.raises(RocetuneError):
        read_log(bytes(range(256)) * 100)


def test_unreadable_paths_name_the_file(tmp_path):
    with pytest.raises(RocetuneError, match="is a directory"):
        load_log(str(tmp_path))
    with pytest.raises(RocetuneError, match="cannot read"):
        load_log(str(tmp_path / "missing.log"))


def test_lines_cut_short_keep_what_they_show():
    lines = NODE0.splitlines()
    using = next(i for i, x in enumerate(lines) if "NET/IB : Using" in x)
    cut = lines[:using] + [lines[using][:lines[using].index("/RoCE") + 5], "node0:4222:4241 [0] NCCL IN"]
    r = read_log("\n".join(cut))
    p = r.processes[0]
    assert [(d.name, d.port, d.link_layer) for d in p.ib_devices] == [("rxe0", 1, "RoCE")]
    assert p.oob_interface is None and p.network is None
    assert r.other_lines == 1  # the cut "NCCL IN" (empty lines are not counted)


def test_colour_and_carriage_returns():
    coloured = "\x1b[32m" + NODE0.replace("\n", "\x1b[0m\r\n\x1b[32m")
    with_progress = "epoch 1: 10%\repoch 1: 50%\r" + NODE0  # one physical line, three shown
    for t in (coloured, with_progress):
        a, b = read_log(t).processes[0].to_dict(), read_log(NODE0).processes[0].to_dict()
        assert a == b


def test_overlong_and_hostile_lines_are_bounded():
    # a line of the shapes the patterns look for, far beyond NCCL's own 1-2 KiB buffer
    hostile = [
        "h:1:2 [0] NCCL INFO Channel 00/02 :" + " " * 200000 + "x",
        "h:1:2 [0] NCCL INFO Invalid value " + "for " * 50000 + "X",
        "h:1:2 [0] NCCL INFO NET/IB : Using" + " [0]" * 50000,
        "a" * 300000 + ":1:2 [0] NCCL INFO Using network IB",
        "NCCL version " + "9" * 200000,
    ]
    r = read_log("\n".join(hostile + [NODE0]))
    assert r.process("node0:4222").network == "IB"
    assert r.notes and str(MAX_LINE) in r.notes[0]
    assert r.lines == len(hostile) + NODE0.count("\n")


def test_a_big_log_is_one_pass(tmp_path):
    many = NODE0 * 2000  # 64,000 lines of one process; evidence stays the first occurrence
    r = read_log(many)
    p = r.processes[0]
    assert r.lines == 64000 and r.warn_count == 2000 and len(r.warnings) == 2000
    assert p.env["NCCL_IB_GID_INDEX"].evidence.line == 21 and p.ranks == [0]
