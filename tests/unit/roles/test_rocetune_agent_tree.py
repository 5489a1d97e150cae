"""The installed agent (plugins/module_utils/rocetune_agent_tree.py): unpacked,
compiled by the node's Python, run through an isolated launcher."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from rocetune import __version__, agentpack
from tests.unit.roles import REPO, load_module_utils

T = load_module_utils("rocetune_agent", "rocetune_agent_tree")
PYTHON = sys.executable
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "oci-a100-v2"


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    path = tmp_path_factory.mktemp("pack") / "rocetune.pyz"
    path.write_bytes(agentpack.build(python=PYTHON))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def install(packed, lib, command):
    path, sha = packed
    facts = T.python_facts(PYTHON)
    tree = T.unpack(str(path), str(lib), sha, PYTHON, facts["cache_tag"])
    text = T.launcher_text(PYTHON, tree, facts, T.read_stamp(tree))
    T.write_launcher(str(command), text, 0o755)
    return tree, text, facts


def test_the_launcher_runs_the_compiled_tree_isolated(packed, tmp_path):
    tree, text, facts = install(packed, tmp_path / "lib", tmp_path / "rocetune")
    assert os.path.basename(tree) == f"{__version__}-{packed[1][:12]}"
    assert text.startswith(f"#!{PYTHON} -IS\n")
    assert T.find_tree(str(tmp_path / "lib"), packed[1]) == tree
    assert T.launcher_tree(text) == tree
    # Every module has its bytecode for this interpreter, next to a source that is kept.
    tag = facts["cache_tag"]
    for dirpath, _, files in os.walk(os.path.join(tree, "rocetune")):
        for name in files:
            if name.endswith(".py"):
                assert os.path.isfile(os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{tag}.pyc")), name
    # PYTHONPATH pointing elsewhere changes nothing (-I), and the planned env is the zip's.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PYTHONPATH": "/nonexistent"}
    via_launcher = subprocess.run([str(tmp_path / "rocetune"), "--root", str(FIXTURE), "env"], env=env,
                                  capture_output=True, text=True, timeout=120)
    via_zip = subprocess.run([PYTHON, str(packed[0]), "--root", str(FIXTURE), "env"], env=env,
                             capture_output=True, text=True, timeout=120)
    assert via_launcher.returncode == 0, via_launcher.stderr
    assert "export NCCL_IB_HCA=" in via_launcher.stdout and via_launcher.stdout == via_zip.stdout
    # Nothing is compiled at run time: the tree is as the install left it.
    before = sorted(os.walk(tree))
    subprocess.run([str(tmp_path / "rocetune"), "--root", str(FIXTURE), "--json", "probe"], env=env,
                   capture_output=True, timeout=120, check=True)
    assert sorted(os.walk(tree)) == before


def test_an_unfinished_tree_is_not_found_and_is_replaced(packed, tmp_path):
    lib = tmp_path / "lib"
    tree, _, _ = install(packed, lib, tmp_path / "rocetune")
    os.unlink(os.path.join(tree, T.STAMP))
    assert T.find_tree(str(lib), packed[1]) is None
    again, _, _ = install(packed, lib, tmp_path / "rocetune")
    assert again == tree and T.find_tree(str(lib), packed[1]) == tree
    assert [n for n in os.listdir(lib) if n.startswith(".")] == []  # no unpack directories left


def test_an_old_python_is_refused_with_the_reason(tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho '{\"version\": [3, 6], \"cache_tag\": \"cpython-36\", \"site\": []}'\n")
    fake.chmod(0o755)
    with pytest.raises(T.TreeError, match="Python 3.6: the agent needs 3.9 or newer"):
        T.python_facts(str(fake))
    with pytest.raises(T.TreeError, match="cannot run"):
        T.python_facts(str(tmp_path / "absent"))


def test_an_archive_with_an_escaping_path_is_refused(tmp_path):
    bad = tmp_path / "bad.pyz"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../escape.py", "x = 1\n")
    with pytest.raises(T.TreeError, match="unsafe path"):
        T.unpack(str(bad), str(tmp_path / "lib"), "0" * 64, PYTHON, "cpython-x")
    assert not (tmp_path / "escape.py").exists()
    assert os.listdir(tmp_path / "lib") == []


def test_only_a_tree_of_ours_inside_the_lib_dir_is_removed(packed, tmp_path):
    lib = tmp_path / "lib"
    tree, _, _ = install(packed, lib, tmp_path / "rocetune")
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert T.remove_tree(str(lib), str(other)) is False and other.is_dir()
    assert T.remove_tree(str(lib), str(lib / "missing")) is False
    assert T.remove_tree(str(lib), tree) is True and not os.path.exists(tree)


def test_the_old_single_zip_agent_reads_as_no_launcher(packed, tmp_path):
    assert T.read_text(str(packed[0])) is None
    assert T.launcher_tree(None) is None and T.launcher_tree("#!/bin/sh\n") is None


def test_the_distributions_pyverbs_is_found_without_site(packed, tmp_path):
    system = "/usr/bin/python3"
    probe = subprocess.run([system, "-c", "import pyverbs"], capture_output=True)
    if not os.path.exists(system) or probe.returncode != 0:
        pytest.skip("no python3-pyverbs for /usr/bin/python3 on this machine")
    facts = T.python_facts(system)
    tree = T.unpack(str(packed[0]), str(tmp_path / "lib"), packed[1], system, facts["cache_tag"])
    text = T.launcher_text(system, tree, facts, T.read_stamp(tree))
    head = text[:text.index("from rocetune")]  # the launcher's sys.path, as it runs
    out = subprocess.run([system, "-I", "-S", "-c", head + "import pyverbs, yaml, sys\n"
                          "print(pyverbs.__file__, yaml.__file__, sys.flags.no_site)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    where_pyverbs, where_yaml, no_site = out.stdout.split()
    assert any(where_pyverbs.startswith(d) for d in facts["site"]) and no_site == "1"
    assert where_yaml.startswith(tree + "/")  # the packed PyYAML comes first


def test_the_tree_is_readable_by_every_user_whatever_the_umask(packed, tmp_path):
    old = os.umask(0o077)
    try:
        tree, _, _ = install(packed, tmp_path / "lib", tmp_path / "rocetune")
    finally:
        os.umask(old)
    modes = {oct(os.stat(os.path.join(d, n)).st_mode & 0o777)
             for d, dirs, files in os.walk(tree) for n in files}
    assert modes == {"0o644"}, modes
    dirs = {oct(os.stat(d).st_mode & 0o777) for d, _, _ in os.walk(tree)}
    assert dirs == {"0o755"} and oct(os.stat(tmp_path / "lib").st_mode & 0o777) == "0o755"
    assert oct(os.stat(tmp_path / "rocetune").st_mode & 0o777) == "0o755"


def test_a_tree_holds_the_sources_compiled_here_not_the_zips_bytecode(packed, tmp_path):
    tree, _, facts = install(packed, tmp_path / "lib", tmp_path / "rocetune")
    assert T.read_stamp(tree)["compiled"] == [facts["cache_tag"]]
    legacy = [os.path.join(d, n) for d, _, names in os.walk(tree) for n in names
              if n.endswith(".pyc") and not d.endswith("__pycache__")]
    assert legacy == []  # the zip's bytecode (beside each source) is not unpacked
    main_pyc = os.path.join(tree, "rocetune", "cli", "__pycache__", f"main.{facts['cache_tag']}.pyc")
    with open(main_pyc, "rb") as fh:
        assert int.from_bytes(fh.read(8)[4:8], "little") == 0  # compiled here (timestamp-based)
    out = subprocess.run([PYTHON, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {tree!r}); "
                          "import rocetune.cli.main as m; print(m.main.__code__.co_filename)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == os.path.join(tree, "rocetune", "cli", "main.py"), out.stderr


def test_an_installed_zip_is_found_by_its_bytes_and_its_bytecode_named(packed, tmp_path):
    lib = tmp_path / "lib"
    path = T.install_zip(str(packed[0]), str(lib), packed[1])
    assert os.path.basename(path) == f"{__version__}-{packed[1][:12]}.pyz"
    assert oct(os.stat(path).st_mode & 0o777) == "0o644" and os.listdir(lib) == [os.path.basename(path)]
    assert T.find_zip(str(lib), packed[1]) == path
    assert T.zip_magic(path) == T.python_facts(PYTHON)["magic"] and T.zip_version(path) == __version__
    with open(path, "r+b") as fh:  # the same name, other bytes: not this agent
        fh.seek(100)
        fh.write(b"X")
    assert T.find_zip(str(lib), packed[1]) is None
    assert T.remove_tree(str(lib), path) and os.listdir(lib) == []


def test_the_running_interpreter_answers_for_itself_as_it_would_when_asked():
    import subprocess
    import sys

    assert T.python_facts(sys.executable) == T._ask(sys.executable)  # a venv's asks
    if os.path.exists("/usr/bin/python3"):  # the system's answers for itself, the same
        code = ("import sys; sys.path.insert(0, %r); import rocetune_agent_tree as T; "
                "assert T.sys.prefix == T.sys.base_prefix; asked = T._ask(sys.executable); "
                "T.subprocess.Popen = None; "  # starting another interpreter now would fail
                "assert T.python_facts(sys.executable) == asked" % os.path.dirname(T.__file__))
        subprocess.run(["/usr/bin/python3", "-I", "-c", code], check=True)
