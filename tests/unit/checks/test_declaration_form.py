"""One way to declare a check: `declare(id=..., kind=..., severity=..., ...)` called at the top
level of a module, every field by keyword, in the package whose code makes the check's findings,
and in a module the registry loads. Any other form (a helper that fills fields in, a Check built
by hand, a decorator that declares) fails here."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

from rocetune import checks
from rocetune.checks import registry

from .test_registry import bindings

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "src"
FIELDS = {"id", "kind", "severity", "title", "checks", "reads", "why", "fix", "source", "also", "severity_note", "by"}
REQUIRED = {"id", "kind", "severity", "title", "checks", "reads", "why", "fix", "source"}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts)


def _scopes(tree: ast.AST) -> Iterator[Tuple[ast.AST, Tuple[ast.AST, ...]]]:
    """Every node with the function, lambda and class definitions it sits in."""
    stack: List[Tuple[ast.AST, Tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, inside = stack.pop()
        yield node, inside
        deeper = (
            inside + (node,)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            else inside
        )
        stack.extend((child, deeper) for child in ast.iter_child_nodes(node))


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def problems(source: str, where: str) -> Tuple[List[str], int]:
    """What in `source` declares a check any other way, and how many declarations it makes."""
    found, count = [], 0
    for node, inside in _scopes(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in ("declare", "Check") and alias.asname not in (None, alias.name):
                    found.append(f"{where}:{node.lineno}: {alias.name} imported as {alias.asname}")
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name == "Check" and where != "rocetune.checks.registry":
            found.append(f"{where}:{node.lineno}: a Check built by hand (declare(...) builds it)")
        if name != "declare":
            continue
        count += 1
        if inside:
            found.append(
                f"{where}:{node.lineno}: declare() inside {type(inside[-1]).__name__} "
                f"{getattr(inside[-1], 'name', '')}: a helper or a decorator that declares"
            )
        if node.args or any(k.arg is None for k in node.keywords):
            found.append(f"{where}:{node.lineno}: declare() with positional or ** arguments")
        given = {k.arg for k in node.keywords if k.arg}
        if given - FIELDS or REQUIRED - given:
            found.append(
                f"{where}:{node.lineno}: declare() fields {sorted(given - FIELDS)} unknown, "
                f"{sorted(REQUIRED - given)} missing"
            )
        kind = next((k.value for k in node.keywords if k.arg == "kind"), None)
        if not (isinstance(kind, ast.Constant) and kind.value in registry.KINDS):
            found.append(f"{where}:{node.lineno}: declare() kind is not one of {registry.KINDS} written out")
    return found, count


def declaring_modules() -> Tuple[List[str], set]:
    found, modules = [], set()
    for path in sorted((SRC / "rocetune").rglob("*.py")):
        where = _module_name(path)
        bad, count = problems(path.read_text(encoding="utf-8"), where)
        found += bad
        if count and where != "rocetune.checks.registry":
            modules.add(where)
    return found, modules


def test_every_check_is_declared_in_the_one_form():
    found, modules = declaring_modules()
    assert not found, "\n".join(found)
    assert len(modules) >= 9


def test_the_other_forms_are_refused():
    old = {
        "a helper": 'def _doctor(check_id, severity, **kw):\n    declare(id=check_id, kind="doctor", '
        'severity=severity, **kw)\n_doctor("doctor-x", "error", title="t")\n',
        "a Check by hand": 'declare(Check("x", "lint", "error", "t", "c", "r", "w", "f", "s"))\n',
        "positional fields": 'declare("x", "lint", "error", title="t", checks="c", reads="r", why="w", fix="f", '
        'source="s")\n',
        "a declaring decorator": '@host_check(Check("x", "host", "warning", title="t"))\ndef f(features):\n'
        "    return []\n",
        "a kind not written out": 'declare(id="x", kind=KIND, severity="error", title="t", checks="c", reads="r", '
        'why="w", fix="f", source="s")\n',
        "a field missing": 'declare(id="x", kind="lint", severity="error", title="t")\n',
        "a renamed declare": "from ..checks import declare as _lint\n",
    }
    for what, source in old.items():
        assert problems(source, "rocetune.lint.example")[0], what
    good = (
        'for _id in ("a", "b"):\n    declare(id=_id, kind="lint", severity="error", title="t", checks="c", '
        'reads="r", why="w", fix="f", source="s", also=("info",), severity_note="info when ...")\n'
    )
    assert problems(good, "rocetune.lint.example") == ([], 1)


def test_the_registry_loads_every_module_that_declares():
    """A fresh process that asks the registry for every check has imported every declaring
    module, and nothing else declared one."""
    _, modules = declaring_modules()
    code = (
        "import json, sys\n"
        "from rocetune import checks\n"
        "from rocetune.checks.registry import declared_in\n"
        "ids = [c.id for c in checks.all_checks()]\n"
        "print(json.dumps([sorted(sys.modules), sorted({declared_in(i) for i in ids})]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.returncode == 0, proc.stderr
    imported, declaring = json.loads(proc.stdout)
    assert modules <= set(imported), sorted(modules - set(imported))
    assert set(declaring) == modules
    assert {registry.declared_in(c.id) for c in checks.all_checks()} == modules


def test_a_check_is_declared_in_the_package_whose_code_makes_its_findings():
    bound = bindings()
    for c in checks.all_checks():
        package = registry.declared_in(c.id).rsplit(".", 1)[0]
        makers = {name for name, ids in bound.items() if c.id in ids}
        assert any(m.startswith(package + ".") for m in makers), (c.id, package, sorted(makers))


def test_the_classes_of_checks_and_their_findings_are_each_named_once():
    """One class is named Check (the registry's), and no class that a module declaring or making
    findings defines or imports shares its name with another class of the package."""
    defined: dict = {}
    for path in (SRC / "rocetune").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(_module_name(path))
    assert defined["Check"] == ["rocetune.checks.registry"]
    _, declaring = declaring_modules()
    # the package's own makers: a test elsewhere may bind a function of its own in this process
    making = {name.rsplit(".", 1)[0] for name in bindings() if name.startswith("rocetune.")}
    for module in sorted(declaring | making):
        if module not in sys.modules:  # a bound method's qualname: the module is one level up
            module = module.rsplit(".", 1)[0]
        for value in vars(sys.modules[module]).values():
            if isinstance(value, type) and value.__module__.startswith("rocetune."):
                assert len(defined[value.__name__]) == 1, (module, value.__name__, defined[value.__name__])


def test_a_probe_imports_no_declarations_of_doctor_lint_or_the_switch():
    code = (
        "import io, json, sys\n"
        "from rocetune.cli.main import main\n"
        "out, sys.stdout = sys.stdout, io.StringIO()\n"
        "code = main(['--root', sys.argv[1], '--json', 'probe'])\n"
        "sys.stdout = out\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    host = REPO / "tests" / "fixtures" / "hosts" / "pcie-4gpu-2nic"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(host)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    )
    assert proc.returncode == 0, proc.stderr
    exit_code, modules = json.loads(proc.stdout)
    assert exit_code in (0, 1)
    probe_group, later = registry._DECLARING
    assert set(probe_group) <= set(modules)
    assert not set(later) & set(modules)
