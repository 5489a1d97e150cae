"""Static checks of the Ansible side: syntax, ansible-lint (production profile), and every
role's interface (meta/argument_specs.yml agrees with defaults/main.yml and the README; names
follow the `<role>_*` / `__<role>_*` conventions). No hosts needed."""

from __future__ import annotations

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
ROLES = sorted(p for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()) if (REPO / "roles").is_dir() else []
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    # Not a skip: the test command installs it, so its absence is a broken setup.
    assert found, f"{name} is not installed (run scripts/bootstrap.sh)"
    return found


def env() -> dict:
    e = dict(os.environ)
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
    e.setdefault("ANSIBLE_LOCAL_TEMP", f"/tmp/.ansible-static-{os.getuid()}")  # per user: a shared one is not writable
    # The modules' temp directory (ansible_remote_tmp, `~/.ansible/tmp`): ansible expands `~` to the
    # account's home, not $HOME, so an account whose home is missing or read-only needs this one.
    e.setdefault("ANSIBLE_REMOTE_TMP", f"/tmp/.ansible-remote-{os.getuid()}")
    e["NO_COLOR"] = "1"
    return e


def load(path: Path):
    with open(path) as fh:
        return yaml.safe_load(fh)


def role_ids():
    return [r.name for r in ROLES]


# ---------------------------------------------------------------------------------------------
# Playbooks


def test_site_yml_is_a_one_line_import_of_playbooks_site():
    plays = load(REPO / "site.yml")
    assert len(plays) == 1
    assert plays[0].get("ansible.builtin.import_playbook") == "playbooks/site.yml"


def test_syntax_check_site_yml():
    proc = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--syntax-check", "site.yml"],
                          cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_a_run_without_gpu_nodes_is_an_error_not_no_hosts_matched(tmp_path):
    empty = tmp_path / "empty.yml"
    empty.write_text("all:\n  hosts: {}\n")
    proc = subprocess.run([tool("ansible-playbook"), "-i", str(empty), "site.yml"], cwd=REPO, env=env(),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout
    assert "No host in the inventory's gpu_nodes group" in " ".join(proc.stdout.split()), proc.stdout


@pytest.mark.slow  # ansible-lint over every role and playbook
def test_ansible_lint_production_profile_is_clean():
    """From the repository root, as a collection's CI runs it: galaxy.yml, meta/runtime.yml, the
    changelog, the sanity ignore files, the roles, playbooks and inventories."""
    proc = subprocess.run([tool("ansible-lint"), "--profile", "production", "--offline", "--nocolor"],
                          cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:]


def test_changelog_fragments_are_well_formed():
    proc = subprocess.run([tool("antsibull-changelog"), "lint"], cwd=REPO, env=env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout


def test_the_collection_ships_the_license_it_declares():
    galaxy = load(REPO / "galaxy.yml")
    assert galaxy["license"] == ["Apache-2.0"]
    assert "Apache License\n                           Version 2.0" in (REPO / "LICENSE").read_text()
    for key in ("repository", "documentation", "issues"):
        assert galaxy[key].startswith("https://"), key


def test_no_noqa_without_a_reason():
    """A `# noqa` must say why in the same comment: `# noqa: rule-id - reason`."""
    bad = []
    for top in ("roles", "playbooks"):
        for path in (REPO / top).rglob("*.yml"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"#\s*noqa\b", line) and not re.search(r"#\s*noqa\b[^#]*\s-\s+\w", line):
                    bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Role interfaces


def test_there_are_roles():
    assert ROLES, "no roles found under roles/"


@pytest.mark.parametrize("role", ROLES, ids=role_ids())
def test_argument_specs_and_defaults_agree(role: Path):
    name = role.name
    specs = load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = load(role / "defaults" / "main.yml") or {}
    assert sorted(specs) == sorted(defaults), (
        f"only in argument_specs: {sorted(set(specs) - set(defaults))}; "
        f"only in defaults: {sorted(set(defaults) - set(specs))}")
    for var, spec in specs.items():
        assert var.startswith(f"{name}_"), f"{var}: public variables are named {name}_*"
        assert "description" in spec and spec["description"], f"{var}: no description"
        assert "type" in spec, f"{var}: no type"
        assert spec.get("default") == defaults[var], (
            f"{var}: argument_specs default {spec.get('default')!r} != defaults/main.yml {defaults[var]!r}")
        if "choices" in spec:
            assert defaults[var] in spec["choices"], f"{var}: default not among its choices"


@pytest.mark.parametrize("role", ROLES, ids=role_ids())
def test_internal_names_are_prefixed(role: Path):
    name = role.name
    vars_file = role / "vars" / "main.yml"
    internals = list((load(vars_file) or {}).keys()) if vars_file.exists() else []
    registers = []
    for path in (role / "tasks").rglob("*.yml"):
        registers += re.findall(r"^\s*register:\s*(\S+)", path.read_text(), re.M)
        internals += re.findall(r"^\s+(__\w+):", path.read_text(), re.M)  # task-level vars
    bad = [v for v in internals + registers if not v.startswith(f"__{name}_")]
    assert not bad, f"internal variables and registers must be named __{name}_*: {bad}"


@pytest.mark.parametrize("role", ROLES, ids=role_ids())
def test_readme_lists_every_variable_with_its_default(role: Path):
    readme = (role / "README.md").read_text()
    defaults = load(role / "defaults" / "main.yml") or {}
    for var, value in defaults.items():
        assert f"`{var}`" in readme, f"{var} is not in {role.name}/README.md"
        shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
        row = next((ln for ln in readme.splitlines() if f"`{var}`" in ln and "|" in ln), "")
        assert row, f"{var}: no table row in README.md"
        as_json = json.dumps(value, ensure_ascii=False)  # how tools/role_docs.py writes lists and maps
        assert shown.strip("'\"") in row or str(value) in row or as_json in row, \
            f"{var}: default {shown} not in its README row"


@pytest.mark.parametrize("role", ROLES, ids=role_ids())
def test_example_inventory_documents_every_variable(role: Path):
    """inventories/example/group_vars/all/<role>.yml lists each variable with its default."""
    doc = REPO / "inventories" / "example" / "group_vars" / "all" / f"{role.name}.yml"
    assert doc.exists(), f"{doc.relative_to(REPO)} is missing"
    text = doc.read_text()
    defaults = load(role / "defaults" / "main.yml") or {}
    for var, value in defaults.items():
        shown = yaml.safe_dump({var: value}, default_flow_style=True, width=1000).strip()[1:-1]
        lines = [ln for ln in text.splitlines() if re.match(rf"^#\s*{var}:", ln)]
        assert lines, f"{var} is not documented in {doc.relative_to(REPO)}"
        assert any(yaml.safe_load(ln.lstrip("# ")) == {var: value} for ln in lines), (
            f"{var}: no commented line with its default ({shown}) in {doc.relative_to(REPO)}")


@pytest.mark.parametrize("role", ROLES, ids=role_ids())
def test_tags_are_role_prefixed(role: Path):
    bad = []
    for path in (role / "tasks").rglob("*.yml"):
        for tags in re.findall(r"^\s*tags:\s*\[([^\]]*)\]", path.read_text(), re.M):
            bad += [t.strip() for t in tags.split(",") if t.strip() not in ("always", "never")
                    and not t.strip().startswith(f"{role.name}_")]
    assert not bad, f"tags must be {role.name}_<phase>: {bad}"


def test_readme_variable_tables_are_generated_from_the_specs():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "role_docs.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout


# ---------------------------------------------------------------------------------------------
# The node agent: one deterministic zip the node's own python3 runs


def _pack(out_dir: Path) -> dict:
    import json
    proc = subprocess.run([sys.executable, "-m", "rocetune.agentpack", "--out-dir", str(out_dir)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_agent_pack_is_deterministic_and_runs_without_the_venv(tmp_path):
    first = _pack(tmp_path / "a")
    again = _pack(tmp_path / "a")
    assert first["changed"] is True and again["changed"] is False and again["sha256"] == first["sha256"]
    elsewhere = _pack(tmp_path / "b")
    assert Path(elsewhere["path"]).read_bytes() == Path(first["path"]).read_bytes()
    # The system python3, no venv, no site packages of ours: the zip alone plans an env.
    fixture = REPO / "tests" / "fixtures" / "hosts" / "oci-a100-v2"
    proc = subprocess.run(["/usr/bin/python3", "-S", first["path"], "--root", str(fixture), "env"],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    assert proc.returncode == 0, proc.stderr
    assert "export NCCL_IB_HCA=" in proc.stdout
    import zipfile
    names = zipfile.ZipFile(first["path"]).namelist()
    assert "yaml/__init__.py" in names and "rocetune/nccl/data/nccl_vars.json" in names
    assert not [n for n in names if n.endswith(".so")], "the agent must stay pure Python"
    # Bytecode only beside its module's source (the import system holds it to that source).
    assert [n for n in names if n.endswith(".pyc") and n[:-1] not in names] == []
