"""An NCCL log whose numbers are longer than any C integer NCCL prints: those lines are not
NCCL's, and reading the rest goes on (Python refuses int() of 4300 digits and more)."""

from __future__ import annotations

from pathlib import Path

from rocetune.nccl.log import read_log
from rocetune.nccl.log_lines import rank_line

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"
NODE0 = (LOGS / "rxe-2.20.5-nccl_node0.log").read_text()
BIG = "9" * 5000


def test_lines_with_numbers_no_c_integer_holds_are_skipped():
    hostile = [
        f"node0:4222:4241 [0] NCCL INFO NET/IB : Using [0]rxe9:{BIG}/RoCE [RO]; OOB eth0:10.0.0.9<0>",
        f"node0:4222:4241 [0] NCCL INFO comm 0x1 rank {BIG} nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        f"node0:4222:4241 [0] NCCL INFO Ring {BIG} : 0 -> 1 -> 0",
        f"node0:4222:4241 [0] NCCL INFO Channel 00/02 : 0 {BIG} 1",
        f"node0:4222:4241 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 12 mtu {BIG} GID 3",
        f"node0:{BIG}:4241 [0] NCCL INFO cudaDriverVersion 12020",
        f"node0:4222:4241 [{BIG}] NCCL INFO cudaDriverVersion 12020",
        f"node0:4222:4241 [0] init.cc:{BIG} NCCL WARN x",
        "node0:²:4241 [0] NCCL INFO cudaDriverVersion 12020",  # isdigit, and no number int() reads
    ]
    clean = read_log(NODE0).processes[0].to_dict()
    r = read_log(NODE0 + "\n".join(hostile) + "\n")
    assert [p.to_dict() for p in r.processes] == [clean]
    assert r.lines == NODE0.count("\n") + len(hostile)


def test_numbers_up_to_twenty_digits_are_still_read():
    assert rank_line("comm 0x1 rank 18446744073709551615 nranks 2 nNodes 1 - Init COMPLETE") == \
        (18446744073709551615, 2, 1)
    assert rank_line(f"comm 0x1 rank 1{'0' * 20} nranks 2 nNodes 1 - Init COMPLETE") is None
