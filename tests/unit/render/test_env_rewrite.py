"""`rocetune env -o FILE` run again (a boot unit does it every boot): the same plan leaves the
file untouched, a moved GID index is rewritten and named in one line, and an NCCL config file
that rocetune did not write is kept once."""

from __future__ import annotations

import json
import os

import rocetune.cli.verbs as verbs
from rocetune.cli.main import main

from ..rules.featurekit import rail_host


def write_features(path, gid_shift: int = 0) -> str:
    """A two-rail RoCE host; `gid_shift` moves every GID (the IPv4 one included) down the table,
    as an address added to the NIC does."""
    features = rail_host(2, nccl=None).build()  # NCCL unknown: the index is pinned
    for dev in features["rdma"]["devices"]:
        for port in dev["ports"]:
            for g in port["gids"]:
                g["index"] += gid_shift
            for key in ("roce_v2_ipv4_gids", "roce_v2_ipv6_gids"):
                port[key] = [i + gid_shift for i in port[key]]
    path.write_text(json.dumps(features))
    return str(path)


def env_o(capsys, features: str, out, *extra: str):
    assert "env" in verbs.NAMES
    code = main(["-q", "env", "--features", features, "-o", str(out), *extra])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    return stdout.splitlines()


def test_same_plan_leaves_the_file_and_its_mtime_alone(tmp_path, capsys):
    ff, out = write_features(tmp_path / "f.json"), tmp_path / "nccl.env"
    assert env_o(capsys, ff, out)[0].startswith(f"wrote {out} (sh, ")
    os.utime(out, (1_000_000_000, 1_000_000_000))
    before = out.read_bytes()
    lines = env_o(capsys, ff, out)
    assert lines == [f"unchanged {out} (sh, {lines[0].split('(sh, ')[1]}"], lines
    assert out.read_bytes() == before and os.stat(out).st_mtime == 1_000_000_000


def test_a_moved_gid_index_is_rewritten_and_named_in_one_line(tmp_path, capsys):
    out = tmp_path / "nccl.env"
    env_o(capsys, write_features(tmp_path / "a.json"), out)
    assert "export NCCL_IB_GID_INDEX='3'" in out.read_text()
    lines = env_o(capsys, write_features(tmp_path / "b.json", gid_shift=2), out)
    assert len(lines) == 1 and lines[0].startswith(f"wrote {out} (sh, "), lines
    assert lines[0].endswith("changed NCCL_IB_GID_INDEX 3 -> 5"), lines
    assert "export NCCL_IB_GID_INDEX='5'" in out.read_text()


def test_an_unmanaged_nccl_conf_is_kept_once(tmp_path, capsys):
    ff, conf = write_features(tmp_path / "f.json"), tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_TC=41\n")
    lines = env_o(capsys, ff, conf)
    backup = tmp_path / "nccl.conf.rocetune-orig"
    assert backup.read_text() == "NCCL_IB_TC=41\n"
    assert lines[1] == f"kept the previous {conf}, which rocetune did not write, as {backup}"
    assert "NCCL_IB_TC 41 -> unset" in lines[0], lines
    conf.write_text("NCCL_DEBUG=INFO\n")  # hand-edited again: the first backup stays
    env_o(capsys, ff, conf)
    assert backup.read_text() == "NCCL_IB_TC=41\n"
    assert conf.read_text().startswith("# rocetune ")


def test_json_result_reports_unchanged_files_and_changes(tmp_path, capsys):
    ff, out = write_features(tmp_path / "f.json"), tmp_path / "nccl.env"
    env_o(capsys, ff, out)
    assert main(["--json", "env", "--features", ff, "-o", str(out)]) == 0
    env = json.loads(capsys.readouterr().out)["data"]["env"]
    assert env["unchanged"] == [str(out)] and env["changes"] == [] and env["backup"] is None


def env_json(capsys, features: str, *args: str) -> tuple:
    code = main(["--json", "env", "--features", features, *args])
    return code, json.loads(capsys.readouterr().out)


def test_one_plan_writes_two_dialects_with_check_and_diff(tmp_path, capsys):
    ff = write_features(tmp_path / "f.json")
    env_file, conf = tmp_path / "etc/rocetune/nccl.env", tmp_path / "etc/nccl.conf"
    argv = ["--env-dir", str(env_file.parent), "--format", "sh", "-o", str(env_file),
            "--format", "nccl-conf", "-o", str(conf), "--mkdir", "--diff"]
    code, out = env_json(capsys, ff, *argv, "--check")
    assert code == 0 and not env_file.parent.exists()  # check: nothing made, not even the dirs
    writes = out["data"]["env"]["writes"]
    assert [(w["path"], w["format"], w["changed"], w["before"]) for w in writes] == \
        [(str(env_file), "sh", True, None), (str(conf), "nccl-conf", True, None)]
    code, out = env_json(capsys, ff, *argv)
    assert code == 0 and [w["after"] for w in out["data"]["env"]["writes"]] == \
        [env_file.read_text(), conf.read_text()]
    assert "export NCCL_IB_GID_INDEX='3'" in env_file.read_text() and "NCCL_IB_GID_INDEX=3\n" in conf.read_text()
    code, out = env_json(capsys, write_features(tmp_path / "g.json", gid_shift=1), *argv, "--check")
    writes = out["data"]["env"]["writes"]
    assert [w["changes"] for w in writes] == [["NCCL_IB_GID_INDEX 3 -> 4"]] * 2
    assert "NCCL_IB_GID_INDEX=3\n" in conf.read_text()  # --check wrote nothing


def test_fail_on_warnings_writes_nothing(tmp_path, capsys):
    ff, out = write_features(tmp_path / "f.json"), tmp_path / "nccl.env"
    # A name NCCL does not read is a plan warning.
    code, result = env_json(capsys, ff, "-o", str(out), "--set", "NCCL_ROCETUNE_UNKNOWN=1", "--fail-on-warnings")
    assert code == 1 and not out.exists(), result
    assert result["errors"][0]["message"].startswith("1 warning(s), nothing was written: ")
    assert "NCCL_ROCETUNE_UNKNOWN" in result["errors"][0]["message"]


def test_formats_and_files_must_pair(tmp_path, capsys):
    ff = write_features(tmp_path / "f.json")
    code = main(["env", "--features", ff, "--format", "sh", "--format", "nccl-conf", "-o", str(tmp_path / "a"),
                 "-o", str(tmp_path / "b"), "--format", "sh"])
    assert code == 2 and "3 --format values" in capsys.readouterr().err
    code = main(["env", "--features", ff, "--format", "sh", "-o", str(tmp_path / "a"),
                 "--format", "sh", "-o", str(tmp_path / "a")])
    assert code == 2 and "same path" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
