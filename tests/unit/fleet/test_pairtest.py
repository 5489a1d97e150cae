"""One pair test as pure functions: the command lines carry the env's device, port and GID
index; the counters show which port carried the traffic; a recorded real perftest and iperf3
output is judged against the line rate (tests/fixtures/outputs/SOURCES.md)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from rocetune.fleet import pairtest
from rocetune.fleet.endpoints import RdmaPort, SocketIf
from rocetune.fleet.validate import suspects

OUT = Path(__file__).resolve().parents[2] / "fixtures" / "outputs"
PERF = (OUT / "perftest-ib_write_bw-gbits-roce.txt").read_text(encoding="utf-8")
IPERF = (OUT / "iperf3-json-tcp-gcp-10s.json").read_text(encoding="utf-8")
A = RdmaPort("mlx5_0", 1, 3, 400.0, "enp24s0np0", "10.100.0.21", True)
B = RdmaPort("mlx5_0", 1, 3, 200.0, "enp24s0np0", "10.100.0.22", True)
IB = RdmaPort("mlx5_ib0", 1, None, 400.0, "ib0", None, False)
MOVED = 8 * 224958464  # bytes the recorded run moved: 8-byte messages, its iteration count


def test_perftest_command_names_the_envs_device_port_and_gid():
    s = pairtest.Settings(seconds=7, size=1 << 20)
    assert pairtest.perftest_argv(A, s, 18516, "node2") == [
        "ib_write_bw", "-d", "mlx5_0", "-i", "1", "-x", "3", "-F", "--report_gbits", "-D", "7",
        "-s", "1048576", "-p", "18516", "node2"]
    # The server waits for one client: no address. InfiniBand has no GID index to pass.
    server = pairtest.perftest_argv(IB, pairtest.Settings(rdma_op="read"), 18515)
    assert server[0] == "ib_read_bw" and "-x" not in server and server[-2:] == ["-p", "18515"]


def test_counter_reading_is_one_shell_line_that_survives_missing_files(tmp_path):
    hostile = RdmaPort("x; touch " + str(tmp_path / "ran"), 1, 0, None, "eth0'$(id)", None, True)
    command = pairtest.counters_command([A, hostile])
    out = subprocess.run(["sh", "-c", command], stdout=subprocess.PIPE, text=True, check=True).stdout
    assert not (tmp_path / "ran").exists()  # names from a node are quoted, never run
    counters = pairtest.parse_counters([A, hostile], out)
    assert len(out.split()) == 8 and set(counters) == {A.name, hostile.name}
    assert all(v is None for c in counters.values() for v in c.values())  # no such files here
    assert shlex.split(command)[:2] == ["for", "f"]


def test_port_counters_count_4_octet_words_and_the_netdev_stands_in():
    before = pairtest.parse_counters([A], "1000\n5\n-\n-\n")
    after = pairtest.parse_counters([A], "1250\n5\n-\n-\n")
    assert pairtest.rail_moved(before[A.name], after[A.name], send=True) == (1000, "port_xmit_data")
    soft = RdmaPort("rxe0", 1, 1, 2.5, "ens4", "198.18.2.11", True)
    before = pairtest.parse_counters([soft], "-\n-\n100\n7\n")
    after = pairtest.parse_counters([soft], "-\n-\n900\n9\n")
    assert pairtest.rail_moved(before[soft.name], after[soft.name], send=True) == (800, "tx_bytes")
    assert pairtest.rail_moved(before[soft.name], after[soft.name], send=False) == (2, "rx_bytes")
    assert pairtest.rail_moved({}, {}, send=True) == (None, "no counter readable")


def test_recorded_perftest_fails_against_the_slower_sides_rate_and_passes_a_lower_one():
    fail = pairtest.judge_rdma(PERF, A, B, pairtest.Settings(), MOVED, "port_xmit_data")
    assert fail["status"] == "fail" and fail["measured_gbps"] == 0.48
    assert fail["verdict"]["line_rate_gbps"] == 200.0 and fail["verdict"]["needed_gbps"] == 180.0
    assert "0.48 Gb/s is below 180.00 (90% of 200 Gb/s)" in fail["why"]
    assert (fail["gid_index"], fail["mtu"], fail["link_type"]) == (2, 4096, "Ethernet")
    ok = pairtest.judge_rdma(PERF, A, B, pairtest.Settings(line_rate_gbps=0.5), MOVED, "port_xmit_data")
    assert ok["status"] == "pass" and ok["counters"] == {"ok": True, "counter": "port_xmit_data",
                                                     "moved_bytes": MOVED, "expected_bytes": MOVED}


def test_fast_enough_but_the_traffic_left_by_another_port_fails():
    r = pairtest.judge_rdma(PERF, A, B, pairtest.Settings(line_rate_gbps=0.5), MOVED // 10, "port_xmit_data")
    assert r["status"] == "fail" and r["counters"]["ok"] is False
    assert "the traffic left by another port" in r["why"]


def test_no_rate_anywhere_is_reported_unjudged_and_garbage_is_an_error():
    unknown = RdmaPort("rxe0", 1, 1, None, "ens4", None, True)
    r = pairtest.judge_rdma(PERF, unknown, unknown, pairtest.Settings(), None, "no counter readable")
    assert r["status"] == "unjudged" and "--line-rate" in r["why"] and r["counters"]["ok"] is None
    err = pairtest.judge_rdma(" Couldn't connect to 10.0.0.2:18515\n", A, B, pairtest.Settings(), None, "")
    assert err == {"status": "error", "error": "Couldn't connect to 10.0.0.2:18515"}


def test_recorded_iperf3_judged_on_the_slower_interface():
    a, b = SocketIf("bond0", "10.20.0.21", 200.0), SocketIf("eth0", "10.20.0.22", 0.1)
    r = pairtest.judge_tcp(IPERF, a, b, pairtest.Settings())
    assert r["measured_gbps"] == 0.087 and r["status"] == "fail" and r["verdict"]["line_rate_gbps"] == 0.1
    assert pairtest.judge_tcp(IPERF, a, b, pairtest.Settings(fraction=0.8))["status"] == "pass"
    assert pairtest.judge_tcp(IPERF, SocketIf("veth0", "1.1.1.1", None), SocketIf("veth1", "1.1.1.2", None),
                              pairtest.Settings())["status"] == "unjudged"
    assert pairtest.iperf3_client_argv(a, b, pairtest.Settings(seconds=3)) == [
        "iperf3", "-c", "10.20.0.22", "-B", "10.20.0.21", "-p", "5201", "-t", "3", "-J"]


def _pair(a, b, status):
    return {"a": a, "b": b, "status": status}


def test_suspects_are_the_hosts_no_passing_pair_clears():
    pairs = [_pair("n1", "n2", "pass"), _pair("n1", "n3", "fail"), _pair("n2", "n3", "error"),
             _pair("n1", "n4", "pass"), _pair("n2", "n4", "pass"), _pair("n3", "n4", "fail")]
    assert suspects(pairs, []) == ["n3"]
    assert suspects(pairs, ["n5"]) == ["n3", "n5"]
    assert suspects([_pair("n1", "n2", "fail")], []) == ["n1", "n2"]  # two hosts: either may be at fault
    assert suspects([_pair("n1", "n2", "pass"), _pair("n3", "n4", "unjudged")], []) == []
