"""Pack the node agent: rocetune and pure-Python PyYAML in one zip that the node's own python3
(3.9 or newer) runs, seeing the distribution's pyverbs. Nothing is installed with pip on a node.

    python3 -m rocetune.agentpack --out-dir DIR      # prints {"path", "sha256", "changed"}
    python3 -m rocetune.agentpack --out-dir DIR --python /usr/bin/python3   # that shebang

The archive starts with a shebang line (`#!/usr/bin/env python3` unless --python names the
node's interpreter), so the file itself runs as a command. The rocetune_agent role does not
run it as is: zipimport uses no __pycache__, so every start would compile every module from
source. So the archive carries each module's bytecode, compiled by the Python that packed it,
next to its source (`NAME.pyc`, where zipimport looks), stored uncompressed and hash-based
unchecked (a start reads neither inflated bytecode nor the source: the archive is sealed by its
sha256, and nothing edits it in place). A node whose Python takes that bytecode runs the archive
as it is, as fast as from a compiled tree; any other node unpacks it and compiles it with its
own Python (plugins/module_utils/rocetune_agent_tree.py).

The archive is deterministic (sorted entries, fixed timestamps and modes, bytecode compiled with
a fixed hash seed), so the same sources give the same bytes and Ansible copies it only when it
really changed. Its name carries the version and the first 12 hex digits of its sha256. A pack
whose inputs (sources, shebang, the packing Python) are those of an archive already in the
output directory returns that archive without building it again.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from typing import Iterator, List, Optional, Sequence, Tuple

_EPOCH = (1980, 1, 1, 0, 0, 0)
_SHEBANG = b"#!/usr/bin/env python3\n"
_MAIN = b"""import sys

if sys.version_info < (3, 9):
    sys.exit("rocetune: error: needs Python 3.9 or newer, this is %d.%d" % sys.version_info[:2])
from rocetune.cli.main import main

sys.exit(main())
"""
_KEEP = (".py", ".json")  # modules and their package data (nccl/data, model/data)
# Bumped when what the archive holds changes for the same sources (the pack cache's key).
_FORMAT = 2
# Run by the packing Python in a child with a fixed hash seed: a set constant's order in the
# bytecode follows the string hashes, so a random seed could change the archive's bytes.
_COMPILE = """import json, py_compile, sys
for source, cfile, shown in json.load(sys.stdin):
    py_compile.compile(source, cfile, shown, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
"""


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _package_files(package_dir: str, arcbase: str) -> Iterator[Tuple[str, str]]:
    for dirpath, dirnames, filenames in os.walk(package_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(_KEEP):
                path = os.path.join(dirpath, name)
                yield path, os.path.join(arcbase, os.path.relpath(path, package_dir)).replace(os.sep, "/")


def _yaml_files() -> List[Tuple[str, str]]:
    import yaml

    pkg = os.path.dirname(yaml.__file__)
    files = [(p, a) for p, a in _package_files(pkg, "yaml") if a.endswith(".py")]
    lic = _yaml_license(pkg)
    if lic:
        files.append((lic, "yaml/LICENSE"))
    return files


def _yaml_license(pkg: str) -> Optional[str]:
    site = os.path.dirname(pkg)
    for entry in sorted(os.listdir(site)):
        if entry.lower().startswith("pyyaml") and entry.endswith(".dist-info"):
            for name in ("LICENSE", "licenses/LICENSE"):
                path = os.path.join(site, entry, name)
                if os.path.isfile(path):
                    return path
    return None


def shebang(python: Optional[str] = None) -> bytes:
    """The archive's first line: the node's interpreter by absolute path, else env's python3."""
    if not python:
        return _SHEBANG
    if not python.startswith("/") or any(c.isspace() for c in python) or len(python) > 120:
        raise ValueError(f"--python {python!r}: an absolute path without spaces (a shebang's limits)")
    return b"#!" + python.encode() + b"\n"


def _entries(package_dir: Optional[str]) -> List[Tuple[str, str]]:
    package_dir = package_dir or os.path.dirname(os.path.abspath(__file__))
    return sorted(list(_package_files(package_dir, "rocetune")) + _yaml_files(), key=lambda e: e[1])


def pyc_name(arcname: str) -> str:
    """Where zipimport looks for a module's bytecode: beside its source, NAME.pyc."""
    return arcname[:-3] + ".pyc"


def _bytecode(entries: List[Tuple[str, str]]) -> List[Tuple[str, bytes]]:
    """[(arcname of the .pyc, its bytes)] for every module, compiled by this Python."""
    if sys.implementation.cache_tag is None:  # an implementation that writes no bytecode
        return []
    modules = [(path, arc) for path, arc in entries if arc.endswith(".py")]
    with tempfile.TemporaryDirectory(prefix="rocetune-pack-") as tmp:
        jobs = [(path, os.path.join(tmp, "%d.pyc" % i), arc) for i, (path, arc) in enumerate(modules)]
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run([sys.executable, "-I", "-c", _COMPILE], input=json.dumps(jobs).encode(),
                              env=env, capture_output=True, check=False)
        if proc.returncode != 0:
            raise OSError("compiling the agent failed: %s" % proc.stderr.decode("utf-8", "replace")[-400:])
        return [(pyc_name(arc), _read_bytes(cfile)) for _, cfile, arc in jobs]


def build(package_dir: Optional[str] = None, python: Optional[str] = None) -> bytes:
    """The archive's bytes (behind the shebang of `python`)."""
    entries = _entries(package_dir)
    files = [("__main__.py", _MAIN)] + [(a, _read_bytes(p)) for p, a in entries] + _bytecode(entries)
    buf = io.BytesIO()
    buf.write(shebang(python))
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in sorted(files):
            info = zipfile.ZipInfo(arcname, _EPOCH)
            info.external_attr = 0o644 << 16
            # Bytecode stored: zipimport reads it at every start, and inflating it costs as much
            # as the rest of the import.
            info.compress_type = zipfile.ZIP_STORED if arcname.endswith(".pyc") else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def inputs_digest(python: Optional[str] = None, package_dir: Optional[str] = None) -> str:
    """What the archive is made of: the format, the shebang, the packing Python, every file."""
    h = hashlib.sha256(b"rocetune-agentpack %d\0" % _FORMAT)
    h.update(shebang(python) + b"\0" + (sys.implementation.cache_tag or "-").encode() + b"\0")
    h.update(sys.version.encode() + b"\0" + _MAIN)
    for path, arc in _entries(package_dir):
        h.update(arc.encode() + b"\0" + hashlib.sha256(_read_bytes(path)).digest())
    return h.hexdigest()


def _cached(out_dir: str, key: str) -> Optional[dict]:
    """The archive an earlier pack of the same inputs wrote, if it is still there, unchanged."""
    try:
        with open(os.path.join(out_dir, f".pack-{key[:32]}.json")) as fh:
            known = json.load(fh)
        data = _read_bytes(known["path"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if known.get("key") != key or hashlib.sha256(data).hexdigest() != known.get("sha256"):
        return None
    return {"path": known["path"], "sha256": known["sha256"], "changed": False, "bytes": len(data)}


def write(out_dir: str, python: Optional[str] = None) -> dict:
    from . import __version__
    from .fsutil import atomic_write_bytes

    key = inputs_digest(python)
    hit = _cached(out_dir, key)
    if hit:
        return hit
    data = build(python=python)
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.abspath(os.path.join(out_dir, f"rocetune-{__version__}-{digest[:12]}.pyz"))
    try:  # a file of that name with other bytes (cut short, edited) is replaced
        changed = hashlib.sha256(_read_bytes(path)).hexdigest() != digest
    except OSError:
        changed = True
    os.makedirs(out_dir, exist_ok=True)
    if changed:
        atomic_write_bytes(path, data, 0o755)
    known = json.dumps({"key": key, "path": path, "sha256": digest}, sort_keys=True) + "\n"
    atomic_write_bytes(os.path.join(out_dir, f".pack-{key[:32]}.json"), known.encode(), 0o644)
    return {"path": path, "sha256": digest, "changed": changed, "bytes": len(data)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m rocetune.agentpack", description=__doc__.split("\n")[0],
                                     allow_abbrev=False)
    parser.add_argument("--out-dir", required=True, help="directory for rocetune-VERSION-HASH.pyz")
    parser.add_argument("--python", metavar="PATH",
                        help="the node's interpreter for the shebang (default: /usr/bin/env python3)")
    args = parser.parse_args(argv)
    try:
        shebang(args.python)
    except ValueError as exc:
        parser.error(str(exc))  # exit 2, a usage error
    try:
        result = write(args.out_dir, args.python)
    except (OSError, ImportError) as exc:
        sys.stderr.write(f"rocetune.agentpack: error: {exc}\n")
        return 4
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
