"""`rocetune fleet validate` without the lab: the endpoints each fixture host's probe hands the
pair tests, and whole runs against SSH servers on 127.0.0.1 (tests/integration/sshserver.py)
whose `rocetune`, `ib_write_bw` and `iperf3` print recorded real outputs
(tests/fixtures/outputs/SOURCES.md). The lab's VMs run the real tools (tests/lab/test_vm.py)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import paramiko
import pytest

from rocetune.fleet.endpoints import endpoints
from rocetune.fleet.results import from_doc

from .clirun import no_traceback, rocetune, rocetune_json
from .sshserver import SSHServer, dead_port, fake_rocetune

pytestmark = pytest.mark.slow  # pair tests against fake remotes, with their timeouts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OUTPUTS = FIXTURES / "outputs"


def probe_data(host: str) -> dict:
    code, env = rocetune_json("probe", "--root", str(FIXTURES / "hosts" / host))
    assert code == 0, env["errors"]
    return env["data"]


@pytest.mark.parametrize("host, rails, gid, rate, socket", [
    ("dgx-h100-roce", 8, 3, 400, "bond0"),
    ("softroce-3nic", 2, 1, 2.5, "ens3"),
    ("hgx-h100-ib", 8, None, 400, "eth0"),
])
def test_endpoints_are_the_ports_and_interface_the_plan_hands_nccl(host, rails, gid, rate, socket):
    data = probe_data(host)
    ep = endpoints(from_doc(host, {"probe": data}))
    env = data["plan"]["env"]
    assert [p.name for p in ep.rdma] == env["NCCL_IB_HCA"].lstrip("=").split(",")
    assert {p.gid_index for p in ep.rdma} == {gid} and {p.rate_gbps for p in ep.rdma} == {rate}
    assert [s.ifname for s in ep.socket] == [socket] and all(s.ipv4 for s in ep.socket)
    if gid is not None:  # RoCE: the address of the GID the test uses is the netdev's own
        assert all(p.ipv4 for p in ep.rdma)


def test_a_pinned_gid_index_and_a_narrower_hca_list_are_followed():
    data = probe_data("dgx-h100-roce")
    data["plan"]["env"].update(NCCL_IB_HCA="=mlx5_0:1,mlx5_3:1", NCCL_IB_GID_INDEX="2")
    ep = endpoints(from_doc("h", {"probe": data}))
    assert [(p.name, p.gid_index) for p in ep.rdma] == [("mlx5_0:1", 2), ("mlx5_3:1", 2)]
    data["plan"]["env"]["NCCL_IB_GID_INDEX"] = "two"
    assert any("not a GID index" in n for n in endpoints(from_doc("h", {"probe": data})).notes)


# --- whole runs over SSH -------------------------------------------------------------------------
def _bin(bin_dir: Path, probe: Path, perftest: bool = True, doctor: Path = None) -> None:
    fake_rocetune(bin_dir, body=f'case "$*" in\n  *probe*) cat "{probe}"; exit 0;;\n'
                                f'  *doctor*) cat "{doctor}"; exit 1;;\nesac\nexit 2\n')
    if perftest:
        perf = bin_dir / "ib_write_bw"
        perf.write_text("#!/bin/sh\n# server: no address after -p PORT\n"
                        'case "$*" in *" -p "[0-9][0-9][0-9][0-9][0-9]) exit 0;; esac\n'
                        f'cat "{OUTPUTS / "perftest-ib_write_bw-gbits-roce.txt"}"\n', encoding="utf-8")
        perf.chmod(0o755)
    iperf = bin_dir / "iperf3"
    iperf.write_text('#!/bin/sh\ncase "$*" in *"-c "*) cat "'
                     f'{OUTPUTS / "iperf3-json-tcp-gcp-10s.json"}"; exit 0;; esac\nexit 0\n', encoding="utf-8")
    iperf.chmod(0o755)


class Cluster:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.host_key, self.client_key = paramiko.RSAKey.generate(2048), paramiko.RSAKey.generate(2048)
        self.identity = tmp / "client_key"
        self.client_key.write_private_key_file(str(self.identity))
        self.home = tmp / "home"
        (self.home / ".ssh").mkdir(parents=True)
        self.probe = tmp / "probe.json"
        proc = rocetune("--json", "probe", "--root", str(FIXTURES / "hosts" / "dgx-h100-roce"))
        self.probe.write_text(proc.stdout, encoding="utf-8")
        proc = rocetune("--json", "doctor", "--no-counters", "--root", str(FIXTURES / "hosts" / "dgx-h100-roce"))
        self.doctor = tmp / "doctor.json"
        self.doctor.write_text(proc.stdout, encoding="utf-8")
        self.servers, self.ports = [], {}

    def host(self, name: str, perftest: bool = True, doctor_error: str = "", probe: Path = None) -> None:
        bin_dir = self.tmp / "bin" / name
        doctor = self.doctor
        if doctor_error:  # this node's doctor finds an error (as on a node whose peer memory is missing)
            env = json.loads(self.doctor.read_text(encoding="utf-8"))
            env["data"]["findings"].append({"id": doctor_error, "severity": "error", "subject": "nccl",
                                            "message": "nvidia-peermem is not loaded", "fix": "modprobe nvidia-peermem"})
            doctor = self.tmp / f"doctor-{name}.json"
            doctor.write_text(json.dumps(env), encoding="utf-8")
        _bin(bin_dir, probe or self.probe, perftest, doctor)
        srv = SSHServer(self.host_key, self.client_key, bin_dir)
        self.servers.append(srv)
        self.ports[name] = srv.port

    def dead(self, name: str) -> None:
        self.ports[name] = dead_port()

    def validate(self, *args: str, verb: str = "validate"):
        config = "".join(f"Host {h}\n  HostName 127.0.0.1\n  Port {p}\n" for h, p in self.ports.items())
        (self.home / ".ssh" / "config").write_text(config, encoding="utf-8")
        (self.home / ".ssh" / "known_hosts").write_text("".join(
            f"[127.0.0.1]:{p} {self.host_key.get_name()} {self.host_key.get_base64()}\n"
            for p in self.ports.values()), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env.update(HOME=str(self.home), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        proc = rocetune("--json", "fleet", verb, "--identity", str(self.identity), "--seconds", "1",
                        "--timeout", "20", *args, env=env)
        assert no_traceback(proc), proc.stderr
        return proc.returncode, json.loads(proc.stdout)

    def close(self):
        for s in self.servers:
            s.close()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def test_every_rail_of_every_pair_is_tested_and_judged(cluster, tmp_path):
    for name in ("n1", "n2", "n3"):
        cluster.host(name)
    out, page = tmp_path / "v.json", tmp_path / "v.html"
    code, env = cluster.validate("n1", "n2", "n3", "--line-rate", "0.05", "-o", str(out), "--html", str(page))
    doc = env["data"]
    assert code == 0 and doc["summary"]["passed"], json.dumps(doc["pairs"][0])[:3000]
    # 3 hosts: every pair once, in 3 rounds of one pair (the third host sits each round out)
    assert len(doc["rounds"]) == 3 and all(len(r) == 1 for r in doc["rounds"])
    assert sorted(tuple(sorted(r[0])) for r in doc["rounds"]) == [("n1", "n2"), ("n1", "n3"), ("n2", "n3")]
    for pair in doc["pairs"]:
        rdma = [t for t in pair["tests"] if t["kind"] == "rdma"]
        assert [t["rail"] for t in rdma] == list(range(8)) and all(t["status"] == "pass" for t in rdma)
        assert rdma[0]["command"].startswith("ib_write_bw -d mlx5_0 -i 1 -x 3 -F --report_gbits -D 1")
        tcp = [t for t in pair["tests"] if t["kind"] == "tcp"]
        assert tcp[0]["a_if"] == "bond0" and tcp[0]["measured_gbps"] == 0.087 and tcp[0]["status"] == "pass"
    assert json.loads(out.read_text()) == doc
    assert "<svg" in page.read_text() and "n1 - n2" in page.read_text()


def test_below_the_probed_line_rate_fails_and_names_why(cluster):
    cluster.host("n1")
    cluster.host("n2")
    code, env = cluster.validate("n1", "n2", "--tests", "rdma")
    doc = env["data"]
    assert code == 1 and not doc["summary"]["passed"] and doc["summary"]["failed_pairs"] == 1
    rail = doc["pairs"][0]["tests"][0]
    assert rail["status"] == "fail" and rail["verdict"]["line_rate_gbps"] == 400
    assert "0.48 Gb/s is below 360.00 (90% of 400 Gb/s)" in rail["why"]
    assert any(ln.split()[:2] == ["8", "224958464"] for ln in rail["evidence"]["client"])  # its report row
    assert doc["summary"]["suspects"] == ["n1", "n2"]  # two hosts: either may be at fault


def test_a_down_host_and_a_host_without_perftest_are_named(cluster):
    cluster.host("n1")
    cluster.host("n2")
    cluster.host("n3", perftest=False)
    cluster.dead("n4")
    code, env = cluster.validate("n1", "n2", "n3", "n4", "--tests", "rdma", "--line-rate", "0.5")
    doc = env["data"]
    assert code == 1
    assert "cannot connect" in doc["hosts"]["n4"]["error"]
    assert doc["summary"]["unreachable"] == ["n4"] and doc["summary"]["suspects"] == ["n3", "n4"], json.dumps(doc["pairs"])[:3000]
    bad = [p for p in doc["pairs"] if "n3" in (p["a"], p["b"])]
    assert len(bad) == 2 and all(p["status"] == "error" for p in bad)
    assert "command not found" in bad[0]["tests"][0]["error"]
    good = [p for p in doc["pairs"] if "n3" not in (p["a"], p["b"])]
    assert [p["status"] for p in good] == ["pass"]


def test_text_report_marks_failures_and_the_matrix(cluster):
    cluster.host("n1")
    cluster.host("n2")
    config_env = cluster.validate("n1", "n2", "--tests", "rdma")  # writes ~/.ssh/config
    assert config_env[0] == 1
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env.update(HOME=str(cluster.home), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = rocetune("fleet", "validate", "--identity", str(cluster.identity), "--seconds", "1",
                    "--tests", "rdma", "n1", "n2", env=env)
    assert proc.returncode == 1 and no_traceback(proc)
    assert "-- FAIL" in proc.stdout and "SLOWEST RDMA RAIL PER PAIR" in proc.stdout
    assert re.search(r"^  ! +n1 - n2 +rdma +rail 0 mlx5_0:1 -> mlx5_0:1 +0\.48 Gb/s +need 360 +FAIL$", proc.stdout, re.M), \
        proc.stdout


def test_preflight_leaves_out_the_node_doctor_fails_and_tests_the_rest(cluster):
    cluster.host("n1")
    cluster.host("n2", doctor_error="peer-memory-missing")
    cluster.host("n3")
    code, env = cluster.validate("n1", "n2", "n3", "--line-rate", "0.5", verb="preflight")
    doc = env["data"]
    assert code == 1 and not doc["summary"]["passed"]
    assert doc["hosts"]["n2"]["error"] == "doctor: 1 error finding(s): peer-memory-missing"
    assert doc["hosts"]["n2"]["doctor"]["errors"][0]["fix"] == "modprobe nvidia-peermem"
    assert [(p["a"], p["b"], p["status"]) for p in doc["pairs"]] == [("n1", "n3", "pass")]
    assert doc["summary"]["suspects"] == ["n2"] and doc["hosts"]["n1"]["doctor"]["warnings"] > 0
    assert [t["kind"] for t in doc["pairs"][0]["tests"]] == ["rdma"] * 8  # preflight: RDMA only by default


def test_preflight_skips_the_rounds_its_budget_cannot_hold_and_one_node_is_doctor_alone(cluster):
    for name in ("n1", "n2", "n3", "n4"):
        cluster.host(name)
    # A round of 1 s tests cannot fit in a 1 s budget: doctor ran, every round is skipped and said so.
    code, env = cluster.validate("n1", "n2", "n3", "n4", "--budget", "1", verb="preflight")
    doc = env["data"]
    assert [p["status"] for p in doc["pairs"]] == ["skipped"] * 6 and doc["summary"]["skipped_pairs"] == 6
    assert all("the 1 s budget would be passed" in p["why"] for p in doc["pairs"])
    assert code == 0 and all(d["doctor"] is not None for d in doc["hosts"].values())
    code, env = cluster.validate("n1", verb="preflight")
    assert code == 0 and env["data"]["summary"]["passed"] and env["data"]["pairs"] == []


def test_the_fabric_schedule_crosses_the_leaves_lldp_reports_and_states_its_coverage(cluster, tmp_path):
    # Four hosts, each alone behind its own leaf on every rail (as each host's LLDP reports it): the
    # ring reaches 4 of the 6 leaf pairs, a cross-leaf round the other two.
    env = json.loads(cluster.probe.read_text(encoding="utf-8"))
    netdev = {d["name"]: d["ports"][0]["netdev"] for d in env["data"]["features"]["rdma"]["devices"]}
    netdevs = [netdev[hca.split(":")[0]] for hca in env["data"]["plan"]["env"]["NCCL_IB_HCA"].lstrip("=").split(",")]
    for i, name in enumerate(("n1", "n2", "n3", "n4")):
        env["data"]["features"]["lldp"] = {"tool": "lldpctl -f json0", "error": None, "interfaces": {
            nd: [{"chassis": f"leaf{i}-r{rail}", "port": f"swp{i}"}] for rail, nd in enumerate(netdevs)}}
        probe = tmp_path / f"probe-{name}.json"
        probe.write_text(json.dumps(env), encoding="utf-8")
        cluster.host(name, probe=probe)
    code, out = cluster.validate("n1", "n2", "n3", "n4", "--mode", "fabric", "--tests", "rdma", "--line-rate", "0.05")
    doc = out["data"]
    assert code == 0 and doc["mode"] == "fabric", json.dumps(doc["pairs"])[:3000]
    assert doc["round_kinds"] == ["ring", "ring", "cross-leaf"]
    crossed = sorted(tuple(sorted((p["a"], p["b"]))) for p in doc["pairs"] if p["schedule"] == "cross-leaf")
    assert crossed == [("n1", "n3"), ("n2", "n4")]
    cov = doc["coverage"]
    assert cov["hosts"] == {"reached": 4, "of": 4} and cov["rails"] == {"reached": 32, "of": 32}
    assert [(r["rail"], r["reached"], r["of"], r["missing"]) for r in cov["leaf_pairs"]] == \
        [(rail, 6, 6, []) for rail in range(8)]


def test_slurm_node_list_is_expanded_by_scontrol(tmp_path):
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/sh\n[ "$1 $2 $3" = "show hostnames gpu[01-02]" ] && printf "gpu01\\ngpu02\\n"\n',
                        encoding="utf-8")
    scontrol.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}", SLURM_JOB_NODELIST="gpu[01-02]",
               HOME=str(tmp_path))
    proc = rocetune("--json", "fleet", "preflight", "--slurm", "--timeout", "2", env=env)
    doc = json.loads(proc.stdout)["data"]
    assert proc.returncode == 1 and list(doc["hosts"]) == ["gpu01", "gpu02"], proc.stderr
    env.pop("SLURM_JOB_NODELIST")
    proc = rocetune("fleet", "preflight", "--slurm", env=env)
    assert proc.returncode == 3 and "SLURM_JOB_NODELIST is not set" in proc.stderr and no_traceback(proc)


def test_nccl_on_each_node_with_its_env_file(cluster, tmp_path):
    logs = FIXTURES / "nccl-logs"
    for name in ("n1", "n2"):
        cluster.host(name)
        fake_py = cluster.tmp / "bin" / name / "torchpy"
        fake_py.write_text(f'#!/bin/sh\n[ "$NCCL_DEBUG" = INFO ] || exit 9\ncat "{logs / "rxe-2.20.5-nccl_node0.log"}" '
                           f'"{logs / "rxe-2.20.5-nccl_node1.log"}"\n'
                           'for r in 0 1; do echo "rocetune-nccl-check: rank $r ok=True bytes=67108864 '
                           'seconds=0.5 busbw_gbs=$ROCETUNE_TEST_BUSBW"; done\n', encoding="utf-8")
        fake_py.chmod(0o755)
    env_file = tmp_path / "job.env"
    env_file.write_text("ROCETUNE_TEST_BUSBW=1.25\n", encoding="utf-8")
    out = tmp_path / "v.json"
    code, env = cluster.validate("n1", "n2", "--tests", "nccl", "--nccl-python", "torchpy",
                                 "--nccl-env-file", str(env_file), "-o", str(out))
    doc = env["data"]
    nccl = {h: d["nccl"] for h, d in doc["hosts"].items()}
    # The fixture host's plan names its 8 mlx5 rails; NCCL (the recorded run) used rxe0: a failure, named.
    assert code == 1 and doc["pairs"] == [] and doc["summary"]["nccl_failed"] == ["n1", "n2"]
    assert all(n["status"] == "fail" and n["busbw_gbs"] == 1.25 for n in nccl.values()), nccl
    assert "NCCL_IB_HCA" in nccl["n1"]["why"]
    # An earlier result is a baseline; one without NCCL figures is refused in one line.
    assert json.loads(out.read_text())["hosts"]["n1"]["nccl"]["busbw_gbs"] == 1.25
    proc = rocetune("fleet", "validate", "n1", "n2", "--tests", "nccl", "--nccl-baseline", str(env_file))
    assert proc.returncode == 3 and "not JSON" in proc.stderr and no_traceback(proc)


@pytest.mark.parametrize("args, word", [
    (["n1"], "at least two hosts"),
    (["n1", "n2", "--tests", "udp"], "--tests udp"),
    (["n1", "n2", "--fraction", "1.5"], "--fraction 1.5"),
    (["n1", "n2", "--seconds", "0"], "--seconds 0"),
])
def test_usage_errors_are_one_line(args, word):
    proc = rocetune("fleet", "validate", *args)
    assert proc.returncode == 2 and no_traceback(proc) and word in proc.stderr, proc.stderr
