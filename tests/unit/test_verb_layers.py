"""The CLI maps options onto the app layer's requests and presents what it answers: every module
of cli/ (the verbs, the shared options, the report helpers, main) imports from the app layer, the
renderers, the model and the CLI's own modules, never a domain package (probe, hostfs, doctor,
fleet, lint, switchos, nccl, envfiles, analysis ...) itself. No module is excepted."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Set

import pytest

CLI = Path(__file__).resolve().parents[2] / "src" / "rocetune" / "cli"
ALLOWED = ("rocetune.app", "rocetune.render", "rocetune.model", "rocetune.errors", "rocetune.text",
           "rocetune.cli")


def _imports(path: Path, cli: Path = CLI) -> Set[str]:
    """The rocetune modules a file of `cli` imports (relative imports resolved), wherever the
    import stands: at the top, inside a function, or under TYPE_CHECKING."""
    package = ["rocetune"] + list(path.relative_to(cli.parent).parent.parts)
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
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) \
                == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            out.add(str(node.args[0].value))
    return {m for m in out if m.startswith("rocetune")} - {"rocetune"}


def _below(modules: Set[str]) -> Set[str]:
    return {m for m in modules if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}


FILES = sorted(str(p.relative_to(CLI)) for p in CLI.rglob("*.py"))


def test_every_file_of_the_cli_is_read():
    assert {"main.py", "options.py", "report.py", "result.py", "verbs/env.py", "verbs/explain.py"} <= set(FILES)


@pytest.mark.parametrize("name", FILES)
def test_a_cli_module_reaches_below_the_app_layer_nowhere(name):
    below = _below(_imports(CLI / name))
    assert not below, f"cli/{name} imports {sorted(below)}: ask the app layer instead"


def test_the_reader_sees_a_domain_import(tmp_path):
    assert _below({"rocetune.fleet.gather", "rocetune.app.fleet", "rocetune.cli.result"}) == {"rocetune.fleet.gather"}
    verb = tmp_path / "cli" / "verbs" / "x.py"
    verb.parent.mkdir(parents=True)
    verb.write_text("def run():\n    from ...envfiles import dialects\n    from ..report import collect\n",
                    encoding="utf-8")
    assert _below(_imports(verb, tmp_path / "cli")) == {"rocetune.envfiles"}
