#!/usr/bin/env python3
"""Build the collection rocetune.fabric as it ships: the node agent packed, not its sources.

    python3 tools/build_collection.py --output-path DIR     # prints the tarball's path

The repository root is the collection (galaxy.yml). The built tarball carries the agent as one
packed file, roles/rocetune_agent/files/rocetune-agent.pyz (rocetune.agentpack: deterministic,
the agent and pure-Python PyYAML), which the rocetune_agent role installs as it is; src/ stays
out. So the installed collection holds only what Ansible loads and that one artifact, and
ansible-lint and `ansible-test sanity` pass on it as installed, src/ included in nothing they
read. A plain `ansible-galaxy collection build` of the checkout still carries src/ (the role then
packs the agent from it on the controller): what a developer's checkout does.

It copies the checkout's files (those git tracks, and untracked ones it does not ignore) to a
temporary directory, packs the agent there, removes src/, and runs `ansible-galaxy collection
build` on the copy (galaxy.yml's build_ignore applies as usual).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = Path("roles") / "rocetune_agent" / "files" / "rocetune-agent.pyz"


class BuildError(Exception):
    """One line: what failed."""


def _run(argv, **kw) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise BuildError(f"{' '.join(str(a) for a in argv[:4])}: {said[0]}")
    return proc.stdout


# Outside a git tree (a copy of a checkout): what is never part of the collection, at the top.
NOT_SOURCES = {
    ".git",
    ".venv",
    "artifacts",
    "build",
    "dist",
    "collections",
    ".ruff_cache",
    ".mypy_cache",
    ".pytest_cache",
    ".hypothesis",
}


def checkout_files(repo: Path) -> list:
    """The checkout's files, relative: those git tracks and untracked ones it does not ignore;
    outside a git tree every file but NOT_SOURCES and bytecode."""
    try:
        out = _run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        names = [f for f in out.split("\0") if f]
    except (BuildError, OSError):
        names = [
            str(p.relative_to(repo))
            for p in repo.rglob("*")
            if p.relative_to(repo).parts[0] not in NOT_SOURCES and "__pycache__" not in p.parts
        ]
    return sorted({f for f in names if (repo / f).is_file() and not (repo / f).is_symlink()})


def stage(repo: Path, into: Path) -> None:
    for rel in checkout_files(repo):
        dest = into / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, dest)


def pack_agent(repo: Path, into: Path, work: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo / "src"))
    packed = json.loads(_run([sys.executable, "-m", "rocetune.agentpack", "--out-dir", str(work)], env=env))
    target = into / SHIPPED
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(packed["path"], target)
    return packed


def build(output: Path, repo: Path = REPO, galaxy: str = "") -> Path:
    galaxy = galaxy or shutil.which("ansible-galaxy") or str(Path(sys.executable).parent / "ansible-galaxy")
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rocetune-collection-") as tmp:
        staged, work = Path(tmp) / "fabric", Path(tmp) / "agent"
        stage(repo, staged)
        pack_agent(repo, staged, work)
        shutil.rmtree(staged / "src")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        _run(
            [galaxy, "collection", "build", "--force", "--output-path", str(output.resolve()), str(staged)],
            cwd=tmp,
            env=env,
        )
    tarballs = sorted(output.glob("rocetune-fabric-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    if not tarballs:
        raise BuildError(f"ansible-galaxy wrote no tarball into {output}")
    return tarballs[-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-path", type=Path, default=Path("."), help="where the tarball goes")
    args = parser.parse_args(argv)
    try:
        print(build(args.output_path))
    except (BuildError, OSError, ValueError) as exc:
        print(f"build_collection: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
