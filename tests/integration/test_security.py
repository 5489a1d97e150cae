"""The CLI against what others control: directories other users own, bytes a node or a file
supplies for the terminal, inputs that are not regular files, documents made to exhaust memory.
One line on stderr with the documented exit code, never a hang, never a raw control byte."""

from __future__ import annotations

import os

import pytest

from .clirun import no_traceback, rocetune

USER = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="what root writes: needs root")


def _dir(tmp_path, name: str, mode: int, uid: int = 0):
    d = tmp_path / name
    d.mkdir()
    os.chown(d, uid, 0)
    os.chmod(d, mode)
    return d


@root_only
def test_gather_out_into_another_users_directory_is_refused_before_any_host(tmp_path):
    theirs = _dir(tmp_path, "theirs", 0o755, uid=USER)
    for out in (theirs, theirs / "new"):
        proc = rocetune("fleet", "gather", "-o", str(out), "127.0.0.1", "--port", "9", "--timeout", "2")
        assert proc.returncode == 4 and no_traceback(proc), proc.stderr
        assert proc.stderr.startswith(f"rocetune: error: cannot write {out}"), proc.stderr
        assert f"belongs to uid {USER}" in proc.stderr
    assert os.listdir(theirs) == []


# --- what a node or a file supplies reaches the terminal as visible escapes -----------------------

EVIL = "e\x1b]0;owned\x07vil\x1b[2K\x9b1A\u202egnp.exe\u2066"
RAW = [b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode(), "\u2066".encode()]


def _no_raw_controls(data: bytes) -> None:
    for raw in RAW:
        assert raw not in data, (raw, data[:2000])


@pytest.fixture(scope="module")
def evil_root(tmp_path_factory):
    import shutil

    from tests.fixtures.roots import root_of

    root = tmp_path_factory.mktemp("evil") / "R"
    shutil.copytree(root_of("pcie-4gpu-2nic"), root, symlinks=True)
    (root / "proc/sys/kernel/hostname").write_text(EVIL + "\n")
    (root / "proc/sys/kernel/osrelease").write_text("6.5.0" + EVIL + "\n")
    (root / "sys/class/infiniband/mlx5_0/ports/1/rate").write_text("200 Gb/sec " + EVIL + "\n")
    return str(root)


def _run_bytes(*args: str, env=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "rocetune", *args], capture_output=True, timeout=120, env=env)


def test_probe_text_shows_a_hostile_hostname_kernel_and_rate_escaped(evil_root):
    proc = _run_bytes("probe", "--root", evil_root)
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stdout)
    _no_raw_controls(proc.stderr)
    assert b"e\\x1b]0;owned\\x07vil" in proc.stdout and b"\\u202egnp.exe" in proc.stdout


def test_json_escapes_c1_controls_and_bidi_overrides(evil_root):
    import json

    proc = _run_bytes("--json", "probe", "--root", evil_root)
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stdout)
    doc = json.loads(proc.stdout)
    assert doc["data"]["features"]["host"]["hostname"] == EVIL  # the value itself, escaped in transit


def test_fleet_report_shows_a_hostile_result_escaped(tmp_path):
    import json

    (tmp_path / "gpu01.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu01",
                                                      "error": "ssh: " + EVIL + "\n  gpu02  ok"}))
    for args in (["fleet", "report", str(tmp_path)], ["--json", "fleet", "report", str(tmp_path)]):
        proc = _run_bytes(*args)
        assert proc.returncode == 1, proc.stderr
        _no_raw_controls(proc.stdout)
        assert b"\n  gpu02  ok" not in proc.stdout  # a node cannot add a line of its own


def test_the_one_emitter_escapes_every_renderers_text(capsys):
    """Every verb's human text, warnings and errors leave through cli.main._emit."""
    from rocetune.cli.main import _emit
    from rocetune.cli.result import Result

    bad = "".join(chr(c) for c in list(range(0, 32)) + list(range(0x7f, 0xa0))) + "\u061c\u200e\u200f\u202a\u202b" \
        "\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    _emit(Result("x", human=f"line {bad}\n\tnext\n", warnings=[bad], errors=[{"message": bad, "hint": bad}]),
          as_json=False, quiet=False)
    out, err = capsys.readouterr()
    assert out.startswith("line \\x00") and out.endswith("\n\tnext\n")  # layout's own \n and \t kept
    assert {ch for ch in out if ch in bad} == {"\n", "\t"}, repr(out)
    assert {ch for ch in err if ch in bad} == {"\n"} and len(err.splitlines()) == 3, repr(err)
    _emit(Result("x", data={"v": bad}), as_json=True, quiet=False)
    out, _ = capsys.readouterr()
    assert not [ch for ch in out if ch in bad and ch != "\n"], repr(out)


def test_a_nodes_stderr_cannot_rewrite_the_gather_lines(tmp_path):
    """A node's stderr, quoted in its FAILED line, moved the cursor and printed `spoof  ok`."""
    import paramiko

    from .sshserver import SSHServer, fake_rocetune

    host_key, client_key = paramiko.RSAKey.generate(2048), paramiko.RSAKey.generate(2048)
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    fake_rocetune(bin_dir, body="printf 'x\\033[1A\\033[2K\\302\\233A  gpu01  ok\\342\\200\\256\\n' >&2\nexit 127\n")
    (home / ".ssh").mkdir(parents=True)
    identity = tmp_path / "id"
    client_key.write_private_key_file(str(identity))
    srv = SSHServer(host_key, client_key, bin_dir)
    try:
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{srv.port} {host_key.get_name()} "
                                                   f"{host_key.get_base64()}\n")
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(home)
        proc = _run_bytes("fleet", "gather", "-o", str(tmp_path / "out"), "--identity", str(identity),
                          "--port", str(srv.port), "127.0.0.1", env=env)
    finally:
        srv.close()
    assert proc.returncode == 1, proc.stderr
    _no_raw_controls(proc.stdout)
    assert b"FAILED: " in proc.stdout and b"\\x1b[1A\\x1b[2K\\x9bA  gpu01  ok\\u202e" in proc.stdout
