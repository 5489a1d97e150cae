"""The CLI contract: exit codes, the JSON envelope, one-line errors, --debug."""

import json

import pytest

from rocetune import __version__
from rocetune.cli import main as cli_main
from rocetune.errors import ExitCode
from tests.integration.clirun import no_traceback, rocetune, rocetune_json


def test_version():
    proc = rocetune("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"rocetune {__version__}"


@pytest.mark.parametrize("args,code,needle", [
    (["probe", "--bogus"], ExitCode.USAGE, "unrecognized arguments"),
    (["nosuchverb"], ExitCode.USAGE, "invalid choice"),
    (["probe", "--root", "/definitely/not/here"], ExitCode.INPUT, "not a directory"),
    (["topo", "--features", "/definitely/not/here.json"], ExitCode.INPUT, "cannot read features file"),
    (["capture", "-o", "/definitely/not/here/x.tar.gz", "--root", "/tmp"], ExitCode.OUTPUT, "cannot write"),
])
def test_errors_are_one_line_with_the_documented_code(args, code, needle):
    proc = rocetune(*args)
    assert proc.returncode == code
    assert no_traceback(proc)
    first = proc.stderr.splitlines()[0]
    assert first.startswith("rocetune: error: ") and needle in first


def test_json_mode_prints_an_error_envelope():
    code, env = rocetune_json("probe", "--root", "/definitely/not/here")
    assert code == ExitCode.INPUT
    assert env["status"] == "error" and env["exit_code"] == int(ExitCode.INPUT)
    assert env["errors"][0]["message"].endswith("not a directory")
    assert env["schema"] == "rocetune.result/1"


def test_global_options_work_after_the_verb_too(tmp_path):
    code, env = rocetune_json("topo", "--features", str(tmp_path / "missing.json"))
    assert code == ExitCode.INPUT and env["command"] == "topo"


def test_features_file_with_wrong_schema_is_refused(tmp_path):
    bad = tmp_path / "f.json"
    bad.write_text(json.dumps({"schema_version": 99}))
    proc = rocetune("topo", "--features", str(bad))
    assert proc.returncode == ExitCode.INPUT and "schema_version 99" in proc.stderr


def test_unexpected_errors_have_no_traceback_unless_debug(monkeypatch, capsys):
    def boom(*a, **k):
        raise KeyError("surprise")

    monkeypatch.setattr("rocetune.app.inputs.collect_features", boom)
    assert cli_main.main(["probe"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected KeyError" in err and "--debug" in err
    assert cli_main.main(["probe", "--debug"]) == ExitCode.INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_plain_machine_says_plainly_there_is_nothing_to_tune(tmp_path):
    # A sysfs with nothing in it: no PCI, no GPU, no RDMA. The probe still answers, with reasons.
    (tmp_path / "sys" / "class").mkdir(parents=True)
    code, env = rocetune_json("probe", "--root", str(tmp_path))
    assert code == 0
    f = env["data"]["features"]
    assert f["sources"]["pci"]["ok"] is False and "no PCI devices" in f["sources"]["pci"]["reason"]
    assert "findings" not in f  # findings are not facts: the envelope carries them
    assert {x["id"] for x in env["data"]["findings"]} >= {"no-nvidia-gpu", "no-rdma-device"}
    for x in env["data"]["findings"]:  # each with its check's fix and source, and what was read
        assert x["fix"] and x["source"] and x["kind"] in ("host", "rule") and x.get("evidence"), x
    human = rocetune("probe", "--root", str(tmp_path))
    assert "no NVIDIA GPU and no RDMA device" in human.stdout
