"""Every NCCL library a job on this host may load, and how each one's version was known.

A job does not load "the system's NCCL": PyTorch loads its wheel's (site-packages/nvidia/nccl/
lib/libnccl.so.2, from nvidia-nccl-cu11/cu12/cu13, no version in the file name), a conda env
its own (<env>/lib/libnccl.so.X.Y.Z), an MPI job whatever the loader finds first. So the
probe looks, boundedly, in:

* the library directories of the distributions (NCCL_LIB_DIRS) and /etc/ld.so.cache (the
  loader's index, parsed: probe/parsers/ld_so_cache.py);
* the directories of LD_LIBRARY_PATH, and the Python environment of each python3 on PATH
  (the probing process's own environment; a capture records both);
* Python environments in the usual places: /usr and /usr/local, each /opt/<x>, /root/<x>,
  /home/<user>/<x> and /workspace/<x> (and their .venv/ or venv/, and conda's envs/<name>):
  <prefix>/lib/python3*/site-packages (or dist-packages) and <prefix>/lib. At most
  MAX_CHILDREN entries of each directory listed are looked at; no walk goes deeper.

A version comes from the file name (libnccl.so.2.21.5), else from the wheel's METADATA
(`Version:` of nvidia_nccl_cuXX-V.dist-info/METADATA, when one NCCL wheel owns that
site-packages), else from the library's own "NCCL version X.Y.Z+cudaA.B" string (NCCL's
VERSION_STRING, v2.28.9-1 src/init.cc:603), read in 1 MiB chunks from the start of the file
and no further than SCAN_LIMIT: in the 2.19.3 and 2.28.9 wheels it lies 1.3 and 2.1 MB into a
210 MB file (.rodata, ahead of the GPU code), found in 2-7 ms; a file without it costs the
64 MiB (19 ms from the page cache, 105 ms cold; the whole 218 MB file would take 250 ms warm).
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Set, Tuple

from ...errors import HostReadError, ParseError
from ...hostfs import ProbeContext
from ...nccl.versions import plan_version
from ..parsers import ld_so_cache

NCCL_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                 "/usr/local/lib", "/usr/local/nccl/lib", "/opt/nccl/lib")
LD_SO_CACHE = "/etc/ld.so.cache"
LD_SO_CACHE_MAX = 16 << 20
SYSTEM_PREFIXES = ("/usr", "/usr/local")
ENV_PARENTS = ("/opt", "/root", "/workspace")
HOMES = "/home"
VENV_NAMES = (".venv", "venv")
MAX_CHILDREN = 512
VERSION_NEEDLE = b"NCCL version "
SCAN_LIMIT = 64 << 20
_LIB = re.compile(r"^libnccl\.so(?:\.\d+)*\Z")
_VERSIONED = re.compile(r"^libnccl\.so\.(\d+\.\d+\.\d+)\Z")
_WHEEL = re.compile(r"^nvidia_nccl_(cu\d+)-([^-]+)\.dist-info\Z")
_PYTHON_DIR = re.compile(r"^python3(?:\.\d+)?\Z")
_STRING_VERSION = re.compile(r"^NCCL version (\d+\.\d+\.\d+)")


class _Found:
    def __init__(self) -> None:
        self.libs: Dict[str, dict] = {}  # real host path -> library entry
        self.environments: Set[str] = set()


def probe(ctx: ProbeContext) -> dict:
    """{"version", "path", "basis", "libraries", "python_environments"}: see docs/features.md."""
    found = _Found()
    # Python environments first: a wheel's library that LD_LIBRARY_PATH also names (containers
    # often add site-packages/nvidia/nccl/lib) is entered with its wheel's METADATA.
    for prefix in _prefixes(ctx):
        _environment(ctx, found, prefix)
    for d in NCCL_LIB_DIRS:
        _library_dir(ctx, found, d, "system")
    _ld_cache(ctx, found)
    for d in _path_list(ctx.root.environ("LD_LIBRARY_PATH")):
        _library_dir(ctx, found, d, "LD_LIBRARY_PATH")
    libraries = [found.libs[k] for k in sorted(found.libs)]
    for lib in libraries:
        lib["via"] = sorted(lib["via"])
    version, path, basis = plan_version(libraries)
    return {"version": version, "path": path, "basis": basis, "libraries": libraries,
            "python_environments": sorted(found.environments)}


def _path_list(value: Optional[str]) -> List[str]:
    return [p for p in (value or "").split(":") if p.startswith("/")]


def _library_dir(ctx: ProbeContext, found: _Found, directory: str, via: str,
                 environment: Optional[str] = None) -> None:
    for name in ctx.root.listdir(directory):
        if _LIB.match(name):
            _add(ctx, found, f"{directory.rstrip('/')}/{name}", via, environment)


def _ld_cache(ctx: ProbeContext, found: _Found) -> None:
    try:
        data = ctx.root.read_bytes(LD_SO_CACHE, LD_SO_CACHE_MAX)
    except HostReadError as exc:
        ctx.warn(f"cannot read {exc.path}: {exc.reason}")
        return
    if data is None:
        return
    try:
        entries = ld_so_cache.parse(data)
    except ParseError as exc:
        ctx.warn(f"cannot parse {LD_SO_CACHE} ({exc.message}): its libraries are not searched")
        return
    for soname, path in entries:
        if soname.startswith("libnccl.so") and path.startswith("/"):
            _add(ctx, found, path, "ld.so.cache")


def _add(ctx: ProbeContext, found: _Found, path: str, via: str, environment: Optional[str] = None,
         wheel: Optional[Tuple[Optional[str], Optional[str]]] = None) -> None:
    """One library file (a link to one is followed to it), entered once under its real path."""
    real = ctx.root.realpath(path)
    if not ctx.root.exists(real):  # a dangling link; exists() also has a capture keep the name
        return
    lib = found.libs.get(real)
    if lib is None:
        lib = {"path": real, "version": None, "how": None, "package": None, "environment": environment,
               "via": set()}
        _version(ctx, lib, real, wheel)
        found.libs[real] = lib
    lib["via"].add(via)


def _version(ctx: ProbeContext, lib: dict, real: str,
             wheel: Optional[Tuple[Optional[str], Optional[str]]]) -> None:
    m = _VERSIONED.match(os.path.basename(real))
    if wheel is not None:
        lib["package"] = wheel[0]
    if m:
        lib["version"], lib["how"] = m.group(1), "file-name"
    elif wheel is not None and wheel[1]:
        lib["version"], lib["how"] = wheel[1], "wheel-metadata"
    else:
        try:
            text = ctx.root.scan(real, VERSION_NEEDLE, 32, SCAN_LIMIT)
        except HostReadError as exc:
            ctx.warn(f"cannot read {exc.path}: {exc.reason}")
            return
        sm = _STRING_VERSION.match(text or "")
        if sm:
            lib["version"], lib["how"] = sm.group(1), "library-string"


# --- Python environments ---------------------------------------------------------------------

def _prefixes(ctx: ProbeContext) -> List[str]:
    """Candidate Python prefixes, in a stable order, each once."""
    out: List[str] = list(SYSTEM_PREFIXES)
    for entry in _path_list(ctx.root.environ("PATH")):
        for exe in ("python3", "python"):
            candidate = f"{entry.rstrip('/')}/{exe}"
            if ctx.root.exists(candidate):
                # a venv's bin/python3 links to the system's: both environments count
                out.append(os.path.dirname(ctx.root.realpath(entry)))
                out.append(os.path.dirname(os.path.dirname(ctx.root.realpath(candidate))))
                break
    parents = list(ENV_PARENTS) + [f"{HOMES}/{u}" for u in _children(ctx, HOMES)]
    for parent in parents:
        for child in _children(ctx, parent):
            base = f"{parent}/{child}"
            out.append(base)
            out += [f"{base}/{v}" for v in VENV_NAMES]
            out += [f"{base}/envs/{e}" for e in _children(ctx, f"{base}/envs")]  # conda
    seen: Set[str] = set()
    return [p for p in out if not (p in seen or seen.add(p))]


def _children(ctx: ProbeContext, directory: str) -> List[str]:
    names = ctx.root.listdir(directory)
    if len(names) > MAX_CHILDREN:
        ctx.warn(f"{directory} has {len(names)} entries: only the first {MAX_CHILDREN} were searched "
                 "for Python environments")
    return names[:MAX_CHILDREN]


def _environment(ctx: ProbeContext, found: _Found, prefix: str) -> None:
    lib_dir = f"{prefix}/lib"
    names = ctx.root.listdir(lib_dir)
    if not names:
        return
    if prefix in SYSTEM_PREFIXES:
        _library_dir(ctx, found, lib_dir, "system")
    else:
        _library_dir(ctx, found, lib_dir, "environment", prefix)  # a conda env's own NCCL
    sites = []
    for lib in ("lib", "lib64") if prefix in SYSTEM_PREFIXES else ("lib",):
        for py in (names if lib == "lib" else ctx.root.listdir(f"{prefix}/{lib}")):
            if _PYTHON_DIR.match(py):
                sites += [f"{prefix}/{lib}/{py}/{s}" for s in ("site-packages", "dist-packages")]
    for site in sites:
        entries = ctx.root.listdir(site)
        # listed is recorded: a capture keeps the directory (not its other entries)
        if entries or ctx.root.is_dir(site):
            found.environments.add(prefix)
            _site_packages(ctx, found, site, entries, prefix)


def _site_packages(ctx: ProbeContext, found: _Found, site: str, entries: List[str], prefix: str) -> None:
    wheels = []
    for name in entries:
        m = _WHEEL.match(name)
        if m:
            ctx.root.exists(f"{site}/{name}")  # a capture keeps the name, METADATA or not
            meta = _metadata(ctx, f"{site}/{name}/METADATA")
            package = meta.get("Name") or f"nvidia-nccl-{m.group(1)}"
            wheels.append((package, meta.get("Version") or m.group(2)))
    lib_dir = f"{site}/nvidia/nccl/lib"
    if "nvidia" not in entries:
        return
    # One NCCL wheel: its METADATA tells the version. Several (cu12 and cu13 both installed)
    # share nvidia/nccl/lib, and the file is the last one installed: only its string tells.
    if len(wheels) == 1:
        wheel: Tuple[Optional[str], Optional[str]] = (f"{wheels[0][0]} {wheels[0][1]}", wheels[0][1])
    else:
        wheel = (", ".join(f"{p} {v}" for p, v in sorted(wheels)) or None, None)
    for name in ctx.root.listdir(lib_dir):
        if _LIB.match(name):
            _add(ctx, found, f"{lib_dir}/{name}", "wheel", prefix, wheel)


def _metadata(ctx: ProbeContext, path: str) -> Dict[str, str]:
    """The Name and Version fields of a wheel's METADATA (RFC 822 headers up to the first blank line)."""
    out: Dict[str, str] = {}
    for line in (ctx.text(path) or "").splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in out:
            out[key] = value.strip()
    return out
