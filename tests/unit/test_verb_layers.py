"""Verbs map options onto the app layer's requests and present what it answers: a verb imports
from the app layer, the renderers, the model and the CLI's own modules, never a domain package
(probe, hostfs, doctor, fleet, lint, switchos, nccl ...) itself. The verbs not yet moved onto
requests are listed with the domain modules they still reach, so that list can only shrink."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Set

import pytest

VERBS = Path(__file__).resolve().parents[2] / "src" / "rocetune" / "cli" / "verbs"
ALLOWED = ("rocetune.app", "rocetune.render", "rocetune.model", "rocetune.errors", "rocetune.text",
           "rocetune.cli")
# What a verb not yet on the app layer still imports from below it.
NOT_YET = {
    "explain": {"rocetune.analysis.hostview", "rocetune.envfiles.read", "rocetune.envfiles.writing",
                "rocetune.hostfs.inputs", "rocetune.hostfs.root", "rocetune.lint.checks", "rocetune.nccl",
                "rocetune.nccl.catalog", "rocetune.nccl.conf"},
}


def _imports(path: Path) -> Set[str]:
    """The rocetune modules a verb's file imports (relative imports resolved)."""
    package = ["rocetune", "cli", "verbs"]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if node.module is None:
                out.update(f"{module}.{a.name}" for a in node.names if a.name != "__version__")
            else:
                out.add(module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("rocetune")} - {"rocetune"}


def _below(modules: Set[str]) -> Set[str]:
    return {m for m in modules if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}


@pytest.mark.parametrize("verb", sorted(p.stem for p in VERBS.glob("*.py") if p.stem != "__init__"))
def test_a_verb_reaches_below_the_app_layer_only_where_listed(verb):
    below = _below(_imports(VERBS / f"{verb}.py"))
    assert below <= NOT_YET.get(verb, set()), f"cli/verbs/{verb}.py imports {sorted(below - NOT_YET.get(verb, set()))}"


def test_the_list_of_verbs_not_yet_moved_is_not_stale():
    for verb, listed in NOT_YET.items():
        assert listed <= _below(_imports(VERBS / f"{verb}.py")), f"{verb}: drop what it no longer imports"


def test_the_reader_sees_a_domain_import():
    assert _below({"rocetune.fleet.gather", "rocetune.app.fleet", "rocetune.cli.result"}) == {"rocetune.fleet.gather"}
