"""What a bandwidth tool's output says, and whether it reaches the line rate.

Parsers for the outputs `validate` will collect -- perftest's `ib_write_bw`/`ib_read_bw` (report
lines `#bytes #iterations BW peak BW average MsgRate`, in MB/sec or, with --report_gbits,
Gb/sec; the header's device, link type, MTU and GID index), `iperf3 --json`
(`end.sum_received.bits_per_second`) and nccl-tests' `all_reduce_perf` (the table rows and
`# Avg bus bandwidth`) -- each tested on recorded real outputs (tests/fixtures/outputs/).

A result passes when it reaches `fraction` (0.9 unless the caller says otherwise) of the line
rate the caller gives, in Gb/s. perftest's MB/sec are 2^20 bytes a second and its Gb/sec 10^9
bits (linux-rdma/perftest src/perftest_resources.c, print_report_bw: `format_factor` 0x100000
for MB/sec, 125000000 for Gb/sec), so 1 MB/sec = 0.008388608 Gb/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..errors import ParseError
from ..model.jsonread import load_json

DEFAULT_FRACTION = 0.9


@dataclass
class Verdict:
    measured_gbps: float
    line_rate_gbps: float
    fraction: float

    @property
    def needed_gbps(self) -> float:
        return self.line_rate_gbps * self.fraction

    @property
    def passed(self) -> bool:
        return self.measured_gbps >= self.needed_gbps

    def to_dict(self) -> Dict[str, Any]:
        return {"measured_gbps": round(self.measured_gbps, 3), "line_rate_gbps": self.line_rate_gbps,
                "fraction": self.fraction, "needed_gbps": round(self.needed_gbps, 3), "passed": self.passed}


def verdict(measured_gbps: float, line_rate_gbps: float, fraction: float = DEFAULT_FRACTION) -> Verdict:
    if not line_rate_gbps > 0:
        raise ValueError(f"line rate must be above 0 Gb/s, got {line_rate_gbps}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return Verdict(measured_gbps, line_rate_gbps, fraction)


# --- perftest ----------------------------------------------------------------------------------
@dataclass
class PerftestRow:
    size: int
    iterations: int
    peak: float
    average: float
    msg_rate_mpps: float


@dataclass
class Perftest:
    test: Optional[str]  # "RDMA_Write BW Test", "RDMA_Read BW Test", ...
    header: Dict[str, str]  # every "Key : value" of the header block
    unit: str  # "MB/sec" or "Gb/sec"
    rows: List[PerftestRow]

    @property
    def device(self) -> Optional[str]:
        return self.header.get("Device")

    @property
    def link_type(self) -> Optional[str]:
        return self.header.get("Link type")

    @property
    def gid_index(self) -> Optional[int]:
        raw = self.header.get("GID index") or self.header.get("Gid index")
        return int(raw) if raw and raw.isdigit() else None

    @property
    def mtu(self) -> Optional[int]:
        m = re.match(r"^(\d+)", self.header.get("Mtu", ""))
        return int(m.group(1)) if m else None

    def gbps(self, value: float) -> float:
        return value if self.unit == "Gb/sec" else value * 0x100000 * 8 / 1e9

    @property
    def best_average_gbps(self) -> float:
        """The highest average over the message sizes (with -a, the large sizes)."""
        return max(self.gbps(r.average) for r in self.rows)


# perftest's src/get_clock.c fits cycles against gettimeofday() to learn the CPU clock; below an
# r^2 of 0.9 (a loaded host, a VM) it prints this line and get_cpu_mhz() returns 0, and every
# rate in the report, which is cycles turned into seconds, comes out 0: no measurement at all.
_CLOCK_UNCALIBRATED = re.compile(r"Correlation coefficient r\^2: (\S+) < 0\.9")


def clock_uncalibrated(text: str) -> Optional[str]:
    """Why perftest's figures are not a measurement, where its clock calibration failed."""
    m = _CLOCK_UNCALIBRATED.search(text)
    if not m:
        return None
    return (f"perftest could not calibrate the CPU clock (r^2 {m.group(1)} < 0.9; a loaded host or a VM), "
            "so its rates read 0: not a measurement")


_PERF_TABLE = re.compile(r"^\s*#bytes\s+#?iterations\s+BW peak\[(MB/sec|Gb/sec)\]\s+BW average\[(MB/sec|Gb/sec)\]")
_PERF_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*\Z")
# Two "Key : value" pairs share a line, apart by tabs or by a run of spaces before the next key.
_PERF_PAIRS = re.compile(r"(?:\t+|\s{3,})(?=[A-Za-z][^:]*:)")


def parse_perftest(text: str) -> Perftest:
    header: Dict[str, str] = {}
    test = None
    unit = None
    rows: List[PerftestRow] = []
    for line in text.splitlines():
        stripped = line.strip()
        m = _PERF_TABLE.match(line)
        if m:
            unit = m.group(2)
            continue
        if unit:
            r = _PERF_ROW.match(line)
            if r:
                rows.append(PerftestRow(int(r.group(1)), int(r.group(2)), float(r.group(3)),
                                        float(r.group(4)), float(r.group(5))))
            continue
        if stripped.endswith(" Test") and ":" not in stripped:
            test = stripped
        elif ":" in stripped and not stripped.startswith(("local address", "remote address", "GID:")):
            for pair in _PERF_PAIRS.split(stripped):
                key, _, value = pair.partition(":")
                if key.strip() and value.strip():
                    header.setdefault(key.strip(), value.strip())
    if unit is None:
        raise ParseError("perftest output", "no '#bytes #iterations BW peak ...' report line",
                         hint="the client side's output of ib_write_bw/ib_read_bw is needed")
    if not rows:
        raise ParseError("perftest output", "the report table has no result row")
    return Perftest(test, header, unit, rows)


# --- iperf3 --json -----------------------------------------------------------------------------
@dataclass
class Iperf3:
    received_bps: float
    sent_bps: Optional[float]
    retransmits: Optional[int]
    protocol: Optional[str]
    streams: Optional[int]

    @property
    def received_gbps(self) -> float:
        return self.received_bps / 1e9


def parse_iperf3(text: str) -> Iperf3:
    try:
        doc = load_json(text)
    except ValueError as exc:
        raise ParseError("iperf3 --json output", f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ParseError("iperf3 --json output", "not a JSON object")
    if doc.get("error"):
        raise ParseError("iperf3 --json output", f"iperf3 reported: {str(doc['error'])[:200]}")
    end: dict = doc["end"] if isinstance(doc.get("end"), dict) else {}
    received = (end.get("sum_received") or {}).get("bits_per_second")
    if not isinstance(received, (int, float)) or isinstance(received, bool):
        raise ParseError("iperf3 --json output", "no end.sum_received.bits_per_second (a UDP test or an "
                                                 "unfinished run)")
    sent = end.get("sum_sent") or {}
    start = (doc.get("start") or {}).get("test_start") or {}
    return Iperf3(float(received), sent.get("bits_per_second"), sent.get("retransmits"),
                  start.get("protocol"), start.get("num_streams"))


# --- nccl-tests --------------------------------------------------------------------------------
@dataclass
class NcclRow:
    size: int
    count: int
    type: str
    redop: Optional[str]  # None: a release or a test that prints none (alltoall before 2.10)
    root: Optional[int]  # None: releases before the `root` column (2.10)
    out_of_place: Dict[str, Any]  # time_us, algbw, busbw, wrong (+ i_min_us, i_max_us, i_p99_us, i_cv_pct with -I 1)
    in_place: Dict[str, Any]
    timestamp: Optional[str] = None  # with -S 1 (nccl-tests 2.18.5 and later): "%Y-%m-%d %H:%M:%S"


@dataclass
class NcclTests:
    rows: List[NcclRow]
    avg_bus_bandwidth: Optional[float]  # GB/s, as the tool prints it
    out_of_bounds: Optional[int] = None
    ranks: List[str] = field(default_factory=list)  # the "# Rank N ... on HOST device D" lines
    per_iteration: bool = False  # -I 1: each half carries the per-iteration min, max, p99 and CV

    @property
    def peak_busbw(self) -> float:
        return max(max(r.out_of_place["busbw"], r.in_place["busbw"]) for r in self.rows)

    @property
    def peak_busbw_gbps(self) -> float:
        """GB/s (10^9 bytes, as nccl-tests divides by 1.0E9) in Gb/s."""
        return self.peak_busbw * 8


# A result row (nccl-tests src/util.cu): writeBenchmarkLinePreamble "%12li  %12li  %8s  %6s  %6s"
# (size, count, type, redop, root), then per half writeBenchmarkLineBody "  %7s  %6s  %6s  %6g"
# (time, algbw, busbw, #wrong; "N/A" without -c), with -I 1 writePerIterReport "  %7s  %7s  %7s
# %7s" (i_min, i_max, i_p99 in us, i_cv%) after each half (2.19.2 on), with -S 1 writeTimestamp
# "%21s" after the in-place half (2.18.5 on). Releases before 2.10 print no root column, and
# older alltoall no redop; older ones print #wrong as %g of a double ("0e+00").
_NUM = r"-?[0-9.]+(?:e[+-]?\d+)?|-?nan|-?inf"
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<stdout>:|\d+: |\[\d+\] )")  # mpirun --tag-output, srun -l, torchrun
_STAMP = re.compile(r"\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_HEAD = re.compile(r"^\s*(\d+)\s+(\d+)\s+([A-Za-z]\w*)((?:\s+[A-Za-z]\w*)?)\s+(.*)$")
_NUMBER = re.compile(rf"^(?:{_NUM})$")
_WRONG = re.compile(rf"^(?:{_NUM}|N/A)$")
_NCCL_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_NCCL_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")


def parse_nccl_tests(text: str) -> NcclTests:
    rows: List[NcclRow] = []
    avg = oob = None
    ranks: List[str] = []
    per_iter = False
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw)
        row = _row(line)
        if row is not None:
            rows.append(row)
            per_iter = per_iter or "i_min_us" in row.out_of_place
            continue
        m = _NCCL_AVG.match(line)
        if m:
            avg = float(m.group(1))
            continue
        m = _NCCL_OOB.match(line)
        if m:
            oob = int(m.group(1))
        elif re.match(r"^#\s+Rank\s+\d+", line):
            ranks.append(line.lstrip("# ").rstrip())
    if not rows:
        raise ParseError("nccl-tests output", "no result row (size count type redop root time algbw busbw ...)")
    return NcclTests(rows, avg, oob, ranks, per_iter)


def _row(line: str) -> Optional[NcclRow]:
    if line.lstrip().startswith("#"):
        return None
    stamp = _STAMP.search(line)
    body = line[:stamp.start()] if stamp else line
    m = _HEAD.match(body)
    if not m:
        return None
    values = m.group(5).split()
    root: Optional[int] = None
    if len(values) in (9, 17) and re.match(r"^-?\d+$", values[0]):
        root, values = int(values[0]), values[1:]
    width = {8: 4, 16: 8}.get(len(values))
    if width is None:
        return None
    halves = [values[:width], values[width:]]
    if not all(_NUMBER.match(v) for h in halves for i, v in enumerate(h) if i != 3) or \
            not all(_WRONG.match(h[3]) for h in halves):
        return None
    redop = m.group(4).strip() or None
    return NcclRow(int(m.group(1)), int(m.group(2)), m.group(3), redop, root, _half(halves[0]), _half(halves[1]),
                   stamp.group(1) if stamp else None)


def _half(g) -> Dict[str, Any]:
    wrong: Any = g[3]
    if wrong != "N/A" and wrong.lower().lstrip("-") not in ("nan", "inf"):
        value = float(wrong)  # "%6g" of a count; releases before 2.10 printed the largest error, "7e-03"
        wrong = int(value) if value.is_integer() else value
    doc: Dict[str, Any] = {"time_us": float(g[0]), "algbw": float(g[1]), "busbw": float(g[2]), "wrong": wrong}
    if len(g) == 8:
        doc.update(i_min_us=float(g[4]), i_max_us=float(g[5]), i_p99_us=float(g[6]), i_cv_pct=float(g[7]))
    return doc
