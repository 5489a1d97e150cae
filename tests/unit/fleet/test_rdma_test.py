"""validate's `rdma` test with hosts that answer in-process: perftest prints recorded real
outputs (tests/fixtures/outputs/SOURCES.md). A run whose clock calibration failed reads 0 Gb/s;
that is no measurement of the rail, so the rail is measured again, and said as an error, never as
a slow rail, where it never calibrates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rocetune.fleet import pairtest, ssh, steps
from rocetune.fleet.endpoints import RdmaPort, endpoints
from rocetune.fleet.measure import clock_uncalibrated
from rocetune.fleet.results import from_doc
from rocetune.fleet.tests import HostContext, PairContext, get

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OUT = FIXTURES / "outputs"
GOOD = (OUT / "perftest-ib_write_bw-gbits-roce.txt").read_bytes()
UNCALIBRATED = (OUT / "perftest-ib_write_bw-clock-uncalibrated-rxe-tcg-tail.txt").read_bytes()
TEST = get("rdma")


@pytest.fixture(scope="module")
def softroce() -> dict:
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "probe", "--root",
                           str(FIXTURES / "hosts" / "softroce-3nic")], stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout)["data"]


class Remote:
    """perftest's client prints the outputs given, one a run, the last one again; counters read `-`."""

    def __init__(self, name, *clients: bytes):
        self.target = type("T", (), {"hostname": name, "name": name})()
        self.name, self.clients, self.perftest_runs = name, list(clients), 0

    def run(self, command, step, timeout, stdin=None):
        if not command.startswith("ib_write_bw"):
            return ssh.Completed(0, b"-\n" * 64, b"")
        self.perftest_runs += 1
        out = self.clients.pop(0) if len(self.clients) > 1 else self.clients[0]
        return ssh.Completed(0, out, b"")

    def start(self, command, step, timeout):
        return command

    def finish(self, handle, step):
        return ssh.Completed(0, b"", b"")


class Opts:
    settings = pairtest.Settings(seconds=1, line_rate_gbps=0.4)


@pytest.fixture(autouse=True)
def no_settle(monkeypatch):
    monkeypatch.setattr("rocetune.fleet.validate.SERVER_SETTLE_S", 0)


def host(name, data, remote) -> HostContext:
    result = from_doc(name, {"probe": data})
    return HostContext(name, remote, endpoints(result), result.plan_env or {}, result.features or {},
                       plan={"ranks": result.plan_ranks or [], "reports": result.plan_reports or {}})


def test_perftests_failed_clock_calibration_is_recognised_only_where_it_happened():
    why = clock_uncalibrated(UNCALIBRATED.decode())
    assert why is not None and "r^2 0.880793 < 0.9" in why and "not a measurement" in why
    assert clock_uncalibrated(GOOD.decode()) is None
    assert clock_uncalibrated((OUT / "perftest-cuda" / "ib_write_bw-use_cuda-dmabuf-roce-a40-client.txt")
                              .read_text(encoding="utf-8")) is None


def test_a_zero_from_an_uncalibrated_clock_is_an_error_not_a_slow_rail():
    port = RdmaPort("rxe0", 1, 1, 2.5, "ens4", "198.18.2.11", True)
    doc = pairtest.judge_rdma(UNCALIBRATED.decode(), port, port, pairtest.Settings(), 10**8, "tx_bytes")
    assert doc["status"] == "error" and "could not calibrate the CPU clock" in doc["error"]
    assert "measured_gbps" not in doc and "verdict" not in doc


def test_a_rail_whose_clock_did_not_calibrate_is_measured_again(softroce):
    a = host("a", softroce, Remote("a", UNCALIBRATED, GOOD))
    b = host("b", softroce, Remote("b"))
    tests = [t for t in TEST.pair(PairContext(a, b, 1, Opts(), None)) if t.get("rail") is not None]
    assert len(tests) >= 2
    assert all(t["status"] == "pass" and t["measured_gbps"] == 0.48 for t in tests), tests
    # each rail's first run read 0 or a good figure (they run at once); one of them ran twice
    assert a.remote.perftest_runs == len(tests) + 1
    assert sorted(t.get("attempts", 1) for t in tests)[-1] == 2


def test_a_clock_that_never_calibrates_gives_up_after_the_retries_with_the_reason(softroce):
    a = host("a", softroce, Remote("a", UNCALIBRATED))
    b = host("b", softroce, Remote("b"))
    tests = [t for t in TEST.pair(PairContext(a, b, 1, Opts(), None)) if t.get("rail") is not None]
    assert a.remote.perftest_runs == len(tests) * (1 + steps.CLOCK_RETRIES)
    for t in tests:
        assert t["status"] == "error" and t["attempts"] == 1 + steps.CLOCK_RETRIES
        assert "could not calibrate the CPU clock" in t["error"] and t["evidence"]["client"][-1].startswith("Correlation")
