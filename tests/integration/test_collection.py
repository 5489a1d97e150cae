"""The roles and modules as the collection rocetune.fabric: built from galaxy.yml, installed into
a fresh directory, used by FQCN from a project that is not this repository, documented the way
ansible-doc renders it, and clean under ansible-test sanity."""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py"))
ROLES = sorted(p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir())
BIN = Path(sys.executable).parent
# ansible-test's virtual environments live here between runs (they take a minute to make).
TEST_HOME = Path(os.path.expanduser("~/.cache/rocetune/ansible-test-home"))

# ansible-test bootstraps pip in each of its virtual environments with a get-pip script it
# downloads from a host outside the package index; this stand-in takes pip from the
# interpreter's own ensurepip and installs what ansible-test asks for from the index.
GET_PIP_OFFLINE = '''"""Stand-in for get-pip.py: ensurepip, then pip install (get-pip's own flags dropped)."""
import ensurepip
import os
import subprocess
import sys

# ensurepip points PIP_CONFIG_FILE at os.devnull in this process to bootstrap in isolation; the
# install that follows must see the site's pip configuration (its index, its CA bundle) again.
environ = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args, env=environ))
'''

pytestmark = pytest.mark.slow  # builds and installs the collection; ansible-test sanity


def tool(name: str) -> str:
    return str(BIN / name)


def clean_env(**extra) -> dict:
    """An environment that sees no ansible.cfg of this repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(collections path, collection root) of the built tarball installed into a fresh place."""
    out = tmp_path_factory.mktemp("build")
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_collection.py"), "--output-path", str(out)],
                          capture_output=True, text=True, cwd=out, env=clean_env(PATH=f"{BIN}:{os.environ['PATH']}"),
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tarball = Path(proc.stdout.strip())
    assert tarball.parent == out and tarball.name.startswith("rocetune-fabric-"), proc.stdout
    dest = tmp_path_factory.mktemp("collections")
    proc = subprocess.run([tool("ansible-galaxy"), "collection", "install", str(tarball), "-p", str(dest)],
                          capture_output=True, text=True, cwd=dest, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dest, dest / "ansible_collections" / "rocetune" / "fabric"


def test_the_built_collection_holds_the_roles_plugins_and_the_agents_sources_only(installed):
    _, root = installed
    assert sorted(p.name for p in (root / "roles").iterdir()) == ROLES
    assert sorted(p.stem for p in (root / "plugins" / "modules").glob("*.py")) == MODULES
    assert sorted(p.name for p in (root / "plugins" / "action").glob("*.py")) == [
        "preflight.py", "roce_net_path.py", "roce_qos_apply.py", "rocetune_agent_install.py", "rocetune_agent_pack.py",
        "rocetune_env_features.py", "role_vars_check.py"]
    # The agent packed (what the rocetune_agent role installs as it is), not its sources; the
    # license; the modules' copies of the core files (tools/sync_module_utils.py) as the
    # repository has them; no build leftovers.
    assert not (root / "src").exists() and (root / "LICENSE").is_file()
    import zipfile

    with zipfile.ZipFile(root / "roles" / "rocetune_agent" / "files" / "rocetune-agent.pyz") as pyz:
        names = set(pyz.namelist())
    assert {"__main__.py", "rocetune/agentpack.py", "rocetune/core/ip_addr_json.py"} <= names
    # Bytecode only as the pack makes it, beside each module's source (rocetune.agentpack).
    assert not [n for n in names if "__pycache__" in n or (n.endswith(".pyc") and n[:-1] not in names)]
    assert "rocetune/agentpack.pyc" in names
    copy = root / "plugins" / "module_utils" / "rocetune_ip_addr.py"
    assert copy.read_text() == (REPO / "plugins" / "module_utils" / "rocetune_ip_addr.py").read_text()
    assert not [p for p in root.rglob("*") if p.is_symlink()]
    assert not list((root / "src").glob("*.egg-info")) and not list(root.rglob("__pycache__"))
    assert sorted(p.name for p in (root / "plugins" / "filter").iterdir()) == [
        "systemd.py", "systemd_escape.yml", "systemd_exec.yml", "systemd_unit_names.yml"]
    assert (root / "playbooks" / "site.yml").is_file()
    for absent in ("bench", "docs", "inventories", "lab", "tests/unit", "tests/lab", "collections"):
        assert not (root / absent).exists(), absent


def test_the_installed_collection_passes_ansible_lint_production(installed):
    """As a user lints what they installed: from the collection's own directory, with only the
    installed copy on the collections path. Its .ansible-lint ships with it (requires_ansible 2.14,
    which ansible-lint's own list of supported releases no longer holds)."""
    colls, root = installed
    assert (root / ".ansible-lint").read_text() == (REPO / ".ansible-lint").read_text()
    proc = subprocess.run([tool("ansible-lint"), "--profile", "production", "--offline", "--nocolor"],
                          capture_output=True, text=True, cwd=root, timeout=900,
                          env=clean_env(ANSIBLE_COLLECTIONS_PATH=str(colls), PATH=f"{BIN}:{os.environ.get('PATH', '')}"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Unable to parse documentation" not in proc.stderr, proc.stderr[-4000:]


def test_what_git_ignores_at_the_top_the_collection_build_ignores_too():
    """A tool's cache left in the checkout (.ruff_cache holds binary files) must not reach the
    built collection, where ansible-test sanity reads every file."""
    ignored = yaml.safe_load((REPO / "galaxy.yml").read_text())["build_ignore"]
    top = [ln.strip().strip("/") for ln in (REPO / ".gitignore").read_text().splitlines()
           if ln.startswith("/.") or ln.startswith("/build") or ln.startswith("/dist")]
    assert {".ruff_cache", ".mypy_cache", ".pytest_cache", ".venv"} <= set(top)
    assert [name for name in top if name not in ignored] == []


def test_a_fresh_project_finds_every_module_and_role_by_fqcn(installed, tmp_path):
    colls, _ = installed
    env = clean_env(ANSIBLE_COLLECTIONS_PATH=str(colls))
    listed = subprocess.run([tool("ansible-doc"), "-l", "rocetune.fabric", "--json"], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert sorted(json.loads(listed.stdout)) == [f"rocetune.fabric.{m}" for m in MODULES]
    filters = subprocess.run([tool("ansible-doc"), "-t", "filter", "-l", "rocetune.fabric", "--json"],
                             capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert filters.returncode == 0, filters.stderr
    assert sorted(json.loads(filters.stdout)) == [f"rocetune.fabric.systemd_{f}" for f in ("escape", "exec", "unit_names")]
    book = tmp_path / "site.yml"
    book.write_text(yaml.safe_dump([{"name": "GPU nodes", "hosts": "all", "gather_facts": False,
                                     "roles": [{"role": f"rocetune.fabric.{r}"} for r in ROLES]}]))
    proc = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--syntax-check", str(book)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = tmp_path / "import.yml"
    imported.write_text("- name: The collection's own site playbook\n  ansible.builtin.import_playbook: rocetune.fabric.site\n")
    proc = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--syntax-check", str(imported)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _documentation(path: Path) -> dict:
    tree = ast.parse(path.read_text())
    docs = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name) and t.id in ("DOCUMENTATION", "EXAMPLES", "RETURN")}
    return docs


def _named_spec(tree: ast.Module, name: str, action: Path) -> dict:
    """The spec `name` that the action plugin imports from module_utils, or defines itself."""
    import importlib

    if str(REPO / "collections") not in sys.path:
        sys.path.insert(0, str(REPO / "collections"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return getattr(importlib.import_module(node.module), name)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return getattr(importlib.import_module(f"ansible_collections.rocetune.fabric.plugins.action.{action.stem}"), name)
    raise AssertionError(f"{name} is neither imported nor defined by the action plugin")


def _argument_spec(path: Path) -> dict:
    """The argument_spec the module gives AnsibleModule (captured by running its main() with a
    stand-in that stops there); for a documentation-only module, the arguments its action plugin
    of the same name accepts."""
    import importlib
    from unittest import mock

    if "AnsibleModule(" not in path.read_text():
        action = REPO / "plugins" / "action" / path.name
        assert action.is_file(), f"{path.name}: no AnsibleModule(argument_spec=...) and no action plugin"
        tree = ast.parse(action.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_VALID_ARGS":
                if isinstance(node.value.args[0], ast.Name):  # frozenset(SPEC): a module_utils spec, whole
                    return _named_spec(tree, node.value.args[0].id, action)
                return {name: None for name in ast.literal_eval(node.value.args[0])}
        raise AssertionError(f"{action.name}: no _VALID_ARGS")
    if str(REPO / "collections") not in sys.path:
        sys.path.insert(0, str(REPO / "collections"))
    module = importlib.import_module(f"ansible_collections.rocetune.fabric.plugins.modules.{path.stem}")
    captured: dict = {}

    class Stop(Exception):
        pass

    def stand_in(argument_spec, **kwargs):
        captured.update(argument_spec)
        raise Stop

    with mock.patch.object(module, "AnsibleModule", stand_in), pytest.raises(Stop):
        module.main()
    return captured


@pytest.mark.parametrize("module", MODULES)
def test_documented_options_are_the_argument_spec(module):
    path = REPO / "plugins" / "modules" / f"{module}.py"
    docs = _documentation(path)
    doc = yaml.safe_load(docs["DOCUMENTATION"])
    spec = _argument_spec(path)
    options = doc.get("options") or {}
    assert sorted(options) == sorted(spec), f"{module}: documented {sorted(options)} vs spec {sorted(spec)}"
    assert doc.get("version_added"), f"{module}: no version_added"
    assert "check_mode" in (doc.get("attributes") or {}) and "diff_mode" in doc["attributes"], f"{module}: attributes"
    for name, arg in spec.items():
        opt = options[name]
        if arg is None:  # an action plugin's argument: only its name is declared in code
            continue
        assert opt.get("type", "str") == arg.get("type", "str"), f"{module}.{name}: type"
        assert bool(opt.get("required")) == bool(arg.get("required")), f"{module}.{name}: required"
        if "default" in arg:
            assert opt.get("default") == arg["default"], f"{module}.{name}: default"
        if "choices" in arg:
            assert opt.get("choices") == arg["choices"], f"{module}.{name}: choices"
    examples = yaml.safe_load(docs["EXAMPLES"])
    assert any(f"rocetune.fabric.{module}" in task for task in examples), f"{module}: no example uses it"
    returns = yaml.safe_load(docs["RETURN"])
    assert returns is not None
    for key, value in returns.items():
        assert "sample" in value, f"{module}: return {key} has no sample"
        if value.get("type") == "list":
            assert "elements" in value, f"{module}: return {key} (a list) has no elements"


def _ansible_test_pip_version() -> str:
    import ansible_test

    source = Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
    match = re.search(r"pip='([\d.]+)'", source.read_text())
    assert match, "ansible-test's pip version not found"
    return match.group(1)


def test_ansible_test_sanity_is_clean(installed):
    _, root = installed
    cache = TEST_HOME / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    # Runs from several checkouts share the virtual environments: one at a time, and one left
    # half-made (interrupted, or its interpreter's venv since recreated) is made again.
    with open(TEST_HOME / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for venv in (TEST_HOME / ".ansible" / "test" / "venv").glob("*/*/*"):
            if not (venv / "bin" / "python").exists():
                shutil.rmtree(venv)
        (cache / f"get_pip_{_ansible_test_pip_version().replace('.', '_')}.py").write_text(GET_PIP_OFFLINE)
        # ansible-test wants the collection root as the working directory, inside a git tree or not.
        # The whole installed collection is tested, as a user would test it.
        proc = subprocess.run([tool("ansible-test"), "sanity", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}",
                               "--local", "--color", "no"],
                              capture_output=True, text=True, cwd=root, timeout=900,
                              env=clean_env(HOME=str(TEST_HOME), PATH=f"{BIN}:{os.environ.get('PATH', '')}"))
    errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(("ERROR", "FATAL"))]
    assert proc.returncode == 0, "\n".join(errors) or proc.stdout[-3000:] + proc.stderr[-3000:]


def test_ansible_test_integration_targets_pass(installed):
    """The modules' integration targets (tests/integration/targets), the way collections test
    with ansible-test; they touch nothing of this machine (a directory plays /proc/sys, and the
    QoS refusals come before any interface is read). tests/lab runs the modules on lab hosts."""
    _, root = installed
    targets = sorted(p.name for p in (root / "tests" / "integration" / "targets").iterdir())
    assert targets == ["host_tuning_sysctl", "roce_qos_apply"]
    proc = subprocess.run([tool("ansible-test"), "integration", "--local", "--color", "no",
                           "--python", f"{sys.version_info[0]}.{sys.version_info[1]}", *targets],
                          capture_output=True, text=True, cwd=root, timeout=600,
                          env=clean_env(HOME=str(TEST_HOME), PATH=f"{BIN}:{os.environ.get('PATH', '')}"))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for target in targets:
        assert f"Running {target} integration test role" in proc.stdout, proc.stdout[-3000:]


def test_min_ansible_version_is_the_oldest_the_nodes_run():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=2.14.0"
    for role in ROLES:
        meta = yaml.safe_load((REPO / "roles" / role / "meta" / "main.yml").read_text())
        assert meta["galaxy_info"]["min_ansible_version"] == "2.14", role
    assert "ansible-core` (2.14)" in (REPO / "docs" / "first-boot.md").read_text()


def test_the_repository_finds_its_own_collection_without_installing_it():
    link = REPO / "collections" / "ansible_collections" / "rocetune" / "fabric"
    assert link.is_symlink() and link.resolve() == REPO
    assert "collections_path = collections" in (REPO / "ansible.cfg").read_text()
