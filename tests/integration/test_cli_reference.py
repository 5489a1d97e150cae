"""What a user reads of the command line: each verb's help (an example that parses, its exit
codes), the hint after a mistyped option, the reference in docs/cli.md, the man page and the
completions generated from the parser, the examples of docs/env-formats.md, and the pages the
wheel installs for what findings and explain cite."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rocetune.cli import main as cli
from rocetune.cli import verbs

from .clirun import rocetune

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"


def _verb_module(name: str):
    return next(m for m in cli._verb_modules() if name == m.NAME)


@pytest.mark.parametrize("verb", verbs.NAMES)
def test_each_verb_help_ends_with_an_example_that_parses_and_its_exit_codes(verb):
    proc = rocetune(verb, "--help", env=dict(os.environ, COLUMNS="100"))
    assert proc.returncode == 0, proc.stderr
    example = proc.stdout.split("\nexample:\n", 1)[1].split("\n\nexit codes:\n", 1)
    codes = [int(line.split()[0]) for line in example[1].splitlines() if line.strip()]
    assert {0, 2, 3, 4, 70} <= set(codes) and codes == sorted(codes)
    mod = _verb_module(verb)
    assert example[0].strip() == mod.EXAMPLE
    for command in mod.EXAMPLE.split("&&"):  # each command of the example is one the parser takes
        argv = shlex.split(command)
        assert argv[0] == "rocetune"
        cli.build_parser().parse_args(argv[1:])


def test_the_exit_codes_in_help_are_those_of_docs_cli_md():
    table = (REPO / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1].split("##", 1)[0]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)}
    said = set(cli.COMMON_EXIT_CODES)
    for mod in cli._verb_modules():
        said |= set(mod.EXIT_CODES)
    assert said == documented


@pytest.mark.parametrize("argv, help_of, meant", [
    (["probe", "--formt", "sh"], "rocetune probe --help", "--format"),
    (["--root", "/", "doctor", "--sav"], "rocetune doctor --help", "--save-baseline"),
    (["qos", "check", "--hostz", "d", "switch.json"], "rocetune qos check --help", "--hosts"),
    (["fleet", "report", "--manifst", "m.yml", "d"], "rocetune fleet report --help", "--manifest"),
])
def test_an_unknown_option_names_the_verbs_own_help_and_the_option_meant(argv, help_of, meant):
    proc = rocetune(*argv)
    assert proc.returncode == 2
    assert f"did you mean {meant}?" in proc.stderr
    assert f"hint: see '{help_of}'" in proc.stderr


def test_explain_of_a_lower_case_name_points_to_the_variable():
    proc = rocetune("--root", str(HOST), "-q", "explain", "nccl_ib_hca")
    assert proc.returncode == 0, proc.stderr
    assert "did you mean NCCL_IB_HCA? (variable names are case-sensitive" in proc.stdout


def test_explain_shows_a_value_as_a_shell_line_would_set_it():
    proc = rocetune("--root", str(HOST), "-q", "explain", "NCCL_IB_HCA")
    first = proc.stdout.splitlines()[0]
    assert first.startswith("NCCL_IB_HCA='=mlx5_0:1,") and "==" not in first
    assert "the the" not in proc.stdout


def test_the_reference_man_page_and_completions_are_what_the_parser_gives():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "cli_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_reference_has_every_verb_action_and_option():
    text = (REPO / "docs" / "cli.md").read_text()
    reference = text.split("## Reference", 1)[1]
    top = cli.build_parser()
    documented_once = {f for a in top._actions for f in a.option_strings} | {"-h", "--help"}
    for words, parser in _commands(top):
        section = reference.split(f"### {' '.join(words)}\n", 1)
        assert len(section) == 2, words
        body = section[1].split("\n### ", 1)[0]
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in body or flag == "--help" or (len(words) > 1 and flag in documented_once), \
                    (words, flag)
    assert "--hosts" in reference.split("### rocetune qos check\n", 1)[1].split("\n### ", 1)[0]


def _commands(p, words=("rocetune",)):
    import argparse

    yield words, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _commands(sub, words + (name,))


def _doc_commands(path: Path):
    """The `rocetune ...` lines of the fenced blocks of a page, without comments."""
    text = path.read_text()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("rocetune "):
                yield line


def test_the_examples_of_env_formats_run(tmp_path):
    features = tmp_path / "node.json"
    proc = rocetune("--root", str(HOST), "--json", "probe")
    features.write_text(proc.stdout)
    ran = 0
    for line in _doc_commands(REPO / "docs" / "env-formats.md"):
        argv = shlex.split(line)[1:]
        if ">" in argv:
            argv = argv[:argv.index(">")]
        # what the page writes to /etc goes to a scratch directory; node.json is a saved probe
        argv = [str(tmp_path / os.path.basename(a)) if a.startswith("/etc/") else
                str(features) if a == "node.json" else a for a in argv]
        proc = rocetune("--root", str(HOST), "-q", *argv)
        assert proc.returncode == 0, (line, proc.stderr)
        ran += 1
    assert ran >= 4


def test_slurm_without_scontrol_says_so_with_a_hint(tmp_path):
    env = dict(os.environ, SLURM_JOB_NODELIST="gpu[01-02]", PATH=str(tmp_path))
    proc = rocetune("fleet", "preflight", "--slurm", env=env)
    assert proc.returncode == 3
    assert "scontrol is not in PATH" in proc.stderr and "hint: " in proc.stderr
    assert "name the nodes" in proc.stderr


@pytest.mark.slow  # builds a wheel
def test_the_wheel_installs_every_cited_page_the_man_page_and_the_completions(tmp_path):
    """Findings cite docs/checks/ID.md and explain docs/rules/ID.md: the wheel installs them under
    share/doc/rocetune/ (pyproject.toml data-files)."""
    from rocetune.checks import all_checks
    from rocetune.rules import RULES

    src = tmp_path / "src"
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name if src.exists() else _mkdir(src) / name)
    for tree in ("src", "docs/checks", "docs/rules", "docs/man", "completions", "plugins/module_utils"):
        shutil.copytree(REPO / tree, src / tree, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("rocetune-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = {n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n}
    for check in all_checks():
        assert f"share/doc/rocetune/docs/checks/{check.id}.md" in data, check.id
    for rule in RULES:
        assert f"share/doc/rocetune/docs/rules/{rule.ID}.md" in data, rule.ID
    assert {"share/man/man1/rocetune.1", "share/bash-completion/completions/rocetune",
            "share/zsh/site-functions/_rocetune"} <= data


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path
