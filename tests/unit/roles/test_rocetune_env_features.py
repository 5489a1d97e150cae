"""rocetune_env_features (an action plugin: it writes on the controller, in Ansible's own
process): every node's Features as DIR/<host>.json, only what changed, nothing in check mode,
and no file named by a host name that is not a plain file name."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from tests.unit.roles import REPO

pytest.importorskip("ansible", reason="the action plugin runs inside ansible-core")
sys.path.insert(0, str(REPO / "collections"))
FEATURES = importlib.import_module("ansible_collections.rocetune.fabric.plugins.action.rocetune_env_features")
from ansible.errors import AnsibleActionFail  # noqa: E402


def test_each_hosts_features_written_once_and_null_ones_skipped(tmp_path):
    out = tmp_path / "features"
    hosts = {"gpu02": {"b": 1, "a": [2]}, "gpu01": {"schema_version": 3}, "gpu03": None}
    changed, files, diffs = FEATURES.write_features(str(out), hosts, check_mode=False)
    assert changed and [f["path"] for f in files] == [str(out / "gpu01.json"), str(out / "gpu02.json")]
    assert all(f["changed"] for f in files) and len(diffs) == 2
    text = (out / "gpu02.json").read_text()
    assert text == json.dumps({"a": [2], "b": 1}, indent=4, sort_keys=True) + "\n"
    assert not (out / "gpu03.json").exists()
    before = (out / "gpu01.json").stat().st_mtime_ns
    hosts["gpu02"]["b"] = 2
    changed, files, diffs = FEATURES.write_features(str(out), hosts, check_mode=False)
    assert changed and [f["changed"] for f in files] == [False, True] and len(diffs) == 1
    assert (out / "gpu01.json").stat().st_mtime_ns == before


def test_check_mode_writes_nothing_and_says_what_would_change(tmp_path):
    changed, files, diffs = FEATURES.write_features(str(tmp_path / "f"), {"gpu01": {"x": 1}}, check_mode=True)
    assert changed and diffs and not (tmp_path / "f").exists()


@pytest.mark.parametrize("name", ["..", "a/b", "x y", "$(id)", "gpu01\n"])
def test_a_host_name_unfit_for_a_file_name_fails_before_anything_is_written(tmp_path, name):
    with pytest.raises(AnsibleActionFail, match="host names unfit for a file name"):
        FEATURES.write_features(str(tmp_path), {"gpu01": {}, name: {}}, check_mode=False)
    assert list(tmp_path.iterdir()) == []
