"""rocetune_agent_pack (an action plugin, on the controller): the package given is hashed; else
the agent is packed from the source tree given, in Ansible's own process, and a second pack of
the same sources returns the same zip unchanged; a source tree without rocetune or a missing
package is a one-line failure."""

from __future__ import annotations

import hashlib
import importlib
import sys
from pathlib import Path

import pytest

from tests.unit.roles import REPO

pytest.importorskip("ansible", reason="the action plugin runs inside ansible-core")
sys.path.insert(0, str(REPO / "collections"))
PACK = importlib.import_module("ansible_collections.rocetune.fabric.plugins.action.rocetune_agent_pack")
from ansible.errors import AnsibleActionFail  # noqa: E402


def test_a_given_package_is_hashed_as_it_is(tmp_path):
    package = tmp_path / "agent.pyz"
    package.write_bytes(b"#!/usr/bin/python3\nPK\x05\x06" + b"\0" * 18)
    assert PACK.given_package(str(package)) == {
        "path": str(package), "sha256": hashlib.sha256(package.read_bytes()).hexdigest(), "changed": False}


def test_a_missing_package_is_named(tmp_path):
    with pytest.raises(AnsibleActionFail, match=r"^rocetune_agent_package: .*/nope\.pyz is not a file on the controller$"):
        PACK.given_package(str(tmp_path / "nope.pyz"))
    with pytest.raises(AnsibleActionFail, match="is not a file"):
        PACK.given_package(str(tmp_path))


def test_the_agent_is_packed_from_the_sources_once(tmp_path):
    first = PACK.pack(str(REPO / "src"), str(tmp_path), "/usr/bin/python3")
    data = Path(first["path"]).read_bytes()
    assert first["changed"] and first["sha256"] == hashlib.sha256(data).hexdigest()
    assert data.startswith(b"#!/usr/bin/python3\n") and first["path"].startswith(str(tmp_path))
    again = PACK.pack(str(REPO / "src"), str(tmp_path), "/usr/bin/python3")
    assert again == dict(first, changed=False)


def test_a_source_tree_without_rocetune_or_a_bad_interpreter_is_refused(tmp_path):
    with pytest.raises(AnsibleActionFail, match=r"^rocetune_agent_source_dir: no rocetune sources in "):
        PACK.pack(str(tmp_path), str(tmp_path / "out"), "/usr/bin/python3")
    with pytest.raises(AnsibleActionFail, match="an absolute path without spaces"):
        PACK.pack(str(REPO / "src"), str(tmp_path / "out"), "python3 -I")
    assert not (tmp_path / "out").exists()
