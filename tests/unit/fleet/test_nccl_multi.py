"""`fleet validate --tests nccl-multi`: the srun line each rank runs (its node's env file, NCCL's
log, the net-only variant), the rank script run for real with PyTorch's Gloo on this machine (two
ranks on loopback, labelled as not NCCL), NCCL's real log read with doctor's reader against the
plan, nccl-tests rows read, and a slow collective bisected to its node. The lab test
(tests/lab/test_nccl_multi_lab.py) runs it through a real Slurm."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocetune.fleet import nccl_multi
from rocetune.fleet.endpoints import HostEndpoints, SocketIf
from rocetune.fleet.ssh import Completed

FIX = Path(__file__).resolve().parents[2] / "fixtures"
SCRIPT = nccl_multi.SCRIPT


def test_each_rank_sources_its_node_s_env_file_and_net_only_disables_p2p_and_shm():
    s = nccl_multi.Settings(env_file="/etc/rocetune/nccl.env", python="/opt/venv/bin/python")
    line = nccl_multi.srun_command(s, ["n1", "n2"], "10.0.0.1", nccl_multi.NET_ONLY)
    assert line.startswith("srun -N 2 -w n1,n2 --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c ")
    inner = nccl_multi.rank_command(s, "10.0.0.1", nccl_multi.NET_ONLY)
    assert inner.startswith("set -a && . /etc/rocetune/nccl.env && set +a && export NCCL_DEBUG=INFO")
    assert "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1" in inner and "/opt/venv/bin/python -c" in inner
    tests = nccl_multi.Settings(nccl_tests_bin="/opt/nccl-tests/build/all_reduce_perf", size_mb=64, iters=5)
    assert nccl_multi.rank_command(tests, "m", {}).endswith("exec /opt/nccl-tests/build/all_reduce_perf "
                                                            "-b 64M -e 64M -g 1 -n 5")


def test_the_job_s_nodes_in_slurm_s_order_without_scontrol(monkeypatch):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import nccl_multi_script as script
    finally:
        sys.path.remove(str(SCRIPT.parent))
    monkeypatch.setenv("PATH", "/nonexistent")
    assert script.hostnames("node[01-03,07],gpu-a") == ["node01", "node02", "node03", "node07", "gpu-a"]
    assert script.hostnames("n1,n2") == ["n1", "n2"]


def test_socket_ifname_is_resolved_the_way_nccl_resolves_it():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import nccl_multi_script as script
    finally:
        sys.path.remove(str(SCRIPT.parent))
    names = ["docker0", "ens3", "ens4", "ens5", "lo"]
    assert script.socket_ifaces("ens", names) == ["ens3", "ens4", "ens5"]
    assert script.socket_ifaces("=ens4", names) == ["ens4"]
    assert script.socket_ifaces("^docker,ens3", names) == ["ens4", "ens5"]
    assert script.socket_ifaces("", names) == []


def run_two_ranks(tmp_path) -> str:
    """The rank script, for real, as srun would start it: two ranks, Gloo on loopback."""
    procs = []
    for rank in range(2):
        env = {**os.environ, "SLURM_PROCID": str(rank), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(rank),
               "GLOO_SOCKET_IFNAME": "lo", "CUDA_VISIBLE_DEVICES": "", "SLURM_JOB_NODELIST": "node[03-04]"}
        env.pop("NCCL_SOCKET_IFNAME", None)
        # rank 0 runs on node03, the job's first node: its address is the rendezvous
        argv = [sys.executable, "-c", SCRIPT.read_text(), "1", "3", "node04=192.0.2.4,node03=127.0.0.1", "29653"]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    return "".join(p.communicate(timeout=120)[0] for p in procs)


def test_the_rank_script_runs_a_gloo_all_reduce_and_says_it_is_not_nccl(tmp_path):
    pytest.importorskip("torch")
    text = run_two_ranks(tmp_path)
    s = nccl_multi.Settings()
    doc = nccl_multi.judge(nccl_multi.read(text, ["a", "b"], s), 0, text, ["a", "b"], s, {})
    assert doc["status"] == "pass", text
    assert [r["rank"] for r in doc["ranks"]] == [0, 1] and {r["backend"] for r in doc["ranks"]} == {"gloo"}
    assert doc["backend"] == "gloo" and "NOT NCCL" in doc["label"] and doc["busbw_gbs"] > 0
    assert doc["ranks"][0]["bytes"] == 2 ** 20 and doc["ranks"][0]["iface"] == "lo"


def rank_lines(nodes, busbw, backend="nccl"):
    return "".join(f"rocetune-nccl-multi: rank {i} world {len(nodes)} backend {backend} host {n} iface ens3 "
                   f"ok=True bytes=16777216 seconds=0.001000 algbw_gbs={busbw:.4f} busbw_gbs={busbw:.4f}\n"
                   for i, n in enumerate(nodes))


def test_nccl_s_log_is_read_with_doctor_s_reader_against_the_plan():
    log = (FIX / "nccl-logs" / "nccl-676-2.11.4-socket-two-hosts.log").read_text()
    text = log + rank_lines(["gpu01", "gpu02"], 5.0)
    s = nccl_multi.Settings()
    plan = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "en"}
    doc = nccl_multi.judge(nccl_multi.read(text, ["gpu01", "gpu02"], s), 0, text, ["gpu01", "gpu02"], s, plan)
    assert doc["nccl_processes"] == 2 and doc["nccl_networks"] == ["Socket"]
    assert doc["status"] == "fail" and doc["differences"], doc  # the plan names RDMA, NCCL used sockets


def test_nccl_tests_rows_are_the_figure_with_all_reduce_perf():
    text = (FIX / "outputs" / "nccl-tests-all_reduce_perf-a3mega-2x8-h100.txt").read_text()
    s = nccl_multi.Settings(nccl_tests_bin="all_reduce_perf", min_busbw=100.0)
    doc = nccl_multi.judge(nccl_multi.read(text, ["a", "b"], s), 0, text, ["a", "b"], s, {})
    assert doc["nccl_tests"]["rows"] == 31 and doc["busbw_gbs"] == pytest.approx(70.742)
    assert doc["status"] == "fail" and "below 100 GB/s" in doc["why"]


class FakeLauncher:
    """srun on a login node: each collective's figure is slow when node n3 is in it."""

    name = "n1"

    def __init__(self):
        self.commands = []

    def run(self, command, step, timeout, stdin=None):
        self.commands.append(command)
        nodes = re.search(r"-w (\S+)", command).group(1).split(",")
        busbw = 1.0 if "n3" in nodes else 10.0
        return Completed(0, rank_lines(nodes, busbw).encode(), b"")


def host(name):
    return SimpleNamespace(name=name, remote=FakeLauncher(), plan_env={},
                           features={"host": {"hostname": f"{name}.lab"}},
                           endpoints=HostEndpoints(name, socket=[SocketIf("ens3", f"10.0.0.{name[1:]}/24", None)]))


def test_a_slow_collective_is_bisected_to_its_node():
    hosts = {n: host(n) for n in ("n1", "n2", "n3", "n4", "n5", "n6")}
    s = nccl_multi.Settings(min_busbw=5.0, variants=("env", "net-only"))
    doc = nccl_multi.run_fleet(hosts, s)
    assert doc["status"] == "fail" and doc["suspects"] == ["n3"], doc.get("bisect")
    assert doc["launcher"] == "n1" and doc["nodes"] == ["n1", "n2", "n3", "n4", "n5", "n6"]
    assert len(doc["bisect"]["runs"]) <= 6
    sent = hosts["n1"].remote.commands
    assert "NCCL_P2P_DISABLE=1" in sent[1] and "NCCL_P2P_DISABLE" not in sent[0]
    assert "10.0.0.1" in sent[0]  # rank 0's rendezvous: the first host's socket address


def test_one_node_is_skipped_and_srun_missing_is_said():
    assert nccl_multi.run_fleet({"n1": host("n1")}, nccl_multi.Settings())["status"] == "skipped"

    class NoSrun(FakeLauncher):
        def run(self, command, step, timeout, stdin=None):
            return Completed(127, b"bash: line 1: srun: command not found\n", b"")

    hosts = {n: host(n) for n in ("n1", "n2")}
    hosts["n1"].remote = NoSrun()
    doc = nccl_multi.run_fleet(hosts, nccl_multi.Settings(variants=("env",)))
    assert doc["status"] == "skipped" and "srun: command not found" in doc["variants"]["env"]["why"]
