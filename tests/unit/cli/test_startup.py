"""A verb imports what it needs: `rocetune --json probe` neither imports the other verbs nor
the human renderer, and the parser it builds answers exactly as the whole one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocetune.cli.main import main, verb_in

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "pcie-4gpu-2nic"


@pytest.mark.parametrize("argv, verb", [
    (["probe"], "probe"),
    (["--root", "/x", "--json", "env", "--format", "sh"], "env"),
    (["--root", "probe", "topo"], "topo"),  # a root named like a verb is not the verb
    (["--ro", "probe", "topo"], "probe"),   # never an abbreviation of --root: main refuses --ro
    (["--r", "env", "topo"], "env"),
    (["--root=/x", "lint", "f.env"], "lint"),
    (["-v", "bogus"], None),
    (["--json"], None),
    (["--", "probe"], None),
])
def test_the_verb_is_found_before_parsing(argv, verb):
    assert verb_in(argv) == verb


def _modules_after(argv):
    code = ("import io, json, sys\n"
            "from rocetune.cli.main import main\n"
            "out, sys.stdout = sys.stdout, io.StringIO()\n"
            f"code = main({argv!r})\n"
            "sys.stdout = out\n"
            "print(json.dumps([code, sorted(sys.modules)]))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_probe_imports_neither_other_verbs_nor_the_human_renderer():
    code, modules = _modules_after(["--root", str(FIXTURE), "--json", "probe"])
    assert code in (0, 1)
    verbs = {m.rsplit(".", 1)[1] for m in modules if m.startswith("rocetune.cli.verbs.")}
    assert verbs == {"probe"}
    assert "rocetune.render.human" not in modules
    assert "rocetune.lint" not in modules and "rocetune.probe.capture" not in modules
    assert "rocetune.envfiles.dialects" not in modules  # --format's choices are asked for lazily
    # the types a probe builds are plain classes (rocetune.model.record): no dataclass machinery,
    # no inspect/ast/dis it brings in, no pkgutil listing the registries
    assert not {"dataclasses", "inspect", "ast", "pkgutil"} & set(modules)


def test_the_whole_parser_still_answers_help_and_errors(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    listed = capsys.readouterr().out
    for verb in ("probe", "env", "topo", "capture", "explain", "lint", "qos", "fleet"):
        assert f"    {verb}" in listed
    assert main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus' (choose from 'probe', 'env', 'doctor', 'topo', 'capture', 'explain', 'lint', 'qos', 'fleet')" in err


@pytest.mark.parametrize("argv", [
    ["probe", "--bogus"],
    ["env", "--format", "nope"],
    ["--root", str(FIXTURE), "--json", "probe", "extra"],
    ["--root", str(FIXTURE), "--ro", "probe", "--json", "env"],
    ["lint"],
])
def test_the_one_verb_parser_answers_as_the_whole_one(argv, capsys, monkeypatch):
    code = main(argv)
    one_verb = capsys.readouterr()
    monkeypatch.setattr("rocetune.cli.main.verb_in", lambda _argv: None)
    assert main(argv) == code
    assert capsys.readouterr() == one_verb


def test_version_answers_without_any_verb(capsys):
    code, modules = _modules_after(["--version"])
    assert code == 0
    assert not [m for m in modules if m.startswith("rocetune.cli.verbs.")]
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"rocetune {__import__('rocetune').__version__}\n"


def test_a_reader_that_goes_away_is_exit_4_without_a_traceback():
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "rocetune", "--root", str(FIXTURE), "--json", "probe"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # before the probe writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 4
    assert "Traceback" not in err, err


@pytest.mark.parametrize("argv, says", [
    (["--root", str(FIXTURE), "doctor", "--sav"], "unrecognized arguments: --sav (did you mean --save-baseline?)"),
    (["--ro", str(FIXTURE), "probe"], "unrecognized arguments: --ro (did you mean --root?)"),
    (["--root", str(FIXTURE), "doctr"], "invalid choice: 'doctr'"),
    (["--root", str(FIXTURE), "env", "--fomat", "sh"], "(did you mean --format?)"),
    (["qos", "rendr"], "(did you mean render?)"),
    (["fleet", "report", "--jsn", "d"], "(did you mean --json?)"),
])
def test_long_options_are_never_abbreviated_and_a_typo_gets_the_one_meant(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_every_parser_in_the_package_refuses_abbreviations():
    """The CLI, and every other command a user or a node runs: the boot units' scripts under
    plugins/ and the example jobs."""
    import re

    paths = [p for d in ("src/rocetune", "plugins", "roles", "examples") for p in (REPO / d).rglob("*.py")]
    assert any(p.name == "rocetune_pcie_p2p.py" for p in paths)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"argparse\.ArgumentParser\(", text):
            end = text.find("\n\n", m.start())
            call = text[m.start():end if end >= 0 else len(text)]
            assert "allow_abbrev=False" in call, f"{path}: argparse.ArgumentParser without allow_abbrev=False"
    from rocetune.cli.main import build_parser

    parser = build_parser()
    stack = [parser]
    while stack:
        p = stack.pop()
        assert p.allow_abbrev is False, p.prog
        for action in p._actions:
            if isinstance(action, __import__("argparse")._SubParsersAction):
                stack.extend(action.choices.values())
