"""The roles' own checks refuse bad inventories before touching a node: run on localhost with a
local connection, the play must stop at the check with a message that names the fix."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration.test_ansible_static import REPO, env, tool

PLAY = """\
- name: One role, nothing else
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: {role}
"""


def play(tmp_path, role: str, extra: dict) -> subprocess.CompletedProcess:
    book = tmp_path / "play.yml"
    book.write_text(PLAY.format(role=role))
    e = env()
    e["ANSIBLE_ROLES_PATH"] = str(REPO / "roles")
    # The test's own interpreter runs the modules (interpreter discovery may find a shim).
    extra = dict(extra, ansible_python_interpreter=sys.executable)
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", str(book), "-e", json.dumps(extra)],
                          cwd=tmp_path, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)


def test_an_mtu_too_small_for_roce_is_refused_before_any_change(tmp_path):
    result = play(tmp_path, "roce_net", {"roce_net_mtu": 1500, "roce_net_interfaces": ["definitely-absent0"]})
    assert result.returncode != 0
    assert "roce_net_mtu=1500 is too small" in result.stdout and "at least 4200" in result.stdout, result.stdout
    assert "no interface definitely-absent0" not in result.stdout  # refused before reading the interfaces


def test_a_misspelt_variable_is_named(tmp_path):
    result = play(tmp_path, "roce_net", {"roce_net_mtus": 9000})
    assert result.returncode != 0
    assert "unknown variable(s) roce_net_mtus" in result.stdout, result.stdout
