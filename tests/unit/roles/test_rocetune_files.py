"""The roles' one-call file writer (plugins/module_utils/rocetune_files.py): only what differs, atomically, with diffs."""

from __future__ import annotations

import os

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
