#!/usr/bin/env python3
"""Controller-side helper of the rocetune_agent role (also behind scripts/build-wheelhouse.sh).

  build --source DIR --out DIR [--target 3.9-x86_64 ...]
      Build rocetune's wheel from a checkout and download its runtime dependencies (and pip) as
      binary wheels for each target Python/architecture, then pack them into one deterministic
      archive, OUT/rocetune-wheelhouse.tar, that nodes install from with `pip --no-index`.
      Keyed on the content of the sources and the target list: when nothing changed it does
      nothing (and says so), so it is cheap to call on every playbook run.

  pack SRC OUT
      Pack a directory tree (a fixture host root: sysfs trees full of symlinks) into a
      deterministic tar. OUT is only rewritten when its bytes would change.

Both print one JSON line: {"changed": bool, ...}. Errors: one line on stderr, exit 1.
Runs on the controller only (Python 3.9+, standard library and pip).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from typing import Dict, Iterator, List, Optional, Tuple

ARCHIVE = "rocetune-wheelhouse.tar"
KEY_FILE = ".build-key"
EPOCH = 315532800  # 1980-01-01: the earliest date a zip (wheel) can hold
# What goes into rocetune's wheel; anything else in the checkout does not change it.
SOURCE_PATHS = ("pyproject.toml", "setup.cfg", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "src")
SKIP_DIRS = {"__pycache__", ".mypy_cache", ".pytest_cache"}
TARGET_RE = re.compile(r"^(?P<py>3\.\d{1,2})-(?P<arch>x86_64|aarch64|ppc64le|s390x)$")


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Deterministic tar


def _tar_info(name: str, st: os.stat_result, kind: str, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    elif kind == "link":
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, link, 0o777
    else:
        info.type, info.size = tarfile.REGTYPE, st.st_size
        info.mode = 0o755 if st.st_mode & 0o111 else 0o644
    return info


def _walk(root: str) -> Iterator[Tuple[str, str]]:
    """(relative path, kind) for everything under root, sorted, symlinks not followed."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root)
        entries = []
        for d in list(dirnames):
            full = os.path.join(dirpath, d)
            if os.path.islink(full):  # a symlink to a directory: keep it as a link, don't descend
                dirnames.remove(d)
                entries.append((d, "link"))
            else:
                entries.append((d, "dir"))
        for f in filenames:
            full = os.path.join(dirpath, f)
            if os.path.islink(full):
                entries.append((f, "link"))
            elif os.path.isfile(full):
                entries.append((f, "file"))
            # sockets, fifos, devices: not part of a host root snapshot
        for name, kind in sorted(entries):
            yield (name if rel_dir == "." else os.path.join(rel_dir, name)), kind


def tar_bytes(root: str, names: Optional[List[str]] = None) -> bytes:
    """A tar of root (or of the listed top-level files in it) that depends only on content."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        items = [(n, "file") for n in sorted(names)] if names is not None else _walk(root)
        for rel, kind in items:
            full = os.path.join(root, rel)
            st = os.lstat(full)
            if kind == "link":
                tar.addfile(_tar_info(rel, st, "link", os.readlink(full)))
            elif kind == "dir":
                tar.addfile(_tar_info(rel, st, "dir"))
            else:
                with open(full, "rb") as fh:
                    tar.addfile(_tar_info(rel, st, "file"), fh)
    return buf.getvalue()


def write_if_changed(path: str, data: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read() == data:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def cmd_pack(args: argparse.Namespace) -> Dict:
    if not os.path.isdir(args.src):
        raise Failure(f"{args.src}: not a directory (rocetune_agent_probe_root must be a host root "
                      f"on the controller, e.g. tests/fixtures/hosts/dgx-h100-roce)")
    data = tar_bytes(args.src)
    changed = write_if_changed(args.out, data)
    return {"changed": changed, "archive": os.path.abspath(args.out),
            "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


# ---------------------------------------------------------------------------------------------
# Wheelhouse


def _source_key(source: str, targets: List[str]) -> str:
    h = hashlib.sha256()
    h.update(("targets=" + ",".join(targets) + "\n").encode())
    for top in SOURCE_PATHS:
        full = os.path.join(source, top)
        if os.path.isfile(full):
            files = [top]
        elif os.path.isdir(full):
            files = []
            for dirpath, dirnames, filenames in os.walk(full):
                dirnames[:] = sorted(d for d in dirnames
                                     if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                for f in sorted(filenames):
                    # Editors' and atomic writers' temp files (.name.tmp) are not sources.
                    if not f.endswith((".pyc", ".pyo")) and not f.startswith("."):
                        files.append(os.path.relpath(os.path.join(dirpath, f), source))
        else:
            continue
        for rel in files:
            try:
                with open(os.path.join(source, rel), "rb") as fh:
                    digest = hashlib.sha256(fh.read()).digest()
            except FileNotFoundError:  # deleted while we walked: it is not part of the build
                continue
            h.update(rel.encode() + b"\0" + digest)
    return h.hexdigest()


def _pip(python: str, argv: List[str], what: str) -> None:
    cmd = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"] + argv
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip() and "WARNING: Location" not in ln]
        tail = " | ".join(lines[-3:])
        raise Failure(f"{what} failed (pip exit {proc.returncode}): {tail}")


def _build_wheel(python: str, source: str, dest: str) -> str:
    """Build rocetune's wheel from a clean copy of the sources (no stale build/ directory)."""
    with tempfile.TemporaryDirectory(prefix="rocetune-src-") as tmp:
        for top in SOURCE_PATHS:
            full = os.path.join(source, top)
            if os.path.isfile(full):
                shutil.copy2(full, os.path.join(tmp, top))
            elif os.path.isdir(full):
                shutil.copytree(full, os.path.join(tmp, top), symlinks=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*"))
        if not os.path.isfile(os.path.join(tmp, "pyproject.toml")):
            raise Failure(f"{source}: no pyproject.toml (rocetune_agent_source_dir must be a rocetune checkout)")
        env_isolation = []
        try:
            subprocess.run([python, "-c", "import setuptools"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            env_isolation = ["--no-build-isolation"]  # offline-friendly: setuptools is already here
        except subprocess.CalledProcessError:
            pass
        os.environ["SOURCE_DATE_EPOCH"] = str(EPOCH)  # reproducible zip timestamps
        _pip(python, ["wheel", "--no-deps", "--quiet", *env_isolation, "-w", dest, tmp],
             "building rocetune's wheel")
    wheels = [f for f in os.listdir(dest) if f.startswith("rocetune-") and f.endswith(".whl")]
    if len(wheels) != 1:
        raise Failure(f"expected one rocetune wheel, got {wheels}")
    return wheels[0]


def _target_args(target: str) -> List[str]:
    m = TARGET_RE.match(target)
    if not m:
        raise Failure(f"wheelhouse target {target!r}: expected PYTHON-ARCH, e.g. 3.9-x86_64 or 3.12-aarch64")
    py, arch = m.group("py"), m.group("arch")
    abi = "cp" + py.replace(".", "")
    return ["--python-version", py, "--implementation", "cp", "--abi", abi, "--abi", "abi3",
            "--abi", "none", "--platform", f"manylinux2014_{arch}", "--platform", "any"]


def cmd_build(args: argparse.Namespace) -> Dict:
    source = os.path.abspath(args.source)
    out = os.path.abspath(args.out)
    targets = sorted(set(args.target or []))
    for t in targets:
        _target_args(t)  # validate early
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two playbooks at once build it once
        key = _source_key(source, targets)
        archive = os.path.join(out, ARCHIVE)
        try:
            with open(os.path.join(out, KEY_FILE)) as fh:
                old = json.load(fh)
        except (OSError, ValueError):
            old = {}
        if old.get("key") == key and os.path.isfile(archive):
            return {"changed": False, "archive": archive, "version": old.get("version"),
                    "wheels": old.get("wheels", []), "targets": targets or ["controller"]}
        with tempfile.TemporaryDirectory(prefix="rocetune-wheelhouse-") as tmp:
            wheel = _build_wheel(args.python, source, tmp)
            version = wheel.split("-")[1]
            requirement = [f"rocetune=={version}", "pip"]
            base = ["download", "--quiet", "--only-binary=:all:", "--find-links", tmp, "-d", tmp]
            for target in targets or [None]:
                extra = _target_args(target) if target else []
                _pip(args.python, base + extra + requirement,
                     f"downloading rocetune's dependencies for {target or 'the controller Python'}")
            wheels = sorted(f for f in os.listdir(tmp) if f.endswith(".whl"))
            data = tar_bytes(tmp, wheels)
            # Refresh the loose wheels too (handy for a manual `pip install --find-links`).
            for f in os.listdir(out):
                if f.endswith(".whl") and f not in wheels:
                    os.unlink(os.path.join(out, f))
            for f in wheels:
                shutil.copyfile(os.path.join(tmp, f), os.path.join(out, f))
        changed = write_if_changed(archive, data)
        write_if_changed(os.path.join(out, KEY_FILE),
                         (json.dumps({"key": key, "version": version, "wheels": wheels},
                                     indent=1, sort_keys=True) + "\n").encode())
        return {"changed": changed, "archive": archive, "version": version, "wheels": wheels,
                "targets": targets or ["controller"]}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="rocetune_wheelhouse", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the offline wheelhouse")
    b.add_argument("--source", required=True, help="rocetune checkout (has pyproject.toml)")
    b.add_argument("--out", required=True, help="wheelhouse directory")
    b.add_argument("--target", action="append", metavar="PY-ARCH",
                   help="node Python and arch to download wheels for, e.g. 3.9-x86_64 "
                        "(repeat; default: the Python running this script)")
    b.add_argument("--python", default=sys.executable, help="Python whose pip builds and downloads")
    k = sub.add_parser("pack", help="pack a host root into a deterministic tar")
    k.add_argument("src")
    k.add_argument("out")
    args = p.parse_args(argv)
    try:
        result = cmd_build(args) if args.cmd == "build" else cmd_pack(args)
    except Failure as exc:
        sys.stderr.write(f"rocetune_wheelhouse: error: {exc}\n")
        return 1
    result["controller"] = f"{platform.python_version()}-{platform.machine()}"
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
