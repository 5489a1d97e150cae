"""Pack the node agent: rocetune and pure-Python PyYAML in one zip that the node's own python3
(3.9 or newer) runs, seeing the distribution's pyverbs. Nothing is installed with pip on a node.

    python3 -m rocetune.agentpack --out-dir DIR      # prints {"path", "sha256", "changed"}
    python3 -m rocetune.agentpack --out-dir DIR --python /usr/bin/python3   # that shebang

The archive starts with a shebang line (`#!/usr/bin/env python3` unless --python names the
node's interpreter), so the file itself runs as a command. The rocetune_agent role does not
run it as is: zipimport writes no bytecode, so every start would compile every module from
source. The node unpacks it and compiles it with its own python3 instead
(plugins/module_utils/rocetune_agent_tree.py).

The archive is deterministic (sorted entries, fixed timestamps and modes), so the same sources
give the same bytes and Ansible copies it only when it really changed. Its name carries the
version and the first 12 hex digits of its sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
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


def build(package_dir: Optional[str] = None, python: Optional[str] = None) -> bytes:
    """The archive's bytes (behind the shebang of `python`)."""
    package_dir = package_dir or os.path.dirname(os.path.abspath(__file__))
    entries = sorted(list(_package_files(package_dir, "rocetune")) + _yaml_files(), key=lambda e: e[1])
    buf = io.BytesIO()
    buf.write(shebang(python))
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in [("__main__.py", _MAIN)] + [(a, open(p, "rb").read()) for p, a in entries]:
            info = zipfile.ZipInfo(arcname, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def write(out_dir: str, python: Optional[str] = None) -> dict:
    from . import __version__
    from .fsutil import atomic_write_bytes

    data = build(python=python)
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(out_dir, f"rocetune-{__version__}-{digest[:12]}.pyz")
    changed = not os.path.isfile(path)
    if changed:
        os.makedirs(out_dir, exist_ok=True)
        atomic_write_bytes(path, data, 0o755)
    return {"path": os.path.abspath(path), "sha256": digest, "changed": changed, "bytes": len(data)}


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
