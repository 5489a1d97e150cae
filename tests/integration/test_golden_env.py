"""Golden env files for every fixture host, produced through the real CLI.

Refresh deliberately with `ROCETUNE_UPDATE_GOLDEN=1 pytest tests/integration/test_golden_env.py`
and review the diff; CI never rewrites them.
"""

import difflib
import os
import subprocess

import pytest

from tests.fixtures.roots import all_hosts, root_of
from tests.integration.clirun import rocetune

HERE = os.path.dirname(__file__)
GOLDEN = os.path.join(HERE, "golden")
HOSTS = all_hosts()
FORMATS = {"sh": "env.sh", "nccl-conf": "nccl.conf"}


def assert_golden(relpath: str, text: str) -> None:
    path = os.path.join(GOLDEN, relpath)
    if os.environ.get("ROCETUNE_UPDATE_GOLDEN") == "1" and not os.environ.get("CI"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    assert os.path.exists(path), f"no golden file {relpath}; create it with ROCETUNE_UPDATE_GOLDEN=1"
    with open(path) as fh:
        expected = fh.read()
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{relpath}", "now"))
        pytest.fail(f"{relpath} changed:\n{diff}")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("host", HOSTS)
def test_env_matches_golden(host, fmt):
    proc = rocetune("env", "--root", root_of(host), "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    assert_golden(f"{host}/{FORMATS[fmt]}", proc.stdout)


@pytest.mark.parametrize("host", HOSTS)
def test_sh_env_sources_cleanly_and_every_line_is_explained(host, tmp_path):
    env_file = tmp_path / "nccl.env"
    proc = rocetune("probe", "--root", root_of(host), "-o", str(env_file))
    assert proc.returncode == 0, proc.stderr
    names = [line.split("=", 1)[0][len("export "):] for line in env_file.read_text().splitlines()
             if line.startswith("export ")]
    assert names, "every host gets at least its socket interface"
    script = f"set -eu; source {env_file}; " + "; ".join(f'printf "%s=%s\\n" {n} "${n}"' for n in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, timeout=30).stdout
    got = dict(line.split("=", 1) for line in out.splitlines())
    explain = rocetune("explain", "--env", str(env_file))
    assert explain.returncode == 0, explain.stderr
    for name in names:
        assert got[name] != "" and name in explain.stdout
