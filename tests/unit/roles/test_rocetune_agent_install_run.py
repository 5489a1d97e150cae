"""rocetune_agent_install's body (plugins/module_utils/rocetune_agent_install_run.py): the agent
installed as the zip itself where the node's Python takes its bytecode, else unpacked and
compiled; asked without the zip, it says whether the zip must come over."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from rocetune import __version__, agentpack
from tests.unit.roles import load_module_utils

RUN = load_module_utils("rocetune_agent", "rocetune_agent_install_run")
PYTHON = sys.executable


class Done(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class FakeModule:
    def __init__(self, params, check_mode=False, diff=False):
        self.params = dict(dict.fromkeys(RUN.ARGUMENT_SPEC), mode="0755", **params)
        self.check_mode, self._diff = check_mode, diff

    def exit_json(self, **result):
        raise Done(result)

    def fail_json(self, **result):
        raise Done(dict(result, failed=True))


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    path = tmp_path_factory.mktemp("pack") / "rocetune.pyz"
    path.write_bytes(agentpack.build(python=PYTHON))
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def node(tmp_path, packed):
    (tmp_path / "bin").mkdir()

    def run(src=None, check_mode=False, diff=False, magic=None, lib_dir=None):
        params = dict(dest=str(tmp_path / "bin" / "rocetune"), sha256=packed[1], python=PYTHON,
                      lib_dir=str(lib_dir or tmp_path / "lib"), src=src)
        facts = RUN.python_facts(PYTHON)
        real = RUN.python_facts
        if magic:  # a node whose Python takes other bytecode than the packing Python's
            RUN.python_facts = lambda python: dict(facts, magic=magic)
        try:
            with pytest.raises(Done) as done:
                RUN.run(FakeModule(params, check_mode, diff))
        finally:
            RUN.python_facts = real
        return done.value.result

    run.lib, run.command = tmp_path / "lib", tmp_path / "bin" / "rocetune"
    return run


def test_the_zip_is_installed_as_it_is_where_this_python_takes_its_bytecode(node, packed):
    asked = node()
    assert asked["needs_content"] and not asked["changed"] and not node.lib.exists()
    first = node(src=packed[0])
    name = f"{__version__}-{packed[1][:12]}.pyz"
    assert first["changed"] and first["tree"] == str(node.lib / name) and os.listdir(node.lib) == [name]
    assert f"sys.path[:0] = [{str(node.lib / name)!r}]" in node.command.read_text()
    out = subprocess.run([str(node.command), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("rocetune "), out.stderr
    again = node()
    assert not again["changed"] and not again["needs_content"] and again["msg"] == "up to date"


def test_a_python_that_takes_other_bytecode_gets_the_tree_compiled_from_the_installed_zip(node, packed):
    node(src=packed[0])
    zip_path = str(node.lib / f"{__version__}-{packed[1][:12]}.pyz")
    check = node(check_mode=True, magic="00000000")  # no transfer needed: the zip is there
    assert check["changed"] and not check["needs_content"] and os.path.exists(zip_path)
    moved = node(magic="00000000")
    tree = str(node.lib / f"{__version__}-{packed[1][:12]}")
    assert moved["changed"] and moved["tree"] == tree and os.listdir(node.lib) == [os.path.basename(tree)]
    assert f"sys.path[:0] = [{tree!r}]" in node.command.read_text() and "removed" in moved["msg"]
    assert not node(magic="00000000")["changed"]


def test_without_the_zip_a_node_of_another_python_unpacks_what_comes_over(node, packed):
    first = node(src=packed[0], magic="00000000")
    tree = node.lib / f"{__version__}-{packed[1][:12]}"
    assert first["tree"] == str(tree) and os.listdir(node.lib) == [tree.name]
    assert list((tree / "rocetune" / "cli" / "__pycache__").glob("main.*.pyc"))


def test_a_transferred_zip_with_other_bytes_is_refused(node, packed, tmp_path):
    bad = tmp_path / "bad.pyz"
    with open(packed[0], "rb") as fh:
        bad.write_bytes(fh.read() + b"\0")
    result = node(src=str(bad))
    assert result["failed"] and "does not have sha256" in result["msg"] and not node.lib.exists()


def test_check_mode_with_nothing_installed_changes_nothing_and_says_why(node):
    result = node(check_mode=True, diff=True)
    assert result["changed"] and result["needs_content"] and not node.lib.exists()
    assert "installed in" in result["diff"]["after"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the ownership rule holds for root (as any other user the kernel's is the boundary)")
def test_a_lib_dir_another_user_can_write_is_refused_before_anything_is_made(node, packed, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # not sticky: any user could swap the agent root imports
    result = node(src=packed[0], lib_dir=shared / "lib")
    assert result["failed"] and "rocetune_agent_lib_dir" in result["msg"] and "nothing was changed" in result["msg"]
    assert not (shared / "lib").exists() and not node.command.exists()
