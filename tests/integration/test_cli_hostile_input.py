"""The CLI on hostile input and broken output: a one-line `rocetune: error:` and the exit code of
docs/cli.md (3 bad input, 4 output that cannot be written), never a traceback or 70."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.fixtures.roots import root_of

from .clirun import no_traceback, rocetune

HOST = "pcie-4gpu-2nic"
DEEP = 200000
BIG = "9" * 5000
INPUT, OUTPUT = 3, 4


def _one_error(proc, code: int, *words: str) -> None:
    assert no_traceback(proc), proc.stderr
    assert proc.returncode == code, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("rocetune: error: ")]
    assert len(errors) == 1, proc.stderr
    for w in words:
        assert w in errors[0], proc.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    out = {
        "deep.json": "[" * DEEP + "]" * DEEP,
        "deepobj.json": '{"a":' * DEEP + "1" + "}" * DEEP,
        "bigint.json": '{"schema_version": ' + BIG + "}",
        "deep.yml": "[" * DEEP + "]" * DEEP,
        "deepmap.yml": "{a: " * DEEP + "1" + "}" * DEEP,
        "complex.yml": "? {a: 1}\n: 2\n",
        "listkey.yml": "{[a, b]: 1}\n",
        "bigint.yml": "traffic_class: " + BIG + "\n",
        "config.conf": f"NCCL_IB_TIMEOUT={BIG}\n",
        "nccl.log": (f"h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:{BIG}/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
                     f"h:1:1 [0] NCCL INFO comm 0x1 rank {BIG} nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"),
    }
    for name, text in out.items():
        (d / name).write_text(text)
    results = d / "results"
    results.mkdir()
    (results / "h1.json").write_text('{"schema": "x"}')
    return {name: str(d / name) for name in out} | {"results": str(results)}


@pytest.mark.parametrize("args, words", [
    (["env", "--features", "deep.json"], ["deep.json", "nested deeper than 100 levels"]),
    (["env", "--features", "deepobj.json"], ["nested deeper than 100 levels"]),
    (["env", "--features", "bigint.json"], ["4300 digits"]),
    (["topo", "--features", "deep.json"], ["nested deeper"]),
    (["explain", "--features", "deep.json"], ["nested deeper"]),
    (["lint", "--features", "deep.json", "config.conf"], ["nested deeper"]),
    (["env", "--qos", "deep.yml"], ["QoS plan", "nested deeper than 100 levels"]),
    (["env", "--qos", "deepmap.yml"], ["nested deeper than 100 levels"]),
    (["env", "--qos", "complex.yml"], ["line 1: a dict used as a key"]),
    (["lint", "--qos", "listkey.yml", "config.conf"], ["line 1: a list used as a key"]),
    (["env", "--qos", "bigint.yml"], ["an integer of 5000 characters"]),
    (["qos", "render", "--switch", "sonic", "--plan", "deep.yml"], ["nested deeper"]),
    (["fleet", "report", "results", "--manifest", "deep.yml"], ["--manifest", "nested deeper"]),
    (["fleet", "report", "results", "--manifest", "deep.json"], ["--manifest", "nested deeper"]),
    (["fleet", "report", "results", "--manifest", "complex.yml"], ["--manifest", "a dict used as a key"]),
    (["fleet", "report", "results", "--manifest", "bigint.yml"], ["--manifest", "5000 characters"]),
    (["env", "--config", "config.conf"], ["config.conf:1: NCCL_IB_TIMEOUT=", "0..31"]),
])
def test_hostile_input_files_are_input_errors(files, args, words):
    argv = [files.get(a, a) for a in args]
    _one_error(rocetune(*argv, "--root", root_of(HOST)), INPUT, *words)


def test_a_value_of_thousands_of_digits_is_checked_as_nccl_reads_it(files):
    proc = rocetune("env", "--root", root_of(HOST), "--set", f"NCCL_IB_TIMEOUT={BIG}")
    _one_error(proc, 2, "NCCL_IB_TIMEOUT=", "0..31")  # a bad --set is a usage error
    proc = rocetune("lint", files["config.conf"])
    assert proc.returncode == 1 and no_traceback(proc), proc.stderr
    assert "NCCL_IB_TIMEOUT" in proc.stdout and "FAIL  out-of-range" in proc.stdout


def test_json_and_yaml_env_files_nested_too_deep_are_findings(tmp_path):
    (tmp_path / "env.json").write_text('{"NCCL_DEBUG": ' + "[" * DEEP + "]" * DEEP + "}")
    (tmp_path / "cm.yaml").write_text("kind: ConfigMap\ndata: " + "[" * DEEP + "]" * DEEP + "\n")
    proc = rocetune("lint", str(tmp_path / "env.json"), str(tmp_path / "cm.yaml"))
    assert proc.returncode == 1 and no_traceback(proc), proc.stderr
    assert "json-invalid" in proc.stdout and "nested deeper" in proc.stdout
    assert "k8s-unreadable" in proc.stdout


def test_result_files_nested_too_deep_are_a_failed_host(tmp_path):
    (tmp_path / "h1.json").write_text("[" * DEEP + "]" * DEEP)
    proc = rocetune("fleet", "report", str(tmp_path))
    assert proc.returncode == 1 and no_traceback(proc), proc.stderr
    assert "nested deeper than 100 levels" in proc.stdout


def test_an_nccl_log_with_numbers_no_integer_holds_is_read_without_them(files):
    proc = rocetune("doctor", "--root", root_of(HOST), "--nccl-log", files["nccl.log"])
    assert no_traceback(proc) and proc.returncode != 70, proc.stderr
    assert "unexpected" not in proc.stderr


@pytest.fixture
def accented_host(tmp_path):
    root = tmp_path / "hôte"
    shutil.copytree(root_of(HOST), root, symlinks=True)
    return root


def _c_locale() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0")  # Python's UTF-8 mode off: stdout is ASCII
    return env


@pytest.mark.parametrize("args", [["probe"], ["--json", "probe"], ["env"]])
def test_non_ascii_output_in_an_ascii_locale_is_an_output_error(accented_host, args):
    (accented_host / "proc/sys/kernel/hostname").write_bytes("nœud-7\n".encode())
    proc = rocetune(*args, "--root", str(accented_host), env=_c_locale())
    _one_error(proc, OUTPUT, "cannot write to stdout", "ascii", "U+0153", "UTF-8")
    proc = rocetune(*args, "--root", str(accented_host))
    assert proc.returncode == 0 and "nœud-7" in proc.stdout, proc.stderr


def test_a_hostname_that_is_not_utf8_is_a_warning_in_any_locale(accented_host):
    (accented_host / "proc/sys/kernel/hostname").write_bytes(b"n\xffde-7\n")
    for env in (None, _c_locale()):
        proc = rocetune("probe", "--root", str(accented_host), env=env)
        assert proc.returncode == 0 and no_traceback(proc), proc.stderr
        assert "hostname: not UTF-8 text" in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["probe"], ["--json", "probe"], ["env"], ["explain"]])
def test_stdout_on_a_full_disk_is_an_output_error(args):
    proc = rocetune(*args, "--root", root_of(HOST), stdout_to="/dev/full")
    _one_error(proc, OUTPUT, "cannot write to stdout: No space left on device")
