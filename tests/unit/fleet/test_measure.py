"""The bandwidth parsers on recorded real outputs (tests/fixtures/outputs/SOURCES.md), and the
pass/fail line against a line rate the caller gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocetune.errors import ParseError
from rocetune.fleet.measure import parse_iperf3, parse_nccl_tests, parse_perftest, verdict

OUT = Path(__file__).resolve().parents[2] / "fixtures" / "outputs"


def _read(name: str) -> str:
    return (OUT / name).read_text(encoding="utf-8")


def test_ib_write_bw_in_gbits_with_its_roce_header():
    r = parse_perftest(_read("perftest-ib_write_bw-gbits-roce.txt"))
    assert r.test == "RDMA_Write Post List BW Test"
    assert (r.device, r.link_type, r.gid_index, r.mtu) == ("ib0", "Ethernet", 2, 4096)
    assert r.header["Post List"] == "128" and r.header["Transport type"] == "IB"
    assert r.unit == "Gb/sec" and len(r.rows) == 1
    row = r.rows[0]
    assert (row.size, row.iterations, row.peak, row.average, row.msg_rate_mpps) == (8, 224958464, 0.0, 0.48, 7.498617)
    assert r.best_average_gbps == 0.48
    assert not verdict(r.best_average_gbps, 100).passed


def test_ib_read_bw_in_mb_per_sec_on_infiniband():
    r = parse_perftest(_read("perftest-ib_read_bw-ib-first-rows.txt"))
    assert r.test == "RDMA_Read BW Test"
    assert (r.device, r.link_type, r.gid_index, r.mtu) == ("mlx5_1", "IB", None, 4096)
    assert r.header["Outstand reads"] == "16"
    assert [x.size for x in r.rows] == [2, 4, 8]
    # perftest's MB is 2^20 bytes: 19.50 MB/sec = 19.50 * 1048576 * 8 / 1e9 Gb/s
    assert r.best_average_gbps == pytest.approx(19.50 * 1048576 * 8 / 1e9)


def test_perftest_without_a_report_is_a_parse_error():
    text = _read("perftest-ib_write_bw-gbits-roce.txt").split(" #bytes")[0]
    with pytest.raises(ParseError, match="report line"):
        parse_perftest(text)


def test_iperf3_json_receiver_rate():
    r = parse_iperf3(_read("iperf3-json-tcp-gcp-10s.json"))
    assert r.received_bps == pytest.approx(87091139.283373877)
    assert r.sent_bps == pytest.approx(87033122.20014523)
    assert (r.retransmits, r.protocol, r.streams) == (0, "TCP", 1)
    assert verdict(r.received_gbps, 0.09).passed          # 87 Mb/s is 96.8% of 90 Mb/s
    assert not verdict(r.received_gbps, 0.1).passed       # and 87% of 100 Mb/s
    assert verdict(r.received_gbps, 0.1, fraction=0.85).passed  # the bar is the caller's


@pytest.mark.parametrize("text, why", [("{not json", "not JSON"), ('{"error": "unable to connect to server"}', "unable"),
                                       ('{"end": {}}', "sum_received"), ("[]", "object")])
def test_iperf3_bad_outputs(text, why):
    with pytest.raises(ParseError, match=why):
        parse_iperf3(text)


def test_all_reduce_perf_rows_and_average():
    r = parse_nccl_tests(_read("nccl-tests-all_reduce_perf-a3mega-2x8-h100.txt"))
    assert len(r.rows) == 31 and r.rows[0].size == 8 and r.rows[-1].size == 8589934592
    last = r.rows[-1]
    assert (last.type, last.redop, last.root) == ("float", "sum", -1)
    assert last.out_of_place == {"time_us": 47535.0, "algbw": 180.71, "busbw": 338.82, "wrong": 0}
    assert last.in_place == {"time_us": 47743.0, "algbw": 179.92, "busbw": 337.35, "wrong": 0}
    assert r.avg_bus_bandwidth == 70.742 and r.out_of_bounds == 0
    assert len(r.ranks) == 16 and "ztan-mig-gq73" in r.ranks[-1]
    assert r.peak_busbw == 338.82
    v = verdict(r.peak_busbw_gbps, 8 * 400)  # 8 NICs x 400 Gb/s: 2710.56 of 3200 Gb/s, 84.7%
    assert not v.passed and v.needed_gbps == pytest.approx(2880)
    assert verdict(r.peak_busbw_gbps, 8 * 200 * 1.5).passed


def test_nccl_tests_without_rows_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_nccl_tests("# nThread 1 nGpus 1\n# Avg bus bandwidth    : 0 \n")


@pytest.mark.parametrize("rate, fraction", [(0, 0.9), (-1, 0.9), (100, 0), (100, 1.5)])
def test_verdict_refuses_nonsense(rate, fraction):
    with pytest.raises(ValueError):
        verdict(50, rate, fraction)


def test_verdict_boundary_is_inclusive():
    assert verdict(90, 100).passed and not verdict(89.99, 100).passed
    assert verdict(90, 100).to_dict() == {"measured_gbps": 90, "line_rate_gbps": 100, "fraction": 0.9,
                                          "needed_gbps": 90.0, "passed": True}


# --- the forms of nccl-tests' result rows ---------------------------------------------------------
def test_rows_without_root_without_redop_and_with_mpirun_tags():
    old = parse_nccl_tests(_read("nccl-tests-all_reduce_perf-256gpu-2.8.4-no-root-issue78-first-rows.txt"))
    assert len(old.rows) == 6 and old.rows[-1].root is None and old.rows[-1].redop == "sum"
    assert old.rows[-1].out_of_place == {"time_us": 29896.0, "algbw": 35.92, "busbw": 71.55, "wrong": "N/A"}
    tagged = parse_nccl_tests(_read("nccl-tests-alltoall-tag-output-no-redop-tutel172-first-rows.txt"))
    assert [r.size for r in tagged.rows] == [1024 << i for i in range(7)] and tagged.rows[0].redop is None
    assert tagged.rows[1].in_place["wrong"] == 0.007 and tagged.rows[0].in_place["wrong"] == 1
    new = parse_nccl_tests(_read("nccl-tests-2.20.0-all_reduce_perf-gb10-spark-first-rows.txt"))
    assert len(new.rows) == 4 and new.rows[0].root == -1 and new.peak_busbw == 1.01 and len(new.ranks) == 2


def _float_str(value, width):
    """nccl-tests' getFloatStr (src/util.cu): %.2f, else %.1f, else %.0f, else %e, in `width`."""
    for spec in (f"%{width}.2f", f"%{width}.1f", f"%{width}.0f"):
        text = spec % value
        if len(text) <= width:
            return text
    return (f"%{width}.1e" if width >= 7 else f"%{width}.0e") % value


def _rendered_row(size, count, t_us, algbw, busbw, per_iter=None, stamp=None):
    """A row as writeBenchmarkLinePreamble/Body, writePerIterReport and writeTimestamp print it
    (src/util.cu of nccl-tests at a0b82b2, 2.19.x). No public run with -I 1 or -S 1 was found:
    these rows follow the tool's format strings, not a recorded run."""
    line = "%12li  %12li  %8s  %6s  %6s" % (size, count, "float", "sum", "%6i" % -1)
    for _ in range(2):  # out-of-place, then in-place
        line += "  %7s  %6s  %6s  %6g" % (_float_str(t_us, 7), _float_str(algbw, 6), _float_str(busbw, 6), 0)
        if per_iter:
            line += "  %7s  %7s  %7s  %7s" % tuple(_float_str(v, 7) for v in per_iter)
    if stamp:
        line += "%21s" % stamp
    return line


def test_rows_with_per_iteration_timing_and_timestamps():
    text = "\n".join([
        _rendered_row(1048576, 262144, 412.5, 2.54, 4.76, per_iter=(398.2, 455.1, 450.0, 3.1)),
        _rendered_row(2097152, 524288, 20300.0, 103.31, 193.71, per_iter=(20010.0, 22987.0, 22900.5, 2.25),
                      stamp="2026-07-09 16:03:21"),
        _rendered_row(4194304, 1048576, 1612.0, 2.6, 4.88, stamp="2026-07-09 16:03:22"),
    ])
    r = parse_nccl_tests(text)
    assert [row.size for row in r.rows] == [1048576, 2097152, 4194304] and r.per_iteration
    assert r.rows[0].out_of_place["i_max_us"] == 455.1 and r.rows[0].in_place["i_cv_pct"] == 3.1
    assert r.rows[1].out_of_place["time_us"] == 20300.0 and r.rows[1].timestamp == "2026-07-09 16:03:21"
    assert r.rows[2].timestamp == "2026-07-09 16:03:22" and "i_min_us" not in r.rows[2].out_of_place
    assert r.peak_busbw == 193.71
