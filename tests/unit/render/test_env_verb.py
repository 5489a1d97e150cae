"""`rocetune env` options end to end, in process: plan, render, write atomically."""

from __future__ import annotations

import json
import os
import stat

import pytest

import rocetune.cli.verbs as verbs
from rocetune.cli.main import main

from ..rules.featurekit import rail_host


@pytest.fixture(autouse=True)
def _verbs(monkeypatch):
    missing = tuple(v for v in ("explain", "lint") if v not in verbs.NAMES)
    monkeypatch.setattr(verbs, "NAMES", tuple(verbs.NAMES) + missing)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    r.mkdir()
    return r


def features_file(tmp_path, host=None):
    path = tmp_path / "features.json"
    path.write_text(json.dumps((host or rail_host()).build()))
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_format_to_stdout(tmp_path, root, capsys):
    code, out, err = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path), "--format", "sh")
    assert code == 0
    assert "export NCCL_IB_HCA='=mlx5_0:1," in out and out.startswith("# rocetune ")


def test_features_alone_plans(tmp_path, root, capsys):
    code, out, _ = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path))
    assert code == 0 and "export NCCL_IB_HCA='=mlx5_0:1," in out
    # Without an explicit QoS plan or observed NIC QoS state, no traffic class is guessed.
    assert "NCCL_IB_TC" not in out


def test_out_file_written_atomically_with_topology_next_to_it(tmp_path, root, capsys):
    outdir = tmp_path / "job"
    outdir.mkdir()
    ff = features_file(tmp_path, rail_host(2).flattened())
    code, out, err = run(capsys, "--root", str(root), "env", "--features", ff, "-o", str(outdir / "env.sh"))
    assert code == 0, err
    assert sorted(os.listdir(outdir)) == ["env.sh", "nccl-topo.xml"]
    text = (outdir / "env.sh").read_text()
    assert f"export NCCL_TOPO_FILE='{outdir / 'nccl-topo.xml'}'" in text
    assert stat.S_IMODE(os.stat(outdir / "env.sh").st_mode) == 0o644
    assert (outdir / "nccl-topo.xml").read_text().startswith("<!--")
    assert "wrote" in out and "NCCL_IB_HCA" in out


def test_format_guessed_from_the_file_name(tmp_path, root, capsys):
    code, _, _ = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path),
                     "-o", str(tmp_path / "nccl.conf"))
    assert code == 0
    assert "\nNCCL_SOCKET_IFNAME==eth0\n" in (tmp_path / "nccl.conf").read_text()


def test_same_bytes_twice(tmp_path, root, capsys):
    ff = features_file(tmp_path)
    for name in ("a", "b"):
        run(capsys, "--root", str(root), "env", "--features", ff, "--format", "systemd", "-o", str(tmp_path / name))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_json_envelope_carries_plan_and_env(tmp_path, root, capsys):
    code, out, _ = run(capsys, "--root", str(root), "--json", "env", "--features",
                       features_file(tmp_path), "--format", "k8s", "--local-rank", "1")
    env = json.loads(out)
    assert code == 0 and env["status"] in ("ok", "warning")
    plan = env["data"]["plan"]
    assert plan["env"]["ROCETUNE_NIC"] == "mlx5_1:1" and plan["local_rank"] == 1
    assert env["data"]["env"]["formats"] == ["k8s"] and "kind: ConfigMap" in env["data"]["env"]["texts"]["k8s"]
    assert len(plan["ranks"]) == 8


def test_value_a_format_cannot_carry_is_refused_with_exit_4(tmp_path, root, capsys):
    code, out, err = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path),
                         "--format", "docker", "--set", "NCCL_DEBUG_FILE=/tmp/a\nb")
    assert code == 4 and "NCCL_DEBUG_FILE" in err and "docker" in err and out == ""


def test_unwritable_destination_is_exit_4(tmp_path, root, capsys):
    code, _, err = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path),
                       "-o", str(tmp_path / "missing" / "env.sh"))
    assert code == 4 and "cannot write" in err


def test_local_rank_out_of_range_is_usage(tmp_path, root, capsys):
    code, _, err = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path),
                       "--local-rank", "8")
    assert code == 2 and "0..7" in err


def test_features_of_another_schema_is_input_error(tmp_path, root, capsys):
    f = rail_host().build()
    f["schema_version"] = 99
    path = tmp_path / "f.json"
    path.write_text(json.dumps(f))
    code, _, err = run(capsys, "--root", str(root), "env", "--features", str(path))
    assert code == 3 and "schema_version" in err


def test_qos_file_under_the_root_is_used_and_named(tmp_path, root, capsys):
    (root / "etc" / "rocetune").mkdir(parents=True)
    (root / "etc" / "rocetune" / "qos.yml").write_text("data:\n  dscp: 24\n  priority: 3\n")
    code, out, _ = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path), "--format", "sh")
    assert code == 0 and "export NCCL_IB_TC='98'" in out and "qos.yml" in out.splitlines()[1]


def test_bad_qos_file_is_input_error(tmp_path, root, capsys):
    q = tmp_path / "qos.yml"
    q.write_text("data:\n  dscp: 99\n")
    code, _, err = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path), "--qos", str(q))
    assert code == 3 and "0..63" in err


def test_overrides_from_config_and_command_line(tmp_path, root, capsys):
    cfg = tmp_path / "o.conf"
    cfg.write_text("NCCL_DEBUG=INFO\nunset UCX_NET_DEVICES\n")
    code, out, _ = run(capsys, "--root", str(root), "env", "--features", features_file(tmp_path),
                       "--config", str(cfg), "--set", "NCCL_DEBUG=WARN", "--format", "sh")
    assert code == 0
    assert "# rule: override (--set)\nexport NCCL_DEBUG='WARN'" in out and "UCX_NET_DEVICES" not in out
