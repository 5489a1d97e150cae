"""Helpers for the site.yml tests on the lab: run ansible-playbook with bounded time, read its
PLAY RECAP, and build small extra inventories (groups, a down host, a wrong host key)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PLAYBOOK_TIMEOUT = 420  # seconds: a converge of 16 hosts takes about a minute on 2 cores
CONNECT_TIMEOUT = 10  # ssh ConnectTimeout for every Ansible connection in these tests

RECAP_RE = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                      r"\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)", re.M)



def tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else name


def ansible_env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_TIMEOUT": str(CONNECT_TIMEOUT),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "PYTHONWARNINGS": "ignore",
    })
    env.update(extra)
    return env


@dataclasses.dataclass
class PlaybookRun:
    argv: List[str]
    rc: int
    output: str
    seconds: float
    recap: Dict[str, Dict[str, int]]

    def total(self, key: str) -> int:
        return sum(h[key] for h in self.recap.values())

    def explain(self) -> str:
        return f"$ {' '.join(self.argv)}\nrc={self.rc} in {self.seconds:.1f}s\n{self.output[-8000:]}"


def parse_recap(output: str) -> Dict[str, Dict[str, int]]:
    keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
    tail = output[output.rfind("PLAY RECAP"):] if "PLAY RECAP" in output else ""
    return {m.group(1): dict(zip(keys, map(int, m.groups()[1:]))) for m in RECAP_RE.finditer(tail)}


def inventory_args(inventory: Path, tmp_dir: Path, extra: Sequence[str] = ()) -> List[str]:
    args = ["-i", str(inventory)]
    for path in extra:
        args += ["-i", str(path)]
    return args


def run_playbook(inventory: Path, tmp_dir: Path, *args: str, playbook: str = "site.yml",
                 extra_inventories: Sequence[Path] = (), timeout: float = PLAYBOOK_TIMEOUT,
                 env: Optional[Dict[str, str]] = None) -> PlaybookRun:
    argv = [tool("ansible-playbook"), *inventory_args(inventory, tmp_dir, [str(p) for p in extra_inventories]),
            playbook, *args]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, env=env or ansible_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return PlaybookRun(argv, proc.returncode, proc.stdout, time.monotonic() - start, parse_recap(proc.stdout))


def parse_env_file(text: str) -> Dict[str, str]:
    """`export K='v'` lines -> {K: v} (the values as the shell would see them)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out[m.group(1)] = value
    return out
