"""The unit tests mirror src/rocetune: a test lives where the code it tests lives.

`tests/unit/<package>/` holds the tests of `src/rocetune/<package>/` (at any depth:
`tests/unit/probe/sources/` for `probe/sources/`), and `tests/unit/test_<module>*.py` those of a
top-level module (`test_planner.py` for `planner.py`). Only the folders and files named below
sit anywhere else, each with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Folders of tests/unit that are not a package of src/rocetune.
OTHER_FOLDERS = {
    "roles": "the collection's roles and their module_utils, which are not in src/",
}

#: Files at the root of tests/unit that test no one module: they cross the whole package.
CROSS_CUTTING = {
    "test_layout.py": "this file: where every unit test lives",
    "test_verb_layers.py": "the import layers of the whole package",
    "test_fuzz_readers.py": "every reader of untrusted input, in every package",
    "test_validators_whole_value.py": "every validator, in the package and in the collection",
    "test_module_utils_sync.py": "the collection's generated copies of the package's core",
    "test_root_writers.py": "every writer root uses: the package's and the roles'",
    "test_hostile_names_and_pages.py": "a node's names carried into files and commands of several packages",
    "test_host_guard.py": "the guard of conftest.py that keeps unit tests off the real /sys and /proc",
}

#: Helpers shared by tests of several folders.
HELPERS = {"__init__.py", "conftest.py", "treekit.py"}


def misplaced(unit: Path, src: Path) -> list[str]:
    """Each folder or file under `unit` that does not mirror the package at `src`, with why."""
    problems = []
    for folder in sorted(p for p in unit.rglob("*") if p.is_dir()):
        rel = folder.relative_to(unit)
        if rel.parts[0] in OTHER_FOLDERS or "__pycache__" in rel.parts:
            continue
        if not (src / rel / "__init__.py").is_file():
            problems.append(f"tests/unit/{rel.as_posix()}/: src/rocetune/{rel.as_posix()} is no package")
    modules = sorted(p.stem for p in src.glob("*.py") if not p.name.startswith("__"))
    top_level = re.compile(r"test_(?:%s)(?:_\w+)?\.py$" % "|".join(map(re.escape, modules)))
    for path in sorted(p for p in unit.iterdir() if p.is_file()):
        name = path.name
        if name in HELPERS or name in CROSS_CUTTING or top_level.match(name):
            continue
        problems.append(
            f"tests/unit/{name}: no module src/rocetune/{name.removeprefix('test_')}; "
            f"move it to tests/unit/<package>/ of the code it tests"
        )
    return problems


def test_every_unit_test_sits_where_its_code_is():
    assert misplaced(REPO / "tests" / "unit", REPO / "src" / "rocetune") == []


def test_the_named_exceptions_exist():
    unit = REPO / "tests" / "unit"
    assert [n for n in CROSS_CUTTING if not (unit / n).is_file()] == []
    assert [n for n in OTHER_FOLDERS if not (unit / n).is_dir()] == []


def test_a_misplaced_folder_or_file_is_named(tmp_path):
    src = tmp_path / "src"
    for package in ("probe", "probe/parsers", "switchos"):
        (src / package).mkdir(parents=True)
        (src / package / "__init__.py").write_text("")
    (src / "planner.py").write_text("")
    unit = tmp_path / "unit"
    for rel in (
        "probe/parsers/test_ok.py",
        "switchos/test_ok.py",
        "roles/fixtures/x.txt",
        "test_planner.py",
        "test_planner_order.py",
        "test_verb_layers.py",
        "parsers/test_ibstat.py",
        "switch/test_render.py",
        "test_sources_rdma.py",
        "test_plan.py",
    ):
        (unit / rel).parent.mkdir(parents=True, exist_ok=True)
        (unit / rel).write_text("")
    assert misplaced(unit, src) == [
        "tests/unit/parsers/: src/rocetune/parsers is no package",
        "tests/unit/switch/: src/rocetune/switch is no package",
        "tests/unit/test_plan.py: no module src/rocetune/plan.py; move it to tests/unit/<package>/ of the code it tests",
        "tests/unit/test_sources_rdma.py: no module src/rocetune/sources_rdma.py; "
        "move it to tests/unit/<package>/ of the code it tests",
    ]
