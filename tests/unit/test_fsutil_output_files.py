"""Output targets someone else may have prepared: a device, a FIFO, a link, a huge file, a full
disk. Nothing is written through them, nothing is read from them, and a set of files changes
whole or not at all."""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

import pytest

from rocetune import app, fsutil
from rocetune.app import EnvResult, PlannedFile
from rocetune.core import file_write
from rocetune.errors import ExitCode, RocetuneError
from rocetune.fsutil import OutputError, Target, read_old, write_files


def env_result(tmp_path, env_text="export A=1\n", topo="<system/>\n") -> EnvResult:
    return EnvResult(plan=None, texts={"sh": env_text, "nccl-conf": "A=1\n"},
                     files=[PlannedFile(str(tmp_path / "nccl-topo.xml"), "NCCL_TOPO_FILE", topo)])


def device_node(tmp_path) -> str:
    """A node like /dev/null in tmp_path (never the real one: a regressed writer run as root
    would replace it); skipped where making one needs root."""
    node = str(tmp_path / "null")
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        pytest.skip("making a device node needs root")
    return node


def refused(call, match):
    with pytest.raises(OutputError, match=match) as info:
        call()
    assert info.value.code == ExitCode.OUTPUT and "\n" not in info.value.message
    return info.value


def test_a_device_target_is_refused_and_stays_a_device(tmp_path):
    node = device_node(tmp_path)
    refused(lambda: write_files([Target(node, b"x")]), f"cannot write {node}: it is a character device")
    refused(lambda: read_old(node), "character device")
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_fifo_socket_directory_and_link_targets_are_refused(tmp_path):
    fifo, sock, directory, victim, link = (str(tmp_path / n) for n in ("fifo", "sock", "dir", "victim", "link"))
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    server.bind(sock)
    os.mkdir(directory)
    with open(victim, "w") as fh:
        fh.write("SECRET=1\n")
    os.symlink(victim, link)
    for path, kind in ((fifo, "a FIFO"), (sock, "a socket"), (directory, "a directory"), (link, "a symbolic link")):
        refused(lambda path=path: read_old(path), kind)  # O_NONBLOCK: the FIFO does not hang
        refused(lambda path=path: write_files([Target(path, b"x")]), kind)
    server.close()
    assert Path(victim).read_text() == "SECRET=1\n" and os.path.islink(link)
    assert sorted(os.listdir(tmp_path)) == ["dir", "fifo", "link", "sock", "victim"]


def test_the_old_file_is_read_up_to_a_cap(tmp_path):
    big = tmp_path / "env.sh"
    with open(big, "wb") as fh:
        fh.truncate(fsutil.MAX_OLD_BYTES + 1)
    refused(lambda: read_old(str(big)), "larger than")


def test_mode_and_group_are_kept_and_set_on_the_descriptor(tmp_path, monkeypatch):
    old = tmp_path / "env.sh"
    old.write_text("old\n")
    old.chmod(0o640)
    owner = (os.geteuid(), os.getegid())
    if os.geteuid() == 0:  # root's own file keeps its group (another user's: test_root_writers.py)
        os.lchown(old, 0, 4321)
        owner = (0, 4321)
    # By path, a swapped link in a directory another user owns would take the mode or owner.
    monkeypatch.setattr(os, "chmod", lambda *a, **k: pytest.fail("chmod by path"))
    monkeypatch.setattr(os, "chown", lambda *a, **k: pytest.fail("chown by path"))
    old_umask = os.umask(0o077)
    try:
        write_files([Target(str(old), b"new\n"), Target(str(tmp_path / "fresh"), b"x", 0o644)])
    finally:
        os.umask(old_umask)
    st = os.stat(old)
    assert old.read_text() == "new\n" and stat.S_IMODE(st.st_mode) == 0o640 and (st.st_uid, st.st_gid) == owner
    assert stat.S_IMODE(os.stat(tmp_path / "fresh").st_mode) == 0o644


def test_stale_temporary_files_of_a_killed_writer_are_removed(tmp_path):
    dead = 2 ** 22 + 7  # above pid_max's default: no such process
    stale = tmp_path / f".env.sh{fsutil.TEMP_MARK}{dead}-1"
    mine = tmp_path / f".env.sh{fsutil.TEMP_MARK}{os.getpid()}-99"
    linked = tmp_path / f".env.sh{fsutil.TEMP_MARK}{dead}-2"
    stale.write_text("half")
    mine.write_text("being written")
    os.symlink("/etc/hostname", linked)
    fsutil.atomic_write(str(tmp_path / "env.sh"), "A=1\n")
    assert not stale.exists() and mine.exists() and os.path.islink(linked)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".env.sh") and str(os.getpid()) in n
                and not n.endswith("-99")]


def test_env_and_the_file_it_points_at_change_together_or_not_at_all(tmp_path, monkeypatch):
    env_path, topo_path = tmp_path / "env.sh", tmp_path / "nccl-topo.xml"
    env_path.write_text("export A=0\n")
    topo_path.write_text("<old/>\n")
    real_write, calls = os.write, []

    def full_disk(fd, data):
        calls.append(fd)
        if len(calls) == 2:  # the second file of the set
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(file_write.os, "write", full_disk)
    with pytest.raises(RocetuneError, match="No space left on device") as info:
        app.write_env(env_result(tmp_path), [("sh", str(env_path))])
    assert info.value.code == ExitCode.OUTPUT
    assert env_path.read_text() == "export A=0\n" and topo_path.read_text() == "<old/>\n"
    assert sorted(os.listdir(tmp_path)) == ["env.sh", "nccl-topo.xml"]  # no temporary file left
    monkeypatch.setattr(file_write.os, "write", real_write)
    app.write_env(env_result(tmp_path), [("sh", str(env_path))])
    assert env_path.read_text() == "export A=1\n" and topo_path.read_text() == "<system/>\n"


@pytest.mark.parametrize("check", [False, True])
def test_write_env_refuses_before_writing_anything_check_or_not(tmp_path, check):
    victim = tmp_path / "victim"
    victim.write_text("TOKEN=do-not-show\n")
    os.symlink(str(victim), tmp_path / "env.sh")
    with pytest.raises(OutputError, match="env.sh: it is a symbolic link") as info:
        app.write_env(env_result(tmp_path), [("sh", str(tmp_path / "env.sh"))], check=check)
    assert "do-not-show" not in info.value.message
    assert not (tmp_path / "nccl-topo.xml").exists() and victim.read_text() == "TOKEN=do-not-show\n"
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="a FIFO"):
        app.write_env(env_result(tmp_path), [("sh", fifo)], check=check)


def test_the_nccl_conf_backup_keeps_the_originals_mode(tmp_path):
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_SOCKET_IFNAME=eth9\n")
    conf.chmod(0o600)
    writes = app.write_env(env_result(tmp_path), [("nccl-conf", str(conf))])
    backup = tmp_path / ("nccl.conf" + app.BACKUP_SUFFIX)
    assert writes[-1].backup == str(backup) and backup.read_text() == "NCCL_SOCKET_IFNAME=eth9\n"
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600 and stat.S_IMODE(os.stat(conf).st_mode) == 0o600


def test_check_tries_the_directory_and_leaves_nothing(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    writes = app.write_env(env_result(tmp_path), [("sh", str(ro / "env.sh"))], check=True)
    assert [w.changed for w in writes] == [True, True] and os.listdir(ro) == []
