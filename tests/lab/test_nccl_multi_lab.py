"""`fleet validate --tests nccl-multi` through a real Slurm (python3 -m lab.slurm: Debian's slurmctld
and one slurmd per lab host): srun starts one rank per node, each sourcing its node's own env file
-- the one `rocetune env` plans there, live -- and the collective runs across the four hosts.

The lab has no GPU: the ranks run PyTorch's Gloo on the interface the env's NCCL_SOCKET_IFNAME
names, and the result says it is not NCCL. What is real: the scheduler's launch, each node's env,
the rendezvous on the socket path the env names, the all_reduce across the nodes, the bus
bandwidth, and the bisection -- node03's link slowed with tc finds node03 by halving.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab import netns, slurm

REPO = Path(__file__).resolve().parents[2]
AGENT = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m rocetune"
WRAPPER = "/etc/rocetune-lab/rocetune"
ENV_FILE = "/etc/rocetune/nccl.env"
SLOW = "node03"


@pytest.fixture(scope="module")
def cluster(lab4):
    for name in lab4.names:
        netns.run_on(name, f"mkdir -p /etc/rocetune-lab /etc/rocetune && printf '#!/bin/sh\\nexec {AGENT} \"$@\"\\n' "
                         f"> {WRAPPER} && chmod 0755 {WRAPPER} && {WRAPPER} env --format sh -o {ENV_FILE}")
    c = slurm.start(lab4)
    try:
        yield lab4, c
    finally:
        slurm.stop()
        for name in lab4.names:
            netns.run_on(name, f"tc qdisc del dev {netns.HOST_IF} root 2>/dev/null; rm -f {ENV_FILE}", check=False)


def validate(info, tmp: Path, *args: str):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), HOME=str(tmp))
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "validate",
                           *[ip for _, ip in info.hosts], "--tests", "nccl-multi", "--nccl-python", sys.executable,
                           "--nccl-env-file", ENV_FILE, "--identity", str(info.key), "--known-hosts",
                           str(info.known_hosts), "--user", "root", "--command", WRAPPER, *args],
                          env=env, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["data"], {ip: name for name, ip in info.hosts}


def test_one_collective_across_the_nodes_through_srun_with_each_node_s_env(cluster, tmp_path):
    info, _ = cluster
    env = netns.run_on("node01", f"cat {ENV_FILE}").stdout
    assert "NCCL_SOCKET_IFNAME=" in env, env
    code, doc, names = validate(info, tmp_path)
    r = doc["fleet"]["nccl-multi"]
    assert code == 0 and r["status"] == "pass", json.dumps(r)[:3000]
    assert r["nodes"] == ["node01", "node02", "node03", "node04"] and r["backend"] == "gloo"
    assert "NOT NCCL" in r["label"] and netns.HOST_IF in r["label"]
    for variant in ("env", "net-only"):
        v = r["variants"][variant]
        assert v["status"] == "pass" and len(v["ranks"]) == 4 and v["busbw_gbs"] > 0, v
        assert sorted(x["host"] for x in v["ranks"]) == ["node01", "node02", "node03", "node04"]
    assert r["variants"]["net-only"]["env"] == {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
    print(f"nccl-multi (gloo on {netns.HOST_IF}): {r['busbw_gbs']} GB/s bus bandwidth across 4 nodes")


def test_a_slow_node_is_found_by_bisection(cluster, tmp_path):
    info, _ = cluster
    small = ("--nccl-multi-variants", "env", "--nccl-multi-size", "2", "--nccl-multi-iters", "3")
    code, doc, _ = validate(info, tmp_path, *small)
    fast = doc["fleet"]["nccl-multi"]["busbw_gbs"]
    netns.run_on(SLOW, f"tc qdisc add dev {netns.HOST_IF} root tbf rate 40mbit burst 32kbit latency 400ms")
    try:
        code, doc, _ = validate(info, tmp_path, *small, "--nccl-multi-min-busbw", str(round(fast / 4, 4)))
    finally:
        netns.run_on(SLOW, f"tc qdisc del dev {netns.HOST_IF} root", check=False)
    r = doc["fleet"]["nccl-multi"]
    assert code == 1 and r["status"] == "fail", json.dumps(r)[:3000]
    assert r["bisect"]["suspects"] == [SLOW], r["bisect"]
    assert len(r["bisect"]["runs"]) <= 4
    print(f"bisection: {fast} GB/s healthy; with {SLOW} at 40 Mbit/s: {r['busbw_gbs']} GB/s, "
          f"{SLOW} named in {len(r['bisect']['runs'])} runs")
