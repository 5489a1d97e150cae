"""tools/nccl_var_releases.py and tools/nccl_log_forms.py on a release's source tree past the clone's
tags (--tree): the tree is scanned as one more release, and the catalog's names of later releases
(`since`, read elsewhere) are kept until a tree of that release decides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

import nccl_log_forms  # noqa: E402
import nccl_var_releases  # noqa: E402

VERSION_MK = "NCCL_MAJOR   := 2\nNCCL_MINOR   := {minor}\nNCCL_PATCH   := {patch}\n"


def _tree(root: Path, minor: int, patch: int, source: str) -> Path:
    (root / "makefiles").mkdir(parents=True)
    (root / "makefiles" / "version.mk").write_text(VERSION_MK.format(minor=minor, patch=patch))
    (root / "src").mkdir()
    (root / "src" / "net.cc").write_text(source)
    return root


@pytest.fixture
def clone(tmp_path):
    repo = _tree(tmp_path / "clone", 30, 7, 'const char* a = "NCCL_IB_HCA";\n')
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "2.30.7"], check=True)
    subprocess.run(git + ["tag", "v2.30.7-1"], check=True)
    return str(repo)


def test_a_tree_is_one_more_release_named_by_its_version_mk(clone, tmp_path):
    tree = _tree(tmp_path / "t", 31, 2, 'NCCL_PARAM(IbEventBasedLb, "IB_EVENT_BASED_LB", 0);\n"NCCL_IB_HCA"\n')
    tags = nccl_log_forms.with_trees(nccl_log_forms.release_tags(clone), [str(tree)])
    assert [nccl_log_forms.release(t, clone) for t in tags] == ["2.30.7", "2.31.2"]
    assert nccl_log_forms.where_at(clone, tags[-1], '"IB_EVENT_BASED_LB"', "src") == "src/net.cc:1"
    assert nccl_var_releases.names_at(clone, tags[-1]) == {"NCCL_IB_EVENT_BASED_LB", "NCCL_IB_HCA"}


def test_names_of_later_releases_are_kept_until_a_tree_of_that_release_is_scanned(clone, tmp_path):
    doc = nccl_var_releases.build(clone)
    assert doc["read_elsewhere"]["NCCL_RUN_DIAGNOSTICS"]["since"] == "2.31.2"
    assert doc["variables"]["NCCL_IB_HCA"] == {"since": "2.30.7", "last": None}
    tree = _tree(tmp_path / "t", 31, 2, 'NCCL_PARAM(IbEventBasedLb, "IB_EVENT_BASED_LB", 0);\n')
    with pytest.raises(SystemExit) as e:  # the 2.31.2 tree holds one of the names the catalog says 2.31.2 reads
        nccl_var_releases.build(clone, [str(tree)])
    assert "NCCL_RUN_DIAGNOSTICS: the catalog says 2.31.2 reads it; no scanned release does" in str(e.value)
    assert "NCCL_IB_EVENT_BASED_LB:" not in str(e.value)
