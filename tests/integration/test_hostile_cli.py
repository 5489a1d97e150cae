"""The CLI on a root from someone else's archive, and on output paths that are not plain files:
one-line errors with the documented exit codes, nothing read from outside, nothing written."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile

from tests.fixtures.roots import root_of

from .clirun import no_traceback, rocetune, rocetune_json

SECRET = "stolen-from-outside"


def _evil_root(tmp_path) -> str:
    """`tar -xzf evil.tar.gz -C R`: a host whose nccl.conf and nvidia-smi recording are chains
    of 45 links, the last one naming a file outside R by its absolute path."""
    secret = tmp_path / "secret"
    secret.write_text(f"NCCL_SOCKET_IFNAME={SECRET}\n")
    secret.chmod(0o600)
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for first in ("etc/nccl.conf", "commands/nvidia-smi_topo_-m.txt"):
            names = [first] + [f"{first}.{i}" for i in range(1, 45)]
            for name, nxt in zip(names, names[1:] + [None]):
                ti = tarfile.TarInfo(name)
                ti.type, ti.linkname = tarfile.SYMTYPE, os.path.basename(nxt) if nxt else str(secret)
                tar.addfile(ti)
        ti = tarfile.TarInfo("sys/class/net/lo/mtu")
        ti.size = 6
        tar.addfile(ti, io.BytesIO(b"65536\n"))
    root = tmp_path / "R"
    root.mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(root)], check=True)
    return str(root)


def test_probe_and_capture_of_an_evil_root_read_nothing_outside_it(tmp_path):
    root = _evil_root(tmp_path)
    proc = rocetune("--json", "probe", "--root", root)
    assert proc.returncode == 0 and no_traceback(proc), proc.stderr
    assert SECRET not in proc.stdout
    assert "more than 40 symbolic links" in proc.stdout  # a warning, not a silent gap
    out = tmp_path / "cap.tar.gz"
    proc = rocetune("capture", "--root", root, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(out) as tar:
        for member in tar.getmembers():
            if member.isfile():
                assert SECRET.encode() not in tar.extractfile(member).read(), member.name


def test_capture_of_root_only_files_is_not_world_readable(tmp_path):
    root = tmp_path / "R"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "nccl.conf").write_text("NCCL_DEBUG=WARN\n")
    (root / "etc" / "nccl.conf").chmod(0o600)
    out = tmp_path / "cap.tar.gz"
    proc = rocetune("capture", "--root", str(root), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    with tarfile.open(out) as tar:
        assert tar.getmember("etc/nccl.conf").mode == 0o600


def _one_error(proc, path: str) -> None:
    assert proc.returncode == 4 and no_traceback(proc), proc.stderr
    assert proc.stderr.splitlines()[0].startswith(f"rocetune: error: cannot write {path}: ")


def test_env_refuses_devices_fifos_and_links_with_exit_4(tmp_path):
    root = root_of("dgx-h100-roce")
    targets = []
    try:  # a node like /dev/null, never the real one: a regressed writer run as root replaces it
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append(str(tmp_path / "null"))
    except OSError:
        pass  # not root
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    victim = tmp_path / "victim.env"
    victim.write_text("export TOKEN=do-not-print\n")
    link = tmp_path / "env.sh"
    link.symlink_to(victim)
    for target in targets + [str(fifo), str(link)]:
        for verb in (["env"], ["env", "--check"], ["probe"]):
            proc = subprocess.run([*rocetune_argv(), verb[0], "--root", root, "-o", target, *verb[1:]],
                                  capture_output=True, text=True, timeout=60)
            _one_error(proc, target)
            assert "do-not-print" not in proc.stdout + proc.stderr
    assert all(stat.S_ISCHR(os.lstat(t).st_mode) for t in targets) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert victim.read_text() == "export TOKEN=do-not-print\n" and link.is_symlink()


def test_check_does_not_promise_a_write_that_cannot_happen(tmp_path):
    code, env = rocetune_json("env", "--root", root_of("dgx-h100-roce"), "-o", "/proc/rocetune-x", "--check")
    assert code == 4 and env["status"] == "error"
    assert env["errors"][0]["message"].startswith("cannot write /proc/rocetune-x: ")


def rocetune_argv():
    import sys

    return [sys.executable, "-m", "rocetune"]
