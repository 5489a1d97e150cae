"""The contributor's contract, held by the test suite as well as by pre-commit: ruff and mypy
are clean with the settings in pyproject.toml, and the pre-commit hooks pin the versions the
`dev` extra installs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    proc = _run(str(BIN / "ruff"), "check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.slow  # half a minute on two cores without its cache
def test_mypy_is_clean():
    proc = _run(sys.executable, "-m", "mypy", "--cache-dir", "/dev/null")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _installed(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def test_pre_commit_pins_the_tools_the_dev_extra_installs():
    hooks = {h["id"]: h for repo in yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"]
             for h in repo["hooks"]}
    assert {"ruff", "mypy", "check-yaml", "end-of-file-fixer", "trailing-whitespace", "ansible-lint"} <= set(hooks)
    for hook, tool in (("ruff", "ruff"), ("mypy", "mypy")):
        pins = [d for d in hooks[hook]["additional_dependencies"] if d.startswith(f"{tool}==")]
        assert pins == [f"{tool}=={_installed(tool)}"], (hook, pins)


def test_the_package_and_the_collection_carry_one_version():
    """One version, MAJOR.MINOR.PATCH, written in src/rocetune/__init__.py and galaxy.yml alike
    (CONTRIBUTING.md: Versions and releases); a release tags it vX.Y.Z."""
    import re

    from rocetune import __version__

    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__
    assert galaxy == __version__
    assert "vX.Y.Z" in (REPO / "CONTRIBUTING.md").read_text()
