"""Run the real CLI in a subprocess, the way a user does."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import List, Optional, Tuple


def rocetune(*args: str, check: bool = False, env=None, stdout_to: Optional[str] = None) -> subprocess.CompletedProcess:
    """The CLI's exit code and output; with `stdout_to`, stdout goes to that file (a device such
    as /dev/full) and the result's stdout is empty."""
    if stdout_to is None:
        proc = subprocess.run([sys.executable, "-m", "rocetune", *args], capture_output=True, text=True,
                              timeout=120, env=env)
    else:
        with open(stdout_to, "w") as out:
            proc = subprocess.run([sys.executable, "-m", "rocetune", *args], stdout=out,
                                  stderr=subprocess.PIPE, text=True, timeout=120, env=env)
        proc.stdout = ""
    if check and proc.returncode != 0:
        raise AssertionError(f"rocetune {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def rocetune_json(*args: str) -> Tuple[int, dict]:
    proc = rocetune("--json", *args)
    return proc.returncode, json.loads(proc.stdout)


def features_of(root: str) -> dict:
    code, env = rocetune_json("probe", "--root", root)
    assert code == 0, env["errors"]
    return env["data"]["features"]


def no_traceback(proc: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if line.strip()]
