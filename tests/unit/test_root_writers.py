"""Files root writes are root's: every writer root uses (the package's fsutil and the roles'
module_utils/rocetune_files) passes the same cases.

A file another user made first (in a sticky world-writable directory such as /tmp) is replaced
by root's own, without that user's ownership or anyone's group/world write bits; a target in a
directory another user may change (owned by them, or writable by others without being root's
sticky one, or reached through their link) is refused with the reason, and nothing is written.
"""

from __future__ import annotations

import os
import stat

import pytest

from rocetune import fsutil
from tests.unit.roles import load_module_utils

F = load_module_utils("", "rocetune_files")
USER = 65534  # nobody: any uid but root's

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="what root writes: needs root")


class PackageWriter:
    """fsutil.write_files, as env -o, capture, gather and the baseline use it."""

    error = fsutil.OutputError

    def write(self, path: str, text: str, mode: int = 0o644) -> None:
        fsutil.write_files([fsutil.Target(path, text.encode(), mode)])

    def refuse(self, path: str) -> str:
        with pytest.raises(fsutil.OutputError) as info:
            self.write(path, "export A=1\n")
        return info.value.message


class RoleWriter:
    """plan_files + apply_changes, as every module of the collection uses them."""

    error = F.FileTargetError

    def write(self, path: str, text: str, mode: int = 0o644) -> None:
        changes, _ = F.plan_files([{"path": path, "content": text, "mode": "%04o" % mode}], [])
        F.apply_changes(changes)

    def refuse(self, path: str) -> str:
        with pytest.raises(F.FileTargetError) as info:  # at planning: nothing changes
            F.plan_files([{"path": path, "content": "export A=1\n", "mode": "0644"}], [])
        return str(info.value)


@pytest.fixture(params=[PackageWriter, RoleWriter], ids=["fsutil", "rocetune_files"])
def writer(request):
    return request.param()


def _dir(tmp_path, name: str, mode: int, uid: int = 0):
    d = tmp_path / name
    d.mkdir()
    os.chown(d, uid, 0)
    os.chmod(d, mode)
    return d


def _owned_file(path, text: str, mode: int, uid: int, gid: int):
    path.write_text(text)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def test_a_file_another_user_made_first_in_a_sticky_directory_becomes_roots(tmp_path, writer):
    sticky = _dir(tmp_path, "tmp", 0o1777)
    target = sticky / "nccl.env"
    _owned_file(target, "planted\n", 0o666, USER, USER)
    writer.write(str(target), "export NCCL_IB_HCA==mlx5_0\n")
    st = os.lstat(target)
    assert (st.st_uid, st.st_gid) == (0, 0), "the other user still owns what root wrote"
    assert not st.st_mode & 0o022, oct(st.st_mode)
    assert target.read_text() == "export NCCL_IB_HCA==mlx5_0\n"


def test_roots_own_file_keeps_its_group_but_no_group_or_world_write(tmp_path, writer):
    target = tmp_path / "nccl.conf"
    _owned_file(target, "old\n", 0o664, 0, 4321)
    writer.write(str(target), "new\n", 0o664)
    st = os.lstat(target)
    assert (st.st_uid, st.st_gid) == (0, 4321)
    assert stat.S_IMODE(st.st_mode) == 0o644


def test_setuid_and_world_write_bits_never_come_through(tmp_path, writer):
    target = tmp_path / "env.sh"
    _owned_file(target, "old\n", 0o6777, 0, 0)
    writer.write(str(target), "new\n", 0o755)
    assert stat.S_IMODE(os.lstat(target).st_mode) == 0o755


@pytest.mark.parametrize("mode, why", [
    (0o777, "writable by others and not sticky"),
    (0o775, "writable by its group and not sticky"),
])
def test_a_directory_others_may_write_is_refused(tmp_path, writer, mode, why):
    shared = _dir(tmp_path, "shared", mode)
    target = shared / "nccl.env"
    _owned_file(target, "planted\n", 0o644, 0, 0)
    message = writer.refuse(str(target))
    assert f"cannot write {target}: " in message and why in message, message
    assert "\n" not in message
    assert target.read_text() == "planted\n" and sorted(os.listdir(shared)) == ["nccl.env"]


def test_a_directory_of_another_user_is_refused_sticky_or_not(tmp_path, writer):
    for name, mode in (("home", 0o755), ("theirs-sticky", 0o1777)):
        theirs = _dir(tmp_path, name, mode, uid=USER)
        message = writer.refuse(str(theirs / "nccl.env"))
        assert f"{theirs} belongs to uid {USER}" in message, message
        assert os.listdir(theirs) == []
    message = writer.refuse(str(tmp_path / "theirs-sticky" / "nccl.env"))
    assert "sticky" in message  # why the sticky bit does not make it safe: its owner may replace any file


def test_a_link_another_user_owns_in_the_path_is_refused(tmp_path, writer):
    sticky = _dir(tmp_path, "tmp", 0o1777)
    etc = _dir(tmp_path, "etc", 0o755)
    link = sticky / "cfg"
    os.symlink(str(etc), link)
    os.lchown(link, USER, USER)  # they may point it anywhere root writes next
    message = writer.refuse(str(link / "nccl.env"))
    assert f"{link} is a symbolic link of uid {USER}" in message, message
    assert os.listdir(etc) == []



def test_the_reboot_marker_is_made_where_only_root_may_change_it(tmp_path):
    signals = load_module_utils("", "rocetune_signals")
    run = _dir(tmp_path, "run", 0o755)
    assert signals.mark_reboot_required(str(run / "reboot-required")) is True
    assert (os.lstat(run / "reboot-required").st_uid, signals.mark_reboot_required(str(run / "x"))) == (0, True)
    theirs = _dir(tmp_path, "theirs", 0o755, uid=USER)
    with pytest.raises(OSError, match=f"belongs to uid {USER}"):
        signals.mark_reboot_required(str(theirs / "reboot-required"))
    os.symlink(str(tmp_path / "elsewhere"), run / "linked")  # present as a link: left alone, not followed
    assert signals.mark_reboot_required(str(run / "linked")) is False and not (tmp_path / "elsewhere").exists()
