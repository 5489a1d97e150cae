"""The CLI against what others control: directories other users own, bytes a node or a file
supplies for the terminal, inputs that are not regular files, documents made to exhaust memory.
One line on stderr with the documented exit code, never a hang, never a raw control byte."""

from __future__ import annotations

import os

import pytest

from .clirun import no_traceback, rocetune

USER = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="what root writes: needs root")


def _dir(tmp_path, name: str, mode: int, uid: int = 0):
    d = tmp_path / name
    d.mkdir()
    os.chown(d, uid, 0)
    os.chmod(d, mode)
    return d


@root_only
def test_gather_out_into_another_users_directory_is_refused_before_any_host(tmp_path):
    theirs = _dir(tmp_path, "theirs", 0o755, uid=USER)
    for out in (theirs, theirs / "new"):
        proc = rocetune("fleet", "gather", "-o", str(out), "127.0.0.1", "--port", "9", "--timeout", "2")
        assert proc.returncode == 4 and no_traceback(proc), proc.stderr
        assert proc.stderr.startswith(f"rocetune: error: cannot write {out}"), proc.stderr
        assert f"belongs to uid {USER}" in proc.stderr
    assert os.listdir(theirs) == []
