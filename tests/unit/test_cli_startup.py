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

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "pcie-4gpu-2nic"


@pytest.mark.parametrize("argv, verb", [
    (["probe"], "probe"),
    (["--root", "/x", "--json", "env", "--format", "sh"], "env"),
    (["--root", "probe", "topo"], "topo"),  # a root named like a verb is not the verb
    (["--ro", "probe", "topo"], "topo"),    # argparse's abbreviations of --root
    (["--r", "env", "topo"], "topo"),
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
