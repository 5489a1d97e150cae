"""Nodes run Python 3.9 (EL9): the probe and the planner must run there, not only on the dev Python."""

import glob
import os
import shutil
import subprocess

import pytest

REPO = os.path.join(os.path.dirname(__file__), "..", "..")


def _python39():
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3")))
    candidates += [p for p in (shutil.which("python3.9"),) if p]
    for path in candidates:
        try:
            ok = subprocess.run([path, "-c", "import sys; assert sys.version_info[:2] == (3, 9)"],
                                capture_output=True, timeout=30).returncode == 0
        except OSError:
            ok = False
        if ok:
            return path
    return None


@pytest.mark.skipif(_python39() is None, reason="no Python 3.9 on this machine")
def test_probe_and_plan_run_on_python_39(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    root = os.path.join(REPO, "tests", "fixtures", "hosts", "oci-a100-v2")
    out = tmp_path / "nccl.env"
    proc = subprocess.run([_python39(), "-m", "rocetune", "probe", "--root", root, "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "export NCCL_IB_HCA=" in out.read_text()
