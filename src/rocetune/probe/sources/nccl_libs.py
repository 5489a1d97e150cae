"""Every NCCL library a job on this host may load, and how each one's version was known.

A job does not load "the system's NCCL": PyTorch loads its wheel's (site-packages/nvidia/nccl/
lib/libnccl.so.2, from nvidia-nccl-cu11/cu12/cu13, no version in the file name), a conda env
its own (<env>/lib/libnccl.so.X.Y.Z), an MPI job whatever the loader finds first. So the
probe looks, boundedly, in:

* the library directories of the distributions (NCCL_LIB_DIRS) and /etc/ld.so.cache (the
  loader's index, parsed: probe/parsers/ld_so_cache.py);
* the directories of LD_LIBRARY_PATH, and the Python environment of each python3 on PATH
  (the probing process's own environment; a capture records both);
* Python environments in the usual places: /usr and /usr/local, each /opt/<x> and /root/<x>,
  then /workspace/<x> (and, only when asked, /home/<user>/<x>) (and their .venv/ or venv/, and
  conda's envs/<name>): <prefix>/lib/python3*/site-packages (or dist-packages) and <prefix>/lib.
  At most MAX_CHILDREN entries of each directory listed are looked at; no walk goes deeper.

The system's places (all of the above but /workspace and /home) are searched first, with their
own budget; then the places users control (/workspace, and /home when asked), with a smaller one
(USER_LIMITS: files, libraries, bytes and seconds, the listing of directories included), so no
number of files a user leaves there can keep the system's NCCL from being read. The root probe
does not walk /home by default: a shared /home (NFS, autofs) may be slow or hang, and each
user's libraries tell what that user's jobs load, not the system's -- the NCCL release jobs load
from elsewhere is declared (`--nccl-version`, or the node settings file's `nccl_version`).

A version comes from the file name (libnccl.so.2.21.5), else from the wheel's METADATA
(`Version:` of nvidia_nccl_cuXX-V.dist-info/METADATA, when one NCCL wheel owns that
site-packages), else from the library's own "NCCL version X.Y.Z+cudaA.B" string (NCCL's
VERSION_STRING, v2.28.9-1 src/init.cc:603), read in 1 MiB chunks from the start of the file
and no further than SCAN_LIMIT: in the 2.19.3 and 2.28.9 wheels it lies 1.3 and 2.1 MB into a
210 MB file (.rodata, ahead of the GPU code), found in 2-7 ms; a file without it costs the
64 MiB (19 ms from the page cache, 105 ms cold; the whole 218 MB file would take 250 ms warm).

What counts, and what the search may cost:

* A version counts only from a real ELF shared object (magic, class, byte order, ET_DYN: its
  first 20 bytes) that carries NCCL's own "NCCL version" string; a file name's or a wheel's
  claim is kept beside it (`claimed`) but never stands alone. Anything else named libnccl.so*
  is listed under `rejected` with why, and is no library.
* The search is bounded, per tier (SYSTEM_LIMITS, USER_LIMITS): at most that many files are
  opened and libraries looked at (NCCL's and its plugins'), at most that many bytes are read
  inside them and for at most that many seconds; what is left when a bound is reached is named
  in `search.stopped` (the system's tier) or `search.user.stopped`, and its version is not read
  (the plan then counts it as unreadable: possibly older). 1,536 sparse libnccl.so files once
  made a plan take 80 s; now each costs a 20-byte read.
* A library or plugin in a place another user controls -- under /home/<user>, or below a
  directory (or in a file) writable by a group or everyone (not a sticky directory) or owned by
  another user than root -- is evidence for that user's jobs only: `controlled_by` says who, and
  the release planned for the system (kernel.nccl.version) comes from the others
  (rocetune.nccl.versions.plan_version). Owners are the live host's, or what a capture recorded.

The plugins a job loads (kernel.nccl.plugins): NCCL dlopens `libnccl-<kind>.so` (net, tuner,
profiler, env from 2.28.7, gin) when NCCL_<KIND>_PLUGIN is unset, else the name it gives, or
`libnccl-<kind>-<name>.so` ("none" loads none: v2.30.7-1 src/plugin/plugin_open.cc:79-125,
plugin/net.cc:258-301, plugin/env.cc:40-48). dlopen finds a bare name through LD_LIBRARY_PATH,
/etc/ld.so.cache and the system directories, and through the RUNPATH of libnccl itself (the wheels
set $ORIGIN): so the plugins are looked for in those places and in each NCCL library's own
directory, and at the path an NCCL_<KIND>_PLUGIN of the probing process names. A plugin's version
is what its file name says (`libnccl-net.so.1.14.2`), where it says one.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ...errors import HostReadError, ParseError
from ...hostfs.context import ProbeContext
from ...nccl.versions import plan_version
from ..parsers import ld_so_cache

NCCL_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                 "/usr/local/lib", "/usr/local/nccl/lib", "/opt/nccl/lib")
LD_SO_CACHE = "/etc/ld.so.cache"
LD_SO_CACHE_MAX = 16 << 20
SYSTEM_PREFIXES = ("/usr", "/usr/local")
ENV_PARENTS = ("/opt", "/root")
USER_ENV_PARENTS = ("/workspace",)
HOMES = "/home"
VENV_NAMES = (".venv", "venv")
MAX_CHILDREN = 512
VERSION_NEEDLE = b"NCCL version "
SCAN_LIMIT = 64 << 20
MAX_LIBRARIES = 64        # ELF library files (NCCL's and its plugins') whose versions are read, in all
MAX_FILES = 4096          # files named like them whose first 20 bytes are read, in all
MAX_REJECTED = 16         # files that are no library listed (all are counted)
SCAN_BUDGET = 512 << 20   # bytes read inside them all for version strings
SCAN_SECONDS = 15.0       # wall time for those reads
USER_MAX_LIBRARIES = 16   # the same, for the places users control (/workspace, /home)
USER_MAX_FILES = 256
USER_SCAN_BUDGET = 128 << 20
USER_SECONDS = 3.0        # wall time of that tier, its directory listings included
ELF_HEAD = 20             # e_ident (16 bytes) and e_type
ET_DYN = 3
PLUGIN_KINDS = ("net", "tuner", "profiler", "env", "gin", "rma", "log")
_EMPTY = "an empty file"
_PLUGIN = re.compile(r"^libnccl-(" + "|".join(PLUGIN_KINDS) + r")(?:-([A-Za-z0-9_+.-]+?))?\.so(?:\.(\d+(?:\.\d+)*))?\Z")
_LIB = re.compile(r"^libnccl\.so(?:\.\d+)*\Z")
_VERSIONED = re.compile(r"^libnccl\.so\.(\d+\.\d+\.\d+)\Z")
_WHEEL = re.compile(r"^nvidia_nccl_(cu\d+)-([^-]+)\.dist-info\Z")
_PYTHON_DIR = re.compile(r"^python3(?:\.\d+)?\Z")
_STRING_VERSION = re.compile(r"^NCCL version (\d+\.\d+\.\d+)")


class _Tier:
    """One tier's budget: files opened, libraries entered, bytes read, and a deadline."""

    def __init__(self, clock: Callable[[], float], files: int, libraries: int, budget: int, seconds: float,
                 walk_bounded: bool) -> None:
        self.clock = clock
        self.max_files, self.max_libraries, self.budget_total, self.seconds = files, libraries, budget, seconds
        self.walk_bounded = walk_bounded  # the deadline bounds the directory listings too
        self.deadline = clock() + seconds
        self.budget = budget
        self.looked_at = 0
        self.opened = 0
        self.scanned = 0
        self.stopped: Optional[str] = None
        self.left_out: Set[str] = set()

    def out_of_time(self) -> bool:
        if self.walk_bounded and self.clock() > self.deadline:
            self.stopped = self.stopped or f"the search took over {self.seconds:g} s: the rest was not searched"
            return True
        return False

    def summary(self) -> dict:
        return {"looked_at": self.looked_at, "left_out": len(self.left_out), "stopped": self.stopped}


class _Found:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.libs: Dict[str, dict] = {}  # real host path -> library entry
        self.plugins: Dict[str, dict] = {}  # real host path -> plugin entry
        self.rejected: Dict[str, dict] = {}  # real host path -> {"path", "why"}
        self.environments: Set[str] = set()
        self.clock = clock
        self.system = _Tier(clock, MAX_FILES, MAX_LIBRARIES, SCAN_BUDGET, SCAN_SECONDS, walk_bounded=False)
        self.tier = self.system
        self.rejected_count = 0
        self.rejected_more: Set[str] = set()
        self.plugin_dirs: Set[str] = set()

    def users(self) -> _Tier:
        """From here on, the places users control, on their own budget."""
        self.tier = _Tier(self.clock, USER_MAX_FILES, USER_MAX_LIBRARIES, USER_SCAN_BUDGET, USER_SECONDS,
                          walk_bounded=True)
        return self.tier

    def take(self, real: str) -> bool:
        """Whether one more file may be opened (the tier's file bound)."""
        t = self.tier
        if t.opened >= t.max_files:
            t.left_out.add(real)
            t.stopped = t.stopped or f"more than {t.max_files} files named like libraries: the rest were not opened"
            return False
        t.opened += 1
        return True

    def take_library(self, real: str) -> bool:
        """Whether one more ELF library may be entered (the tier's library bound)."""
        t = self.tier
        if t.looked_at >= t.max_libraries:
            t.left_out.add(real)
            t.stopped = t.stopped or f"more than {t.max_libraries} library files: the rest were not looked at"
            return False
        t.looked_at += 1
        return True

    def reject(self, real: str, why: str) -> None:
        self.rejected_count += 1
        if len(self.rejected) < MAX_REJECTED:
            self.rejected[real] = {"path": real, "why": why}
        else:
            self.rejected_more.add(real)

    def scan_limit(self) -> int:
        """Bytes the next version read may take (0: a bound is reached)."""
        t = self.tier
        if t.clock() > t.deadline:
            t.stopped = t.stopped or f"reading versions took over {t.seconds:g} s: the rest were not read"
            return 0
        if t.budget <= 0:
            t.stopped = t.stopped or (f"{t.budget_total >> 20} MiB read inside the libraries: the rest were "
                                      "not read")
            return 0
        return min(SCAN_LIMIT, t.budget)


def probe(ctx: ProbeContext, clock: Callable[[], float] = time.monotonic, homes: bool = False) -> dict:
    """{"version", "path", "basis", "libraries", "python_environments", "rejected", "search",
    "plugins", "plugin_env"}: see docs/features.md. `homes`: walk /home/<user> too (in the
    users' tier; the root probe does not)."""
    found = _Found(clock)
    # The system's places, on their own budget. Python environments first: a wheel's library
    # that LD_LIBRARY_PATH also names (containers often add site-packages/nvidia/nccl/lib) is
    # entered with its wheel's METADATA.
    for prefix in _prefixes(ctx, ENV_PARENTS, found):
        _environment(ctx, found, prefix)
    for d in NCCL_LIB_DIRS:
        _library_dir(ctx, found, d, "system")
    _ld_cache(ctx, found)
    for d in _path_list(ctx.root.environ("LD_LIBRARY_PATH")):
        _library_dir(ctx, found, d, "LD_LIBRARY_PATH")
    plugin_env = {f"NCCL_{k.upper()}_PLUGIN": v for k in PLUGIN_KINDS
                  for v in [ctx.root.environ(f"NCCL_{k.upper()}_PLUGIN")] if v is not None}
    _plugins(ctx, found, plugin_env)
    # Then the places users control, on theirs.
    users = found.users()
    parents = list(USER_ENV_PARENTS) + ([f"{HOMES}/{u}" for u in _children(ctx, HOMES)] if homes else [])
    for prefix in _prefixes(ctx, parents, found, system=False):
        if users.out_of_time():
            break
        _environment(ctx, found, prefix)
    if not users.out_of_time():
        _plugins(ctx, found, {}, only_new=True)
    libraries = [found.libs[k] for k in sorted(found.libs)]
    for lib in libraries:
        lib["via"] = sorted(lib["via"])
    plugins = [found.plugins[k] for k in sorted(found.plugins)]
    for plug in plugins:
        plug["via"] = sorted(plug["via"])
        plug["names"] = sorted(plug["names"])
    system = found.system
    if system.stopped:
        ctx.warn(f"the NCCL library search stopped: {system.stopped}")
    if users.stopped:
        ctx.warn(f"the NCCL library search in places users control stopped: {users.stopped}")
    version, path, basis = plan_version(libraries)
    return {"version": version, "path": path, "basis": basis, "libraries": libraries,
            "python_environments": sorted(found.environments),
            "rejected": [found.rejected[k] for k in sorted(found.rejected)],
            "search": {**system.summary(), "rejected": found.rejected_count,
                       # the users' tier, where it found or stopped at something (else the Features
                       # of a host without user environments are what they were)
                       **({"user": {**users.summary(), "homes": homes}}
                          if homes or users.looked_at or users.left_out or users.stopped else {})},
            "plugins": plugins, "plugin_env": plugin_env}


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
    """One library file (a link to one is followed to it), entered once under its real path --
    if it is an ELF shared object; its version only from its own 'NCCL version' string."""
    real = _existing(ctx, path)
    if real is None or real in found.rejected or real in found.rejected_more or found.tier.out_of_time():
        return
    lib = found.libs.get(real)
    if lib is None:
        if not found.take(real):
            return
        why = _not_elf(ctx, real)
        placeholder = why == _EMPTY and not ctx.root.is_live
        if why and not placeholder:
            found.reject(real, why)
            return
        if not found.take_library(real):
            return
        lib = {"path": real, "version": None, "how": None, "package": None, "environment": environment,
               "via": set(), "controlled_by": _controller(ctx, real)}
        if placeholder:
            _name_only(lib, real, wheel)
        else:
            _version(ctx, found, lib, real, wheel)
        found.libs[real] = lib
    lib["via"].add(via)


def _existing(ctx: ProbeContext, path: str) -> Optional[str]:
    try:
        real = ctx.root.realpath(path)
    except HostReadError as exc:
        ctx.warn(f"cannot read {exc.path}: {exc.reason}")
        return None
    return real if ctx.root.exists(real) else None  # a dangling link; exists() has a capture keep the name


def _not_elf(ctx: ProbeContext, real: str) -> Optional[str]:
    """Why the file is no ELF shared object (None when it is one): its first 20 bytes."""
    try:
        head = ctx.root.read_head(real, ELF_HEAD)
    except HostReadError as exc:
        return f"unreadable: {exc.reason}"
    if head is None:
        return "vanished"
    if not head:
        return _EMPTY
    if len(head) < ELF_HEAD or head[:4] != b"\x7fELF":
        return f"not an ELF file ({len(head)} byte(s) read, no ELF magic)" if len(head) < ELF_HEAD else \
            "not an ELF file (no ELF magic)"
    if head[4] not in (1, 2) or head[5] not in (1, 2):
        return "not an ELF file (bad class or byte order)"
    e_type = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 16)[0]
    if e_type != ET_DYN:
        return f"an ELF file but no shared object (e_type {e_type})"
    return None


def _name_only(lib: dict, real: str, wheel: Optional[Tuple[Optional[str], Optional[str]]]) -> None:
    """An empty file under a captured root: captures made before the probe read a library's header
    kept only its name, and what its name or wheel said was the version then. Counted so (`how`
    says which), with `placeholder` set; a capture made now keeps the header, and a live host's
    empty file is no library."""
    m = _VERSIONED.match(os.path.basename(real))
    if wheel is not None:
        lib["package"] = wheel[0]
    if m:
        lib["version"], lib["how"] = m.group(1), "file-name"
    elif wheel is not None and wheel[1]:
        lib["version"], lib["how"] = wheel[1], "wheel-metadata"
    lib["placeholder"] = ("an empty file in a capture made before library headers were recorded: its name is all "
                          "there is")


def _version(ctx: ProbeContext, found: _Found, lib: dict, real: str,
             wheel: Optional[Tuple[Optional[str], Optional[str]]]) -> None:
    claimed: Dict[str, str] = {}
    m = _VERSIONED.match(os.path.basename(real))
    if m:
        claimed["file-name"] = m.group(1)
    if wheel is not None:
        lib["package"] = wheel[0]
        if wheel[1]:
            claimed["wheel-metadata"] = wheel[1]
    if claimed:
        lib["claimed"] = claimed
    limit = found.scan_limit()
    if limit <= 0:
        lib["unread"] = found.tier.stopped
        return
    try:
        text, used = ctx.root.scan_counted(real, VERSION_NEEDLE, 32, limit)
    except HostReadError as exc:
        ctx.warn(f"cannot read {exc.path}: {exc.reason}")
        return
    found.tier.budget -= used
    found.tier.scanned += used
    sm = _STRING_VERSION.match(text or "")
    if not sm:
        return
    lib["version"], lib["how"] = sm.group(1), "library-string"
    other = sorted({v for v in claimed.values() if v != sm.group(1)})
    if other:
        ctx.warn(f"{real}: its name or wheel says NCCL {', '.join(other)}, its own string {sm.group(1)}: the "
                 "string counts")


def _controller(ctx: ProbeContext, real: str) -> Optional[str]:
    """Who other than root controls the file at `real`, or None: a user's home, a directory
    on its path (or the file) writable by a group or by everyone (a sticky directory does not
    let others replace what is in it), or owned by another user."""
    parts = real.split("/")
    if len(parts) > 3 and "/" + parts[1] == HOMES and parts[2]:
        return f"user {parts[2]} (under {HOMES}/{parts[2]})"
    path = real
    while path:
        own = ctx.root.owner(path)
        if own is not None:
            uid, gid, mode = own
            sticky_dir = stat.S_ISDIR(mode) and mode & stat.S_ISVTX
            if mode & 0o002 and not sticky_dir and not stat.S_ISLNK(mode):
                return f"every user ({path} is writable by all)"
            if mode & 0o020 and not sticky_dir and not stat.S_ISLNK(mode) and gid not in (0, None):
                return f"group {gid} ({path} is writable by it)"
            if uid not in (0, None):
                return f"uid {uid} (owner of {path})"
        if path == "/":
            break
        path = os.path.dirname(path)
    return None


# --- plugins ---------------------------------------------------------------------------------

def _plugins(ctx: ProbeContext, found: _Found, plugin_env: Dict[str, str], only_new: bool = False) -> None:
    """The NCCL plugins dlopen would find, and those NCCL_<KIND>_PLUGIN names by path; `only_new`:
    only in the directories of libraries found since (the users' tier)."""
    dirs: Dict[str, str] = {}
    if not only_new:
        for d in _path_list(ctx.root.environ("LD_LIBRARY_PATH")):
            dirs.setdefault(d.rstrip("/") or "/", "LD_LIBRARY_PATH")
        for d in NCCL_LIB_DIRS:
            dirs.setdefault(d, "system")
    searched = found.plugin_dirs
    for lib in found.libs.values():
        dirs.setdefault(os.path.dirname(lib["path"]), "NCCL's own directory")
    for d in list(dirs):
        if d in searched:
            del dirs[d]
    searched.update(dirs)
    for d, via in dirs.items():
        if found.tier.out_of_time():
            return
        for name in ctx.root.listdir(d):
            if _PLUGIN.match(name):
                _add_plugin(ctx, found, f"{d}/{name}" if d != "/" else f"/{name}", via)
    if only_new:
        return
    for soname, path in _cached_plugins(ctx):
        _add_plugin(ctx, found, path, "ld.so.cache", soname)
    for var, value in plugin_env.items():
        if value.startswith("/"):
            _add_plugin(ctx, found, value, var)


def _cached_plugins(ctx: ProbeContext) -> List[Tuple[str, str]]:
    try:
        data = ctx.root.read_bytes(LD_SO_CACHE, LD_SO_CACHE_MAX)
        entries = ld_so_cache.parse(data) if data is not None else []
    except (HostReadError, ParseError):
        return []  # _ld_cache warned
    return [(n, p) for n, p in entries if _PLUGIN.match(n) and p.startswith("/")]


def _add_plugin(ctx: ProbeContext, found: _Found, path: str, via: str, name: Optional[str] = None) -> None:
    """One plugin file; `name` is what dlopen finds it by (a soname), else its file name."""
    real = _existing(ctx, path)
    if real is None or real in found.rejected or real in found.rejected_more or found.tier.out_of_time():
        return
    plug = found.plugins.get(real)
    if plug is None:
        if not found.take(real):
            return
        why = _not_elf(ctx, real)
        if why:
            found.reject(real, why)
            return
        if not found.take_library(real):
            return
        m = _PLUGIN.match(os.path.basename(path)) or _PLUGIN.match(os.path.basename(real))
        versioned = _PLUGIN.match(os.path.basename(real))
        plug = {"path": real, "names": set(), "kind": m.group(1) if m else None,
                "variant": m.group(2) if m else None,
                "version": (versioned.group(3) if versioned else None) or (m.group(3) if m else None),
                "via": set(), "controlled_by": _controller(ctx, real)}
        found.plugins[real] = plug
    plug["via"].add(via)
    plug["names"].add(name or os.path.basename(path))


# --- Python environments ---------------------------------------------------------------------

def _prefixes(ctx: ProbeContext, parents: Sequence[str], found: _Found, system: bool = True) -> Iterator[str]:
    """Candidate Python prefixes, in a stable order, each once: the system's (and those of the
    python3 on the probing process's PATH), then each child of `parents`."""
    seen: Set[str] = set()
    for prefix in _own_prefixes(ctx) if system else []:
        if prefix not in seen:
            seen.add(prefix)
            yield prefix
    for parent in parents:
        for child in _children(ctx, parent):
            if found.tier.out_of_time():
                return
            base = f"{parent}/{child}"
            for prefix in [base] + [f"{base}/{v}" for v in VENV_NAMES] + \
                    [f"{base}/envs/{e}" for e in _children(ctx, f"{base}/envs")]:  # conda
                if prefix not in seen:
                    seen.add(prefix)
                    yield prefix


def _own_prefixes(ctx: ProbeContext) -> List[str]:
    out: List[str] = list(SYSTEM_PREFIXES)
    for entry in _path_list(ctx.root.environ("PATH")):
        for exe in ("python3", "python"):
            candidate = f"{entry.rstrip('/')}/{exe}"
            if ctx.root.exists(candidate):
                # a venv's bin/python3 links to the system's: both environments count
                out.append(os.path.dirname(ctx.root.realpath(entry)))
                out.append(os.path.dirname(os.path.dirname(ctx.root.realpath(candidate))))
                break
    return out


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
