"""State files under a root, and the files an operator names, are read and written as inputs
are: the refusal record through the replay root (a link on its path never leads out of it),
nothing but a regular file read, nothing ever blocks on a FIFO."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rocetune.envfiles import degrade

RECORD = degrade.RECORD_PATH.lstrip("/")


def outside_record(tmp_path):
    """A root whose /var is a link to a directory outside it that holds a record."""
    outside = tmp_path / "outside"
    (outside / "lib" / "rocetune").mkdir(parents=True)
    victim = outside / "lib" / "rocetune" / "env-refused.json"
    victim.write_text(json.dumps({"schema": degrade.RECORD_SCHEMA, "reasons": ["x"], "files": []}))
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(str(outside), root / "var")
    return root, victim


def test_clearing_the_record_never_removes_a_file_outside_the_root(tmp_path):
    root, victim = outside_record(tmp_path)
    assert degrade.clear_record(str(root), ["/etc/rocetune/nccl.env"]) is False
    assert victim.exists()


def test_the_record_is_written_inside_the_root(tmp_path):
    root, victim = outside_record(tmp_path)
    before = victim.read_text()
    target = degrade.save_record(str(root), ["short"], ["/etc/rocetune/nccl.env"])
    assert victim.read_text() == before
    # the link's absolute target is taken inside the root
    assert target == str(root) + str(tmp_path / "outside" / "lib" / "rocetune" / "env-refused.json")
    with open(target) as fh:
        assert json.loads(fh.read())["reasons"] == ["short"]


def run_py(code: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_a_fifo_in_place_of_the_record_is_refused_without_blocking(tmp_path):
    root = tmp_path / "root"
    (root / os.path.dirname(RECORD)).mkdir(parents=True)
    os.mkfifo(root / RECORD)
    try:
        done = run_py(f"""
            from rocetune.envfiles import degrade
            from rocetune.errors import RocetuneError
            for call in (lambda: degrade.clear_record({str(root)!r}, ["/etc/rocetune/nccl.env"]),
                         lambda: degrade.save_record({str(root)!r}, ["short"], ["/etc/rocetune/nccl.env"])):
                try:
                    call()
                except RocetuneError as exc:
                    print(exc.message, exc.code)
            """)
    except subprocess.TimeoutExpired:
        pytest.fail("the refusal record's reader blocked on a FIFO")
    cleared, saved = done.stdout.splitlines()
    assert cleared.endswith("is a FIFO, not a regular file: not read, not removed 4")
    assert "FIFO" in saved and saved.endswith(" 4")
    assert (root / RECORD).is_fifo()


@pytest.mark.parametrize("module, option", [("rocetune.model.expect", "--expect"),
                                            ("rocetune.model.check_config", "--doctor-config")])
def test_expect_and_doctor_config_refuse_a_fifo(tmp_path, module, option):
    fifo = tmp_path / "f.yml"
    os.mkfifo(fifo)
    try:
        done = run_py(f"""
            from {module} import load_file
            from rocetune.errors import RocetuneError
            try:
                load_file({str(fifo)!r})
            except RocetuneError as exc:
                print(exc.message, exc.code)
            """, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{option} blocked on a FIFO")
    assert done.stdout == f"{option} {fifo}: cannot read: a FIFO, not a regular file 3\n"
