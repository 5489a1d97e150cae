"""rocetune lint as a user runs it: the dialect of each file, findings as data (not an error
envelope), unreadable files beside good ones, and names checked against a Features document."""

from __future__ import annotations

import json
import os

import pytest

import rocetune.cli.verbs as verbs
from rocetune.app import host_features
from rocetune.cli.main import main

HOST = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "hosts", "dgx-h100-roce")


@pytest.fixture(autouse=True)
def _verbs(monkeypatch):
    missing = tuple(v for v in ("lint",) if v not in verbs.NAMES)
    monkeypatch.setattr(verbs, "NAMES", tuple(verbs.NAMES) + missing)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    (r / "sys").mkdir(parents=True)  # a host root with nothing in its sysfs
    return str(r)


def lint_json(capsys, *args):
    code = main(["--json", "lint", *args])
    return code, json.loads(capsys.readouterr().out)


CONFIGMAP = 'apiVersion: v1\nkind: ConfigMap\ndata:\n  NCCL_IB_TC: "abc"\n'


def test_each_file_says_the_dialect_it_was_read_as(tmp_path, root, capsys):
    cm = tmp_path / "nccl.env"
    cm.write_text(CONFIGMAP)
    job = tmp_path / "job.conf"
    job.write_text("export NCCL_DEBUG=WARN\n")
    code, env = lint_json(capsys, "--root", root, str(cm), str(job))
    got = {os.path.basename(f["path"]): (f["format"], f["detected"]) for f in env["data"]["files"]}
    assert got["nccl.env"][0] == "k8s" and "ConfigMap" in got["nccl.env"][1]
    assert got["job.conf"][0] == "sh" and "shell syntax" in got["job.conf"][1]
    assert code == 1 and [f["id"] for f in env["data"]["findings"] if f["severity"] == "error"] == ["not-a-number"]
    main(["--root", root, "lint", str(cm), str(job)])
    out = capsys.readouterr().out
    assert f"{cm}: read as k8s (a ConfigMap" in out and f"{job}: read as sh (shell syntax" in out


def test_format_forces_every_file(tmp_path, root, capsys):
    a = tmp_path / "a.sh"
    a.write_text("NCCL_IB_HCA='=mlx5_0'\n")
    b = tmp_path / "b.env"
    b.write_text("NCCL_DEBUG=WARN\n")
    code, env = lint_json(capsys, "--root", root, "--format", "nccl-conf", str(a), str(b))
    assert [(f["format"], f["detected"]) for f in env["data"]["files"]] == [("nccl-conf", "forced")] * 2
    assert code == 1 and {f["id"] for f in env["data"]["findings"] if f["severity"] == "error"} == {"conf-quoted-value"}


def test_findings_are_not_an_error_envelope(tmp_path, root, capsys):
    bad = tmp_path / "bad.sh"
    bad.write_text("export NCCL_IB_RETRY_COUNT=7\n")
    code, env = lint_json(capsys, "--root", root, str(bad))
    assert code == 1 and env["status"] == "findings" and env["errors"] == []
    f = env["data"]["findings"][0]
    assert (f["id"], f["file"], f["line"], f["key"], f["kind"]) == \
        ("misspelled-name", str(bad), 1, "NCCL_IB_RETRY_COUNT", "lint")
    assert "src/misc/param.cc" in f["source"] and f["fix"] == "rename it NCCL_IB_RETRY_CNT"
    warn = tmp_path / "warn.sh"
    warn.write_text("export NCCL_IB_TIMEOUT=0\n")
    code, env = lint_json(capsys, "--root", root, str(warn))
    assert (code, env["status"]) == (0, "warning")
    code, env = lint_json(capsys, "--root", "/definitely/not/here", str(warn))
    assert env["status"] == "error" and env["errors"]


def test_an_unreadable_file_is_a_finding_and_the_rest_are_linted(tmp_path, root, capsys):
    good = tmp_path / "env.sh"
    good.write_text("export NCCL_IB_TC=300\n")
    binary = tmp_path / "blob.sh"
    binary.write_bytes(b"NCCL_X=1\x00\x01")
    missing = tmp_path / "missing.sh"
    code, env = lint_json(capsys, "--root", root, str(missing), str(tmp_path), str(binary), str(good))
    assert code == 1 and env["status"] == "findings"
    ids = [(f["id"], os.path.basename(f["file"])) for f in env["data"]["findings"]]
    assert ("out-of-range", "env.sh") in ids
    assert {i for i, name in ids if name != "env.sh"} == {"unreadable-file"} and len(ids) == 4
    assert main(["--root", root, "lint", str(missing)]) == 3  # nothing at all could be read


def test_crlf_shell_file_is_an_error(tmp_path, root, capsys):
    f = tmp_path / "env.sh"
    f.write_bytes(b"export NCCL_SOCKET_IFNAME==bond0\r\nexport NCCL_DEBUG=WARN\r\n")
    code, env = lint_json(capsys, "--root", root, str(f))
    ids = {x["id"] for x in env["data"]["findings"] if x["severity"] == "error"}
    assert code == 1 and "crlf-line-endings" in ids


def test_names_checked_against_a_features_file(tmp_path, root, capsys):
    features = host_features(HOST)
    saved = tmp_path / "features.json"
    saved.write_text(json.dumps(features))
    dev = features["rdma"]["devices"][0]["name"]
    netdev = features["net"]["interfaces"][0]["name"]
    env_sh = tmp_path / "env.sh"
    env_sh.write_text(f"NCCL_IB_HCA=={dev}:1,nosuch_9:1\nNCCL_SOCKET_IFNAME=={netdev},nosuch0\n"
                      f"UCX_NET_DEVICES={dev}\n")
    code, env = lint_json(capsys, "--root", root, "--features", str(saved), str(env_sh))
    found = {(f["id"], f["line"]) for f in env["data"]["findings"] if f["severity"] == "error"}
    assert found == {("hca-not-found", 1), ("ifname-not-found", 2), ("ucx-port-missing", 3)}
    assert env["data"]["host"]["source"] == f"features {saved}"
    ucx = [f for f in env["data"]["findings"] if f["id"] == "ucx-port-missing"][0]
    assert f"{dev}:1" in ucx["fix"]
    # The same host through --root: probed, not walked privately.
    code2, env2 = lint_json(capsys, "--root", HOST, str(env_sh))
    assert {(f["id"], f["line"]) for f in env2["data"]["findings"] if f["severity"] == "error"} == found
    assert env2["data"]["host"]["source"] == f"probe of {HOST}"
    code3, env3 = lint_json(capsys, "--root", HOST, "--host-check", "no", str(env_sh))
    assert env3["data"]["host"] is None and not {f["id"] for f in env3["data"]["findings"]} & {
        "hca-not-found", "ifname-not-found"}


def test_host_check_yes_without_anything_to_check_against_is_refused(tmp_path, root, capsys):
    f = tmp_path / "env.sh"
    f.write_text("NCCL_IB_HCA==mlx5_0\n")
    assert main(["--root", root, "lint", "--host-check", "yes", str(f)]) == 3
    assert "no RDMA device" in capsys.readouterr().err
