"""The roles' one-call file writer (plugins/module_utils/rocetune_files.py): only what differs, atomically, with diffs."""

from __future__ import annotations

import os

import pytest

from tests.unit.roles import load_module_utils

F = load_module_utils("", "rocetune_files")


def test_files_and_link_are_written_once_then_left_alone(tmp_path):
    unit = tmp_path / "system" / "rocetune-qos.service"
    files = [{"path": str(unit), "content": "[Unit]\n", "mode": "0644"},
             {"path": str(tmp_path / "lib" / "s.py"), "content": "print(1)\n", "mode": "0644"}]
    links = [{"path": str(tmp_path / "system" / "multi-user.target.wants" / "rocetune-qos.service"), "src": str(unit)}]
    changes, diffs = F.plan_files(files, links)
    assert len(changes) == 3 and diffs[0]["after"] == "[Unit]\n" and diffs[0]["before"] == ""
    F.apply_changes(changes)
    assert unit.read_text() == "[Unit]\n" and oct(unit.stat().st_mode & 0o777) == "0o644"
    assert os.readlink(links[0]["path"]) == str(unit)
    assert F.plan_files(files, links) == ([], [])
    unit.write_text("[Unit]\nedited\n")
    changes, diffs = F.plan_files(files, links)
    assert [c[1]["path"] for c in changes] == [str(unit)]
    assert diffs[0]["before"] == "[Unit]\nedited\n"
    os.chmod(unit, 0o600)
    F.apply_changes(F.plan_files(files, links)[0])
    assert unit.read_text() == "[Unit]\n" and oct(unit.stat().st_mode & 0o777) == "0o644"
    assert not [p for p in os.listdir(unit.parent) if p.startswith(".")]  # no temp files left


def test_a_unit_turned_off_is_removed_with_its_enable_link_then_nothing_more(tmp_path):
    unit = tmp_path / "system" / "rocetune-qos.service"
    link = tmp_path / "system" / "multi-user.target.wants" / "rocetune-qos.service"
    F.apply_changes(F.plan_files([{"path": str(unit), "content": "[Unit]\n", "mode": "0644"}],
                                 [{"path": str(link), "src": str(unit)}])[0])
    absent = [str(link), str(unit), str(tmp_path / "never-written.json")]
    changes, diffs = F.plan_files([], [], absent)
    assert [c for c in changes] == [("remove", {"path": str(link)}), ("remove", {"path": str(unit)})]
    assert diffs[0]["before"] == "-> %s\n" % unit and diffs[1]["before"] == "[Unit]\n" and diffs[1]["after"] == ""
    F.apply_changes(changes)
    assert not os.path.lexists(link) and not unit.exists()
    assert F.plan_files([], [], absent) == ([], [])


def _unit(tmp_path, content="[Unit]\n"):
    return {"path": str(tmp_path / "rocetune-qos.service"), "content": content, "mode": "0644"}


def test_a_symlinked_target_is_refused_and_neither_read_nor_followed(tmp_path):
    secret = tmp_path / "elsewhere" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:secret\n")
    want = _unit(tmp_path)
    os.symlink(str(secret), want["path"])
    with pytest.raises(F.FileTargetError, match="rocetune-qos.service: it is a symbolic link, not a regular file"):
        F.plan_files([want], [])
    assert secret.read_text() == "root:secret\n" and os.path.islink(want["path"])
    with pytest.raises(F.FileTargetError):  # a link put there after planning is not written through
        F.apply_changes([("file", want)])
    assert secret.read_text() == "root:secret\n"


def test_fifo_directory_and_device_targets_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.service"
    os.mkfifo(str(fifo))  # opening it to read would wait for a writer forever
    (tmp_path / "dir.service").mkdir()
    for name, kind in (("fifo.service", "a FIFO"), ("dir.service", "a directory")):
        with pytest.raises(F.FileTargetError, match="it is %s" % kind):
            F.plan_files([{"path": str(tmp_path / name), "content": "x\n", "mode": "0644"}], [])
    with pytest.raises(F.FileTargetError, match="it is a character device"):
        F.plan_files([{"path": "/dev/null", "content": "x\n", "mode": "0644"}], [])
    with pytest.raises(F.FileTargetError, match="it is a FIFO"):
        F.plan_files([], [], [str(fifo)])
    with pytest.raises(F.FileTargetError, match="it is a directory, not a symbolic link"):
        F.plan_files([], [{"path": str(tmp_path / "dir.service"), "src": "/x"}])


def test_a_target_larger_than_the_cap_is_refused(tmp_path):
    want = _unit(tmp_path)
    with open(want["path"], "wb") as fh:
        fh.truncate(F.MAX_OLD_BYTES + 1)
    with pytest.raises(F.FileTargetError, match="larger than %d bytes" % F.MAX_OLD_BYTES):
        F.plan_files([want], [])


def test_mode_is_set_on_the_descriptor_whatever_the_umask(tmp_path):
    want = _unit(tmp_path)
    old = os.umask(0o077)
    try:
        F.apply_changes(F.plan_files([want], [])[0])
    finally:
        os.umask(old)
    assert oct(os.stat(want["path"]).st_mode & 0o7777) == "0o644"
    assert F.plan_files([want], []) == ([], [])


@pytest.mark.skipif(os.geteuid() != 0, reason="only root takes a file over from another owner")
def test_root_takes_over_the_file_another_user_owns_even_with_the_same_content(tmp_path):
    want = _unit(tmp_path, "[Unit]\nsame\n")
    with open(want["path"], "w") as fh:
        fh.write("[Unit]\nsame\n")
    os.chmod(want["path"], 0o644)
    os.chown(want["path"], 4321, 4322)  # the same bytes, but that user could still change them
    changes = F.plan_files([want], [])[0]
    assert [c[1]["path"] for c in changes] == [want["path"]]
    F.apply_changes(changes)
    st = os.stat(want["path"])
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert F.plan_files([want], []) == ([], [])  # and then it is left alone


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    want = _unit(tmp_path, "[Unit]\nnew\n")
    with open(want["path"], "w") as fh:
        fh.write("[Unit]\nold\n")
    changes = F.plan_files([want], [])[0]

    def no_space(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(F.os, "fsync", no_space)
    with pytest.raises(F.FileTargetError, match="rocetune-qos.service: No space left"):
        F.apply_changes(changes)
    with open(want["path"]) as fh:
        assert fh.read() == "[Unit]\nold\n"
    assert os.listdir(str(tmp_path)) == ["rocetune-qos.service"]
