"""rocetune lint: the mistakes that silently change what NCCL does, and no false alarms on
settings vendors publish."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pytest

import rocetune.cli.verbs as verbs
from rocetune.cli.main import main
from rocetune.envfiles.write import render
from rocetune.lint.checks import lint_text
from rocetune.lint.host import HostNames
from rocetune.model.qos import default_plan
from rocetune.planner import build_plan
from tests.unit.rules.featurekit import rail_host

EXPERT = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "expert", "*", "expert-*")))


@pytest.fixture(autouse=True)
def _verbs(monkeypatch):
    missing = tuple(v for v in ("explain", "lint") if v not in verbs.NAMES)
    monkeypatch.setattr(verbs, "NAMES", tuple(verbs.NAMES) + missing)


def ids(text, name="env.sh", **kw):
    _, found = lint_text(text, name, **kw)
    return {(f.id, f.severity) for f in found}, found


def one(text, fid, name="env.sh", **kw):
    _, found = lint_text(text, name, **kw)
    hits = [f for f in found if f.id == fid]
    assert hits, [f.text() for f in found]
    return hits[0]


def test_expert_fixtures_are_all_there():
    assert len(EXPERT) == 18


@pytest.mark.parametrize("path", EXPERT, ids=lambda p: "/".join(p.split("/")[-2:]))
def test_published_expert_settings_lint_without_errors(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    _, found = lint_text(text, path)
    errors = [f.text() for f in found if f.severity == "error"]
    assert errors == []


def test_expert_oddities_are_understood_not_flagged():
    conf = Path([p for p in EXPERT if p.endswith("oci-bm-gpu-h100-8/expert-nccl.conf")][0]).read_text()
    f = one(conf, "dynamic-value", "nccl.conf")
    assert "NCCL_NET_PLUGIN" in f.message and "template" in f.message
    foundry = Path([p for p in EXPERT if "llm-foundry" in p][0]).read_text()
    _, found = lint_text(foundry, "launch.sb")
    assert not [x for x in found if x.key == "NCCL_P2P_NET_CHUNKSIZE"]  # $((512 * 1024)) = 524288


@pytest.mark.parametrize("text,fid,fix", [
    ("export NCCL_TOPOLOGY_AWARE=1\n", "nonexistent-name", None),
    ("export NCCL_IB_RETRY_COUNT=7\n", "misspelled-name", "NCCL_IB_RETRY_CNT"),
    ("export NCCL_IB_ROCE_VERSION=2\n", "misspelled-name", "NCCL_IB_ROCE_VERSION_NUM"),
    ("export NCCL_IB_GDR_LEVEL=PHB\n", "removed-name", "NCCL_NET_GDR_LEVEL"),
    ("export NCCL_LL_THRESHOLD=0\n", "removed-name", None),
    ("export NCCL_IB_CUDA_SUPPORT=1\n", "removed-name", "NCCL_NET_GDR_LEVEL"),
    ("export NCCL_SOCKET_IFNAM=eth0\n", "misspelled-name", "NCCL_SOCKET_IFNAME"),
    ("export NCCL_MIN_CHANNELS=32\n", "misspelled-name", "NCCL_MIN_NCHANNELS"),
])
def test_names_nccl_does_not_read_are_errors_with_a_fix(text, fid, fix):
    f = one(text, fid)
    assert f.severity == "error"
    if fix:
        assert fix in (f.fix or "") + f.message


def test_pytorch_names_in_nccls_namespace():
    f = one("export NCCL_ASYNC_ERROR_HANDLING=1\n", "pytorch-name")
    assert f.severity == "warning" and "TORCH_NCCL_ASYNC_ERROR_HANDLING" in f.fix


def test_unknown_name_without_a_near_miss_is_a_warning_and_plugin_names_are_notes():
    assert one("export NCCL_SOMETHING_NEW_AND_LONG=1\n", "unknown-name").severity == "warning"
    assert one("export NCCL_FASTRAK_IFNAME=enp6s0\n", "plugin-name").severity == "info"


@pytest.mark.parametrize("text,fid,sev", [
    ("NCCL_IB_TIMEOUT=32\n", "out-of-range", "error"),
    ("NCCL_IB_TIMEOUT=0\n", "out-of-range", "warning"),
    ("NCCL_IB_RETRY_CNT=8\n", "out-of-range", "error"),
    ("NCCL_IB_TC=256\n", "out-of-range", "error"),
    ("NCCL_IB_QPS_PER_CONNECTION=0\n", "out-of-range", "error"),
    ("NCCL_IB_TIMEOUT=$((40))\n", "out-of-range", "error"),
    ("NCCL_BUFFSIZE=4M\n", "not-a-number", "error"),
    ("NCCL_IB_ADDR_FAMILY=inet6\n", "bad-value", "error"),
    ("NCCL_IB_ADDR_RANGE=10.0.0.0\n", "bad-value", "error"),
    ("NCCL_NET_GDR_LEVEL=NEAR\n", "bad-value", "error"),
    ("NCCL_NET_GDR_LEVEL=5\n", "legacy-level", "info"),
    ("NCCL_SOCKET_IFNAME=e\n", "ifname-ignored", "error"),
    ("NCCL_SOCKET_IFNAME=eth0\n", "prefix-match", "info"),
    ("NCCL_IB_HCA=mlx5_1\n", "prefix-match", "info"),
    ("GLOO_SOCKET_IFNAME==eth0\n", "gloo-ifname-syntax", "error"),
    ("NCCL_ALGO=Ring\n", "forced-algorithm", "info"),
    ("NCCL_IB_HCA=\n", "empty-value", "warning"),
    ("NCCL_SOCKET_NTHREADS=16\nNCCL_NSOCKS_PERTHREAD=8\n", "socket-threads-product", "error"),
    ("NCCL_IB_DISABLE=1\nNCCL_IB_HCA==mlx5_0\n", "ib-vars-ignored", "warning"),
    ("NCCL_DEBUG=WARN\nNCCL_DEBUG=INFO\n", "duplicate", "warning"),
])
def test_values(text, fid, sev):
    assert one(text, fid, "job.sh").severity == sev


def test_not_a_number_says_what_nccl_reads():
    assert "reads it as 4" in one("NCCL_BUFFSIZE=4M\n", "not-a-number").message


def test_nccl_conf_specific_traps():
    assert one("NCCL_IB_HCA='=mlx5_0'\n", "conf-quoted-value", "nccl.conf").severity == "error"
    assert one("NCCL_IB_TC = 106\n", "conf-whitespace", "nccl.conf").severity == "error"
    assert one("NCCL_IB_TC=106\r\n", "conf-whitespace", "nccl.conf").severity == "error"
    assert one("UCX_NET_DEVICES=mlx5_0:1\n", "conf-not-nccl", "nccl.conf").severity == "warning"
    assert "keeps the first" in one("NCCL_DEBUG=WARN\nNCCL_DEBUG=INFO\n", "duplicate", "nccl.conf").message


def test_traffic_class_against_the_qos_plan():
    q = default_plan()
    assert one("export NCCL_IB_TC=41\n", "tc-contradicts-qos", qos=q).severity == "error"
    assert one("export UCX_IB_TRAFFIC_CLASS=96\n", "tc-contradicts-qos", qos=q).severity == "error"
    assert one("export NCCL_IB_TC=104\n", "tc-ecn-differs", qos=q).severity == "warning"
    found, _ = ids("export NCCL_IB_TC=106\n", qos=q)
    assert not {f for f in found if f[0].startswith("tc-")}
    found, _ = ids("export NCCL_IB_TC=41\n")
    assert not {f for f in found if f[0].startswith("tc-")}, "no QoS plan, no QoS check"


def host_root(tmp_path, devices):
    features = {"rdma": {"devices": [{"name": d, "ports": [{"port": p} for p in ports]}
                                     for d, ports in devices.items()]},
                "net": {"interfaces": [{"name": "eth0"}]}}
    return HostNames.from_features(features)


def test_hca_names_checked_against_the_host(tmp_path):
    host = host_root(tmp_path, {"mlx5_0": [1], "mlx5_1": [1], "mlx5_10": [1]})
    assert one("NCCL_IB_HCA==mlx5_9:1\n", "hca-not-found", host=host).severity == "error"
    assert one("NCCL_IB_HCA==mlx5_0:2\n", "hca-port-not-found", host=host).severity == "error"
    f = one("NCCL_IB_HCA=mlx5_1\n", "prefix-match", host=host)
    assert f.severity == "warning" and "mlx5_10" in f.message
    assert one("NCCL_IB_HCA=^=mlx5_7\n", "hca-not-found", host=host).severity == "warning"
    assert one("UCX_NET_DEVICES=mlx5_3:1\n", "ucx-device-not-found", host=host).severity == "error"
    assert one("NCCL_SOCKET_IFNAME==eth1\n", "ifname-not-found", host=host).severity == "error"
    found, _ = ids("NCCL_IB_HCA==mlx5_0:1,mlx5_10:1\nNCCL_SOCKET_IFNAME==eth0\nUCX_NET_DEVICES=mlx5_0:1\n", host=host)
    assert not [f for f in found if f[1] != "info"]


@pytest.mark.parametrize("fmt", ["sh", "nccl-conf", "systemd", "docker", "deepspeed", "k8s", "json"])
def test_what_rocetune_writes_lints_clean(fmt):
    f = rail_host().build()
    text = render(build_plan(f, qos=default_plan()), fmt, f)
    _, found = lint_text(text, f"out.{fmt}", fmt, qos=default_plan())
    assert [x.text() for x in found if x.severity != "info"] == []


def test_cli_exit_codes_and_json(tmp_path, capsys):
    bad = tmp_path / "bad.sh"
    bad.write_text("export NCCL_IB_RETRY_COUNT=7\nexport NCCL_DEBUG=WARN\n")
    good = tmp_path / "nccl.conf"
    good.write_text("NCCL_DEBUG=WARN\n")
    root = tmp_path / "root"
    (root / "sys").mkdir(parents=True)
    assert main(["--root", str(root), "lint", str(good)]) == 0
    capsys.readouterr()
    assert main(["--root", str(root), "lint", str(bad)]) == 1
    out, _ = capsys.readouterr()
    head = next(line for line in out.splitlines() if "misspelled-name" in line).split()
    assert head[:2] == ["FAIL", "misspelled-name"] and head[2].endswith("bad.sh:1") and "NCCL_IB_RETRY_CNT" in out
    assert out.splitlines()[-1].startswith("1 file(s): 1 failure(s), 0 warning(s)")
    assert main(["--root", str(root), "--json", "lint", str(bad), str(good)]) == 1
    env = json.loads(capsys.readouterr()[0])
    assert env["data"]["counts"]["error"] == 1 and env["exit_code"] == 1
    assert {f["id"] for f in env["data"]["findings"]} == {"misspelled-name"}
    assert main(["--root", str(root), "lint", str(tmp_path / "nope")]) == 3


def test_cli_reads_the_qos_plan_under_the_root(tmp_path, capsys):
    root = tmp_path / "root"
    (root / "etc" / "rocetune").mkdir(parents=True)
    (root / "etc" / "rocetune" / "qos.yml").write_text("data:\n  dscp: 26\n  priority: 3\n")
    f = tmp_path / "nccl.conf"
    f.write_text("NCCL_IB_TC=41\n")
    assert main(["--root", str(root), "lint", str(f)]) == 1
    assert "tc-contradicts-qos" in capsys.readouterr()[0]


def _rails_and_front_end() -> HostNames:
    """Two GPU rails and a front-end RDMA port on the default-route interface."""
    h = rail_host(2)
    h.rdma("mlx5_9", netdev="eth9", ipv4="10.9.0.5/24")
    h.default_route("eth9")
    return HostNames.from_features(h.build())


def test_a_bare_prefix_selecting_non_rails_is_a_failure():
    host = _rails_and_front_end()
    f = one("export NCCL_IB_HCA=mlx5\n", "hca-selects-non-rail", host=host)
    assert f.severity == "error" and "selects mlx5_9:1" in f.message and "front-end" in f.message
    assert one("export NCCL_IB_HCA=^mlx5_0\n", "hca-selects-non-rail", host=host).severity == "error"
    found, _ = ids("export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'\n", host=host)
    assert "hca-selects-non-rail" not in {i for i, _ in found}
    found, _ = ids("export NCCL_IB_HCA=mlx5\n")  # no host at hand: names are not judged
    assert "hca-selects-non-rail" not in {i for i, _ in found}


def test_gid_index_zero_is_a_warning_another_index_a_note():
    assert one("export NCCL_IB_GID_INDEX=0\n", "gid-index-pinned").severity == "warning"
    assert one("export NCCL_IB_GID_INDEX=3\n", "gid-index-pinned").severity == "info"
