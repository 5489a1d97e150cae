"""A root unpacked from an archive someone else made: nothing it holds may make the probe read
outside it, open a device or a FIFO, or take an unreadable part for an empty one."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from rocetune.errors import HostReadError
from rocetune.hostfs.root import HostRoot
from rocetune.hostfs.runners import RecordedRunner
from rocetune.probe.collect import collect_features
from tests.unit.treekit import Dir, Link, make

SECRET = "NCCL_IB_HCA=stolen-from-outside\n"


@pytest.fixture
def outside(tmp_path):
    """A file beside the root, standing for a root-only file of the machine (/etc/shadow)."""
    secret = tmp_path / "outside" / "secret"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    return str(secret)


def chain(root: str, first: str, hops: int, end: str) -> None:
    """`first` -> link1 -> ... -> `end`: `hops` links in all, each in the directory of the first."""
    base = os.path.join(root, first.lstrip("/"))
    os.makedirs(os.path.dirname(base), exist_ok=True)
    names = [base] + [f"{base}.{i}" for i in range(1, hops)]
    for name, nxt in zip(names, names[1:]):
        os.symlink(os.path.basename(nxt), name)
    os.symlink(end, names[-1])


def test_a_chain_longer_than_the_hop_limit_is_refused_not_followed_out(tmp_path, outside):
    root = make(tmp_path / "r", {"etc/hostname": "node\n"})
    chain(root, "/etc/nccl.conf", 45, outside)  # absolute: only the kernel would take it from /
    h = HostRoot(root)
    with pytest.raises(HostReadError, match="more than 40 symbolic links"):
        h.read_text("/etc/nccl.conf")
    for read in (h.read_bytes, lambda p: h.read_head(p, 16), lambda p: h.scan(p, b"NCCL", 8, 100)):
        with pytest.raises(HostReadError):
            read("/etc/nccl.conf")
    assert not h.exists("/etc/nccl.conf/x")


def test_absolute_and_dotdot_targets_stay_in_the_root(tmp_path, outside):
    root = make(tmp_path / "r", {"etc/a": Link(outside), "etc/b": Link("../../../../../../" + outside),
                                 "outside/secret": "inside\n"})
    h = HostRoot(root)
    rel_inside = "/" + os.path.relpath(outside, "/")
    assert h.realpath("/etc/a") == rel_inside and h.read_text("/etc/a") is None
    assert h.realpath("/etc/b") == rel_inside


def test_a_chain_within_the_limit_still_resolves(tmp_path):
    root = make(tmp_path / "r", {"etc/real": "ok\n"})
    chain(root, "/etc/link", 40, "/etc/real")
    assert HostRoot(root).read_text("/etc/link") == "ok\n"


def test_recorded_commands_are_read_inside_the_root(tmp_path, outside):
    root = make(tmp_path / "r", {"commands/nvidia-smi_topo_-m.txt": Link(outside),
                                 "commands/ibv_devinfo.txt": Link("../../outside/secret")})
    chain(root, "/commands/ip_-j_addr_show.txt", 45, outside)
    os.mkfifo(os.path.join(root, "commands", "lspci.txt"))
    h = HostRoot(root)
    runner = RecordedRunner(h)
    for argv in (["nvidia-smi", "topo", "-m"], ["ibv_devinfo"], ["ip", "-j", "addr", "show"], ["lspci"]):
        result = runner.run(argv)
        assert not result.found and SECRET not in result.stdout, argv
    assert any(w.startswith("cannot read /commands/ip_-j_addr_show.txt: more than 40 symbolic links") for w in h.warnings)
    assert "cannot read /commands/lspci.txt: not a regular file" in h.warnings


def test_a_commands_directory_linking_out_is_not_listed_outside(tmp_path, outside):
    root = make(tmp_path / "r", {"commands": Link(os.path.dirname(outside))})
    os.symlink(outside, os.path.join(os.path.dirname(outside), "ibv_devinfo.txt"))
    assert not RecordedRunner(HostRoot(root)).run(["ibv_devinfo"]).found


def test_recorded_strings_and_environ_do_not_leave_the_root(tmp_path, outside):
    root = make(tmp_path / "r", {"recorded/environ/PATH": Link(outside),
                                 "usr/lib/libnccl.so.2": b"NCCL version 2.21.5\0",
                                 "recorded/strings/usr/lib/libnccl.so.2.txt": Link(outside)})
    h = HostRoot(root)
    assert h.environ("PATH") is None
    assert h.scan("/usr/lib/libnccl.so.2", b"NCCL version ", 8, 1 << 20) == "NCCL version 2.21.5"


def test_fifos_are_refused_without_hanging(tmp_path):
    root = make(tmp_path / "r", {"sys/class/net": Dir("net")})
    for rel in ("sys/class/net/fifo", "etc/fifo"):
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        os.mkfifo(os.path.join(root, rel))
    h = HostRoot(root)
    for path in ("/sys/class/net/fifo", "/etc/fifo"):
        with pytest.raises(HostReadError, match="not a regular file"):
            h.read_text(path)
        with pytest.raises(HostReadError, match="not a regular file"):
            h.scan(path, b"x", 1, 10)


def test_a_device_node_under_a_root_is_never_opened(tmp_path, monkeypatch):
    root = make(tmp_path / "r", {"sys/class/net": Dir("net")})
    node = os.path.join(root, "sys", "class", "net", "watchdog")
    try:
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # what /dev/null is
    except (PermissionError, OSError):
        pytest.skip("making a device node needs root")
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(p) or real_open(p, *a, **k))
    h = HostRoot(root)
    for read in (h.read_text, h.read_bytes):
        with pytest.raises(HostReadError, match="not a regular file"):
            read("/sys/class/net/watchdog")
    h.listdir("/sys/class/net")  # a listing that saw it changes nothing
    with pytest.raises(HostReadError):
        h.read_text("/sys/class/net/watchdog")
    assert node not in opened


def test_a_directory_that_cannot_be_listed_is_a_warning_of_the_source(tmp_path, monkeypatch):
    root = make(tmp_path / "r", {"sys/class/net": Dir("net"), "sys/bus/pci/devices": Dir("devices")})
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("/sys/class/net"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    features = collect_features(root)
    assert "cannot list /sys/class/net: Permission denied" in features["sources"]["net"]["warnings"]


def test_a_file_that_cannot_be_read_is_a_warning_not_empty(tmp_path, monkeypatch):
    root = make(tmp_path / "r", {"etc/nccl.conf": "NCCL_DEBUG=INFO\n"})
    h = HostRoot(root)
    real_open = os.open

    def deny(path, *a, **k):
        if str(path).endswith("/etc/nccl.conf"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(HostReadError, match="Permission denied"):
        h.read_text("/etc/nccl.conf")
