"""The README's "rocetune on a host" commands, run as written (from a directory laid out like the
repository, its fixture hosts copies, with `.venv/bin/rocetune` being this checkout's rocetune
and the files it writes put under the test's own directory): each exits as a user would see it,
and says what the README says it does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## rocetune on a host\n") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.strip()]


def test_every_command_of_the_readme_host_block_runs(tmp_path):
    commands = _commands()
    assert commands[0].startswith("H=tests/fixtures/hosts/") and len(commands) >= 8
    shim = tmp_path / "rocetune"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m rocetune "$@"\n')
    shim.chmod(0o755)
    script = "set -e\n" + "\n".join(
        line.replace(".venv/bin/rocetune", str(shim))
        .replace("/tmp/nccl.env", str(tmp_path / "nccl.env"))
        .replace("-o host.tar.gz", f"-o {tmp_path / 'host.tar.gz'}")
        + f' > {tmp_path / f"out{i}.txt"} 2>&1 || echo "exit $? of line {i}" >> {tmp_path / "codes"}'
        if i
        else line
        for i, line in enumerate(commands)
    )
    # From a directory laid out like the repository whose fixture hosts are copies: doctor keeps
    # its counter readings under the root it judges, and the checkout's fixtures stay as they are.
    here = tmp_path / "repo"
    for entry in REPO.iterdir():
        if entry.name not in (".git", "tests"):
            (here / entry.name).parent.mkdir(parents=True, exist_ok=True)
            (here / entry.name).symlink_to(entry)
    (here / "tests/fixtures").mkdir(parents=True)
    (here / "tests/fixtures/nccl-logs").symlink_to(REPO / "tests/fixtures/nccl-logs")
    for host in sorted(set(re.findall(r"tests/fixtures/hosts/([\w.-]+)", " ".join(commands)))):
        shutil.copytree(REPO / "tests/fixtures/hosts" / host, here / "tests/fixtures/hosts" / host, symlinks=True)
    proc = subprocess.run(
        ["sh", "-c", script],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
    )
    assert proc.returncode == 0, proc.stderr
    codes = (tmp_path / "codes").read_text().splitlines() if (tmp_path / "codes").exists() else []
    outs = {i: (tmp_path / f"out{i}.txt").read_text() for i in range(1, len(commands))}
    verb = {i: re.search(r"rocetune (\w+)", commands[i]).group(1) for i in outs}
    # doctor answers 0, 1 (a failure, or a log that differs from the plan) or 5 (warnings alone);
    # every other line exits 0
    for code in codes:
        status, line = int(code.split()[1]), int(code.split()[-1])
        assert verb[line] == "doctor" and status in (1, 5), (commands[line], status, outs[line][-800:])
    assert "Traceback" not in "".join(outs.values())
    first = {v: i for i, v in sorted(verb.items(), reverse=True)}
    assert "NCCL_IB_HCA" in outs[first["env"]] and "rule:" in outs[first["explain"]]
    assert (tmp_path / "nccl.env").exists() and (tmp_path / "host.tar.gz").exists()
