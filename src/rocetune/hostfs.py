"""Rooted host I/O: every file read and every command goes through here.

`HostRoot` reads files of a host that may be mounted, unpacked or built anywhere (`--root DIR`);
paths are always written as on the host (`/sys/class/net`), never joined by callers.
`LiveRunner` runs commands on this machine; `RecordedRunner` replays `ROOT/commands/<argv>.txt`.
Both can record what was touched, which is how `rocetune capture` writes exactly what was read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .errors import HostReadError

MAX_READ_BYTES = 4 << 20
# What a capture records beside the host's files and commands/: the environment variables the
# probe read (environ/NAME) and the strings it found inside files too large to copy
# (strings/<host path>.txt); a replay reads them instead. See docs/cli.md (capture).
RECORDED_DIR = "recorded"
SCAN_CHUNK = 1 << 20
_MAX_LINK_HOPS = 40
_OPEN_LEAF = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_LINK = -1  # what _open_leaf answers for a final component that is a symlink


class Recorder:
    """Collects the host paths a probe touched and the commands it ran."""

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}  # host path -> the text the probe read
        self.heads: Dict[str, bytes] = {}  # host path -> the leading bytes read of a binary file
        self.present: Set[str] = set()  # paths whose existence mattered, not their content
        self.dirs: Dict[str, List[str]] = {}
        self.links: Set[str] = set()
        self.commands: Dict[str, "CommandResult"] = {}
        self.blobs: Dict[str, bytes] = {}  # host path -> binary content read (ld.so.cache)
        self.strings: Dict[str, str] = {}  # host path -> what scan() found inside it
        self.environ: Dict[str, str] = {}  # variable -> value, for those the probe read and found set
        self.modes: Dict[str, int] = {}  # host path -> permission bits of a file whose content was read
        self.owners: Dict[str, Tuple[int, int, int]] = {}  # host path -> (uid, gid, mode) asked by owner()

    def note_mode(self, path: str, fd: int) -> None:
        try:
            self.modes[path] = stat.S_IMODE(os.fstat(fd).st_mode)
        except OSError:
            pass


class HostRoot:
    """Files of one host, seen through a root directory.

    Every path is resolved inside the root, component by component: a symlink's absolute
    target is taken from the root, `..` stops at the root, and a path that takes more than
    40 links is refused (HostReadError), never handed to the kernel with a link left in it.
    Only regular files are read (opened without following a last link, without blocking; under
    a root other than `/` nothing else is even opened: a device node unpacked from an archive is
    refused by its lstat). What cannot be read for want of permission is a warning
    (`warnings`), never an empty answer taken as the host's.
    """

    def __init__(self, root: str = "/", recorder: Optional[Recorder] = None):
        self.root = os.path.abspath(root)
        self.recorder = recorder
        self._resolved: Dict[str, str] = {}  # host path -> real host path
        # real host path -> whether it is a symlink, for paths a listing or exists() has seen:
        # resolving them later takes no lstat (a 522-device host lists 1,600 links in /sys/class).
        self._is_link: Dict[str, bool] = {}
        # Real host paths a listing saw as regular files (d_type): opened without an lstat first.
        self._regular: Set[str] = set()
        self._prefix = "" if self.root == "/" else self.root  # what a real host path is joined to
        self.warnings: List[str] = []  # what the probe could not read, for the source reading it

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    @property
    def is_live(self) -> bool:
        return self.root == "/"

    def host_path(self, path: str) -> str:
        """The real path of a host path (`/sys/x` -> `ROOT/sys/x`), without following links."""
        if not path.startswith("/"):
            raise ValueError(f"host paths are absolute: {path!r}")
        return self._join(os.path.normpath(path))

    def _join(self, norm: str) -> str:
        """Join a normalised host path onto the root."""
        if self.is_live:
            return norm
        return self.root + norm if norm != "/" else self.root

    # --- links -------------------------------------------------------------------------------
    def realpath(self, path: str) -> str:
        """Resolve symlinks the way the host would, staying inside the root."""
        norm = _normpath(path)
        return "/" if norm == "/" else self._top(norm, path)

    def _top(self, norm: str, asked: str) -> str:
        """_real from the start, its refusal naming the path asked for."""
        try:
            return self._real(norm, 0)
        except HostReadError as exc:
            raise HostReadError(asked, exc.reason) from None

    def _real(self, path: str, hops: int) -> str:
        # Every prefix is resolved once and cached: a probe reads thousands of files in the
        # same few hundred directories, so each directory costs one lstat.
        hit = self._resolved.get(path)
        if hit is not None:
            return hit
        parent, _, name = path.rpartition("/")
        real_parent = self._real(parent, hops) if parent else "/"
        candidate = (real_parent + "/" + name) if real_parent != "/" else "/" + name
        real = self._join(candidate)
        result = candidate
        is_link = self._is_link.get(candidate)
        if is_link is None:
            try:
                is_link = stat.S_ISLNK(os.lstat(real).st_mode)
            except (OSError, ValueError):
                is_link = False
        if is_link:
            if hops >= _MAX_LINK_HOPS:
                raise HostReadError(candidate, f"more than {_MAX_LINK_HOPS} symbolic links to follow: "
                                               "not read (a loop, or a chain made to leave the root)")
            if self.recorder is not None:
                self.recorder.links.add(candidate)
            try:
                target = os.readlink(real)
            except OSError as exc:
                raise HostReadError(candidate, exc.strerror or str(exc)) from None
            # real_parent has no links left in it, so ".." in the target can be folded lexically
            # (normpath stops it at the root, and an absolute target starts from the root).
            result = self._real(_normpath(os.path.join(real_parent, target)), hops + 1)
        self._resolved[path] = result
        return result

    def _leaf(self, path: str) -> str:
        """The host path of `path` with every directory above it resolved, the last part as is."""
        norm = _normpath(path)
        parent, _, name = norm.rpartition("/")
        if not parent:
            return norm
        real_parent = self._top(parent, path)
        return (real_parent + "/" + name) if real_parent != "/" else "/" + name

    def readlink(self, path: str) -> Optional[str]:
        try:
            target = os.readlink(self._join(self._leaf(path)))
        except OSError:
            return None
        self._note_link(path)
        return target

    def link_name(self, path: str) -> Optional[str]:
        """Basename of a symlink's target (`.../driver` -> `mlx5_core`), or None."""
        target = self.readlink(path)
        return os.path.basename(target.rstrip("/")) if target else None

    # --- queries -------------------------------------------------------------------------------
    def _resolve_or_warn(self, resolve, path: str) -> Optional[str]:
        try:
            return resolve(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None

    def exists(self, path: str) -> bool:
        """Whether a path exists (without following a final symlink)."""
        leaf = self._resolve_or_warn(self._leaf, path)
        if leaf is None:
            return False
        is_link = self._is_link.get(leaf)
        if is_link is None:
            try:
                is_link = stat.S_ISLNK(os.lstat(self._join(leaf)).st_mode)
            except (OSError, ValueError) as exc:
                if isinstance(exc, PermissionError):
                    self.warn(f"cannot read {path}: {exc.strerror}")
                return False
            self._is_link[leaf] = is_link
        if self.recorder is not None:
            if is_link:
                self.recorder.links.add(leaf)
            else:
                real = self._resolve_or_warn(self.realpath, path)
                if real is not None:
                    self.recorder.present.add(real)
        return True

    def is_dir(self, path: str) -> bool:
        real = self._resolve_or_warn(self.realpath, path)
        return real is not None and os.path.isdir(self._join(real))

    def listdir(self, path: str) -> List[str]:
        """Sorted entries of a directory; [] when it is missing (a warning when unreadable)."""
        real = self._resolve_or_warn(self.realpath, path)
        if real is None:
            return []
        try:
            # scandir: each entry's type comes with its name (d_type), no lstat for it later
            with os.scandir(self._join(real)) as entries:
                kinds = {e.name: (e.is_symlink(), e.is_file(follow_symlinks=False)) for e in entries}
        except OSError as exc:
            if isinstance(exc, PermissionError):
                self.warn(f"cannot list {path}: {exc.strerror}")
            return []
        names = sorted(kinds)
        base = real if real != "/" else ""
        for name, (is_link, is_file) in kinds.items():
            self._is_link[base + "/" + name] = is_link
            if is_file:
                self._regular.add(base + "/" + name)
        if self.recorder is not None:
            self.recorder.dirs[real] = names
        return names

    def read_text(self, path: str, max_bytes: int = MAX_READ_BYTES) -> Optional[str]:
        """Text of a file; None when it does not exist. Raises HostReadError when unusable."""
        # The directories above the file are resolved (and cached); the file itself is opened
        # with O_NOFOLLOW, so the common case -- a plain file -- costs one open and no lstat.
        # A file that is a symlink (ELOOP) is resolved in full and opened again.
        # _leaf, inlined: this runs for every file of a probe (20k on a large SR-IOV host).
        norm = path if _is_normal(path) else os.path.normpath(path)
        parent, _, name = norm.rpartition("/")
        if parent:
            real_parent = self._resolved.get(parent) or self._top(parent, path)
            real_host = (real_parent + "/" + name) if real_parent != "/" else "/" + name
        else:
            real_host = norm
        fd = self._open_leaf(real_host, path)
        if fd == _LINK:
            real_host = self.realpath(path)
            fd = self._open_leaf(real_host, path)
        if fd is None:
            return None
        if fd == _LINK:
            raise HostReadError(path, "a symbolic link that does not resolve")
        if self.recorder is not None:
            self.recorder.note_mode(real_host, fd)
        try:
            if real_host.startswith("/sys/"):
                data = _read_sysfs(fd, path, max_bytes)
            else:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise HostReadError(path, _not_regular(st.st_mode))
                data = _read_capped(fd, max_bytes, st.st_size)
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            raise HostReadError(path, f"larger than {max_bytes} bytes")
        if b"\x00" in data:
            raise HostReadError(path, "binary content")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise HostReadError(path, "not UTF-8 text") from None
        if self.recorder is not None:
            self.recorder.files[real_host] = text
        return text

    def _open_leaf(self, real_host: str, path: str) -> Optional[int]:
        """A descriptor of the file at `real_host` (its directories resolved), opened without
        following a last link and without blocking (a FIFO must not hang the probe; the caller's
        fstat refuses it); None when it does not exist, _LINK when it is a symlink. Under a
        root other than `/` the file is lstat'ed first and only a regular file (or a directory,
        which reads as an error) is opened: a device node in an unpacked archive never is."""
        full = self._prefix + real_host if real_host != "/" else self._join("/")
        if self._prefix and real_host not in self._regular:
            try:
                mode = os.lstat(full).st_mode
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise HostReadError(path, exc.strerror or str(exc)) from None
            if stat.S_ISLNK(mode):
                return _LINK
            if not stat.S_ISREG(mode):
                raise HostReadError(path, _not_regular(mode))
        try:
            return os.open(full, _OPEN_LEAF)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return _LINK
            raise HostReadError(path, exc.strerror or str(exc)) from None

    def _open_regular(self, path: str):
        """(real host path, descriptor, stat) of the regular file at `path`, resolved inside the
        root; None when it does not exist; HostReadError when it is anything else."""
        real_host = self.realpath(path)
        fd = self._open_leaf(real_host, path)
        if fd is None:
            return None
        if fd == _LINK:
            raise HostReadError(path, "a symbolic link that does not resolve")
        try:
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise HostReadError(path, exc.strerror or str(exc)) from None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise HostReadError(path, _not_regular(st.st_mode))
        return real_host, fd, st

    def read_head(self, path: str, size: int) -> Optional[bytes]:
        """The first `size` bytes of a binary file (an ACPI table's header); None when it does
        not exist. Raises HostReadError when unreadable (a root-only file read by a user)."""
        found = self._read_regular(path, lambda fd, st: os.read(fd, size))
        if found is None:
            return None
        real_host, data = found
        if self.recorder is not None:
            self.recorder.heads[real_host] = data
        return data

    def read_bytes(self, path: str, max_bytes: int = MAX_READ_BYTES) -> Optional[bytes]:
        """Binary content of a regular file (a capture copies it); None when it does not exist.
        Raises HostReadError when unusable or larger than `max_bytes`."""
        found = self._read_regular(path, lambda fd, st: _read_capped(fd, max_bytes, st.st_size))
        if found is None:
            return None
        real_host, data = found
        if len(data) > max_bytes:
            raise HostReadError(path, f"larger than {max_bytes} bytes")
        if self.recorder is not None:
            self.recorder.blobs[real_host] = data
        return data

    def _read_regular(self, path: str, read):
        """(real path, read(fd, stat)) of a regular file opened without blocking; None when it
        does not exist; HostReadError when it is something else or unreadable."""
        opened = self._open_regular(path)
        if opened is None:
            return None
        real_host, fd, st = opened
        if self.recorder is not None:
            self.recorder.modes[real_host] = stat.S_IMODE(st.st_mode)
        try:
            return real_host, read(fd, st)
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)

    def scan(self, path: str, needle: bytes, tail: int, limit: int) -> Optional[str]:
        """The first `needle` in the file's first `limit` bytes and up to `tail` bytes after it,
        as text up to the first NUL; None when absent. Read in 1 MiB chunks, never whole: the
        file may be a library of hundreds of MB. A capture records the find, not the file
        (recorded/strings/<host path>.txt), and a replay of it answers from that record."""
        return self.scan_counted(path, needle, tail, limit)[0]

    def scan_counted(self, path: str, needle: bytes, tail: int, limit: int) -> Tuple[Optional[str], int]:
        """scan(), and how many bytes it read (0 when a capture's record answered)."""
        real_host = self.realpath(path)
        if not self.is_live:
            recorded = self.read_recording(f"/{RECORDED_DIR}/strings{real_host}.txt")
            if recorded is not None:
                found: Optional[str] = recorded.rstrip("\n")
                self._note_string(real_host, found)
                return found, 0
        opened = self._open_regular(real_host)
        if opened is None:
            raise HostReadError(path, "No such file or directory")
        try:
            with os.fdopen(opened[1], "rb") as fh:
                found = _scan(fh, needle, tail, limit)
                done = fh.tell()
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from None
        self._note_string(real_host, found)
        return found, done

    def owner(self, path: str) -> Optional[Tuple[Optional[int], Optional[int], int]]:
        """(uid, gid, mode) of a path, its last link not followed; None when it does not exist.
        uid and gid are the host's only on the live host, or where a capture recorded them
        (recorded/owners/<host path>.txt, "uid gid mode"): files unpacked under another root
        belong to whoever unpacked them, so there they are None and only the mode counts."""
        real = self._resolve_or_warn(self._leaf, path)
        if real is None:
            return None
        if not self.is_live:
            recorded = self.read_recording(f"/{RECORDED_DIR}/owners{real}.txt")
            if recorded is not None:
                try:
                    uid, gid, mode = (int(x, 0) for x in recorded.split()[:3])
                except ValueError:
                    recorded = None
                else:
                    if self.recorder is not None:
                        self.recorder.owners[real] = (uid, gid, mode)
                    return uid, gid, mode
        try:
            st = os.lstat(self._join(real))
        except OSError:
            return None
        if self.recorder is not None and self.is_live:
            self.recorder.owners[real] = (st.st_uid, st.st_gid, st.st_mode)
        if self.is_live:
            return st.st_uid, st.st_gid, st.st_mode
        return None, None, st.st_mode

    def _note_string(self, real_host: str, found: Optional[str]) -> None:
        if self.recorder is not None:
            self.recorder.present.add(real_host)
            if found is not None:
                self.recorder.strings[real_host] = found

    def environ(self, name: str) -> Optional[str]:
        """An environment variable of the probing process (live), or the value a capture
        recorded (recorded/environ/NAME); None when unset."""
        if self.is_live:
            value = os.environ.get(name)
        else:
            value = self.read_recording(f"/{RECORDED_DIR}/environ/{name}") if "/" not in name else None
        if value is not None and self.recorder is not None:
            self.recorder.environ[name] = value
        return value

    def read_recording(self, path: str) -> Optional[str]:
        """A file a capture wrote beside the host's (commands/, recorded/), read inside the root
        like a host file but not recorded as one; None when absent, a warning when unusable."""
        try:
            opened = self._open_regular(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None
        if opened is None:
            return None
        try:
            return _read_capped(opened[1], MAX_READ_BYTES)[:MAX_READ_BYTES].decode("utf-8", "replace")
        except OSError as exc:
            self.warn(f"cannot read {path}: {exc.strerror or exc}")
            return None
        finally:
            os.close(opened[1])

    def list_recordings(self, path: str) -> Set[str]:
        """Names in a directory of recordings (commands/), resolved inside the root, unrecorded."""
        real = self._resolve_or_warn(self.realpath, path)
        if real is None:
            return set()
        try:
            return set(os.listdir(self._join(real)))
        except OSError as exc:
            if isinstance(exc, PermissionError):
                self.warn(f"cannot list {path}: {exc.strerror}")
            return set()

    def path_for_write(self, path: str, mode: int = 0o755) -> str:
        """Where the file at host path `path` is written on this machine: its directory resolved
        inside the root as a read would resolve it (a link's absolute target taken from the
        root, `..` stopping there: never a path out of the root), the directories missing made
        one by one (a part that is not a directory: HostReadError). The file itself is for the
        caller's writer, which refuses a link or anything but a regular file there."""
        norm = _normpath(path)
        parent, _, name = norm.rpartition("/")
        real_parent = self._top(parent, path) if parent else "/"
        made = ""
        for part in [p for p in real_parent.split("/") if p]:
            made += "/" + part
            full = self._join(made)
            try:
                os.mkdir(full, mode)
            except FileExistsError:
                pass
            except OSError as exc:
                raise HostReadError(path, f"cannot create {made}: {exc.strerror or exc}") from None
            try:
                st = os.lstat(full)
            except OSError as exc:
                raise HostReadError(path, exc.strerror or str(exc)) from None
            if not stat.S_ISDIR(st.st_mode):
                raise HostReadError(path, f"{made} is {kind_of(st.st_mode)}, not a directory")
        return self._join(real_parent.rstrip("/") + "/" + name)

    def _note_link(self, path: str) -> None:
        if self.recorder is not None:
            # Keyed by the link's real location, so a capture never nests a path under a symlink.
            self.recorder.links.add(self._leaf(path))


def _is_normal(path: str) -> bool:
    """Whether os.path.normpath would leave an absolute path as it is (the paths callers build)."""
    return path[:1] == "/" and "//" not in path and "/." not in path and path[-1:] != "/"


def _normpath(path: str) -> str:
    """os.path.normpath, skipped for the paths callers build (already normal)."""
    return path if _is_normal(path) else os.path.normpath(path)


def _not_regular(mode: int) -> str:
    return "is a directory" if stat.S_ISDIR(mode) else "not a regular file"


def _read_sysfs(fd: int, path: str, max_bytes: int) -> bytes:
    """A sysfs attribute: it comes whole in one read when it is shorter than a page, and every
    node of sysfs is a file, a directory or a link -- so no fstat, and no read to see EOF. An
    empty read is checked (a FIFO in a copied tree reads as empty); a page or more reads on."""
    try:
        data = os.read(fd, 65536)
    except IsADirectoryError:
        raise HostReadError(path, "is a directory") from None
    if not data:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise HostReadError(path, _not_regular(mode))
        return data
    if len(data) < 4096:
        return data
    return data + _read_capped(fd, max_bytes)


def _read_capped(fd: int, max_bytes: int, size: int = 0) -> bytes:
    # Small reads: procfs sysctl handlers refuse one huge read() with ENOMEM.
    chunk = os.read(fd, 65536)
    # A file that gave all its stat size at once is done (procfs says 0: read until EOF).
    if not chunk or len(chunk) == size:
        return chunk
    chunks, total = [chunk], len(chunk)
    while total <= max_bytes:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


# --- files named by the operator, or found in a directory others may write ---------------------

_OPEN_INPUT = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def trusted_owners() -> Set[int]:
    """Whose files rocetune reads from a directory another user may write: root's and those of
    the user running it (under sudo, the user who ran sudo too)."""
    owners = {0, os.getuid(), os.geteuid()}
    sudo_uid = os.environ.get("SUDO_UID", "") if os.geteuid() == 0 else ""
    if sudo_uid.isdigit():
        owners.add(int(sudo_uid))
    return owners


def open_input(path: str, follow: bool = True, owners: Optional[Set[int]] = None):
    """(descriptor, stat) of the regular file at `path`, as the host root reads its files: a
    FIFO, a device, a socket or a directory is refused by its stat before it is opened (never
    blocks, never reads a device), the file is opened without blocking and checked again on the
    descriptor; without `follow` a link is refused too; with `owners`, a file that belongs to
    another uid is. HostReadError(path, why) otherwise, FileNotFoundError passed through."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise HostReadError(path, exc.strerror or str(exc)) from None
    _check_input(path, st, owners, follow)
    try:
        fd = os.open(path, _OPEN_INPUT | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    except OSError as exc:
        raise HostReadError(path, exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        _check_input(path, st, owners, follow)  # what was opened, had the path been swapped
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _check_input(path: str, st: os.stat_result, owners: Optional[Set[int]], follow: bool) -> None:
    if not stat.S_ISREG(st.st_mode):
        link = "" if follow or not stat.S_ISLNK(st.st_mode) else ": not followed where others may write"
        raise HostReadError(path, f"{kind_of(st.st_mode)}, not a regular file{link}")
    if owners is not None and st.st_uid not in owners:
        raise HostReadError(path, f"owned by uid {st.st_uid}, not by root or the user running rocetune: "
                                  "not read")


def read_input(path: str, max_bytes: int, follow: bool = True, owners: Optional[Set[int]] = None) -> bytes:
    """The bytes of the regular file at `path` (open_input), at most `max_bytes`: HostReadError
    naming the cap for a larger one, before it is read when its size says so."""
    return read_input_stat(path, max_bytes, follow, owners)[0]


def read_input_stat(path: str, max_bytes: int, follow: bool = True, owners: Optional[Set[int]] = None):
    """read_input, with the stat of the file read (its owner, when who wrote it matters)."""
    fd, st = open_input(path, follow, owners)
    try:
        if st.st_size > max_bytes:
            raise HostReadError(path, f"larger than {_size(max_bytes)}: not read")
        data = _read_capped(fd, max_bytes, st.st_size)
    except OSError as exc:
        raise HostReadError(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise HostReadError(path, f"larger than {_size(max_bytes)}: not read")
    return data, st


def read_input_text(path: str, max_bytes: int, follow: bool = True, owners: Optional[Set[int]] = None) -> str:
    """read_input as UTF-8 text: HostReadError "not UTF-8 text" otherwise."""
    try:
        return read_input(path, max_bytes, follow, owners).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HostReadError(path, f"not UTF-8 text (byte {exc.start})") from None


def iter_input_lines(fd: int, max_line: int, chunk: int = 1 << 20):
    """(line, cut) for each line of an open file, read a chunk at a time: a line longer than
    `max_line` characters comes cut to them with cut=True, its rest skipped, so memory stays
    near `chunk + max_line` whatever the file holds. Lines are decoded as UTF-8 with
    replacement characters, without their newline."""
    carry = b""
    skipping = False
    while True:
        data = os.read(fd, chunk)
        if not data:
            break
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if not skipping:
                line = carry + data[start:end]
                yield _decoded(line, max_line)
            carry, skipping, start = b"", False, end + 1
        if skipping:
            continue
        carry += data[start:]
        if len(carry) > max_line * 4:  # UTF-8: at most 4 bytes a character
            yield _decoded(carry, max_line)[0], True
            carry, skipping = b"", True
    if carry and not skipping:
        yield _decoded(carry, max_line)


def _decoded(line: bytes, max_line: int):
    text = line.decode("utf-8", "replace")
    return (text[:max_line], True) if len(text) > max_line else (text, False)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


class CommandResult:
    """What a command printed and returned; `found=False` when the tool is absent."""

    __slots__ = ("argv", "found", "returncode", "stdout", "stderr", "reason")

    def __init__(self, argv: List[str], found: bool, returncode: int = 0, stdout: str = "",
                 stderr: str = "", reason: str = ""):
        self.argv, self.found, self.returncode = argv, found, returncode
        self.stdout, self.stderr, self.reason = stdout, stderr, reason

    @property
    def ok(self) -> bool:
        return self.found and self.returncode == 0


def recording_name(argv: Sequence[str]) -> str:
    """File name of a recorded command: argv joined by `_`, `/` written as `%2F`."""
    return "_".join(a.replace("%", "%25").replace("/", "%2F") for a in argv)


def which(name: str) -> Optional[str]:
    """shutil.which(name) on Linux, without importing shutil (zlib, bz2 and lzma with it: a few
    ms of a live probe's start)."""
    if "/" in name:
        return name if os.access(name, os.X_OK) and not os.path.isdir(name) else None
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or os.curdir, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


class LiveRunner:
    """Runs commands on this machine, with a timeout; a missing tool is `found=False`.

    `start(argvs)` launches commands ahead of the `run` that reads them, side by side: a probe
    starts its slow independent tools (two nvidia-smi calls, 20-60 ms each on an H100 host,
    `ip -j addr show`, one `mlnx_qos` per RoCE port) before it reads what they precede, and
    `run` then waits only for what is left. At most `parallel` run at once; the rest start as
    earlier ones are read. What `run` returns, and what is recorded, is the same as without
    `start`; `close()` ends what was started and never read.
    """

    def __init__(self, timeout: float = 20.0, recorder: Optional[Recorder] = None,
                 parallel: Optional[int] = None):
        self.timeout = timeout
        self.recorder = recorder
        self.parallel = parallel or min(8, os.cpu_count() or 1)
        self._started: Dict[tuple, tuple] = {}  # argv -> (Popen, deadline)
        self._queued: Dict[tuple, None] = {}  # argvs to start, in order

    def start(self, argvs: Sequence[Sequence[str]]) -> None:
        for argv in argvs:
            key = tuple(argv)
            if key not in self._started:
                self._queued[key] = None
        self._fill()

    def _fill(self) -> None:
        import subprocess
        import time

        while self._queued and len(self._started) < self.parallel:
            key = next(iter(self._queued))
            del self._queued[key]
            if which(key[0]) is None:
                continue  # a missing tool is reported by run()
            try:
                proc = subprocess.Popen(list(key), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"})
            except OSError:
                continue
            self._started[key] = (proc, time.monotonic() + self.timeout)

    def run(self, argv: Sequence[str]) -> CommandResult:
        import subprocess

        argv = list(argv)
        self._queued.pop(tuple(argv), None)  # not started yet: run now
        started = self._started.pop(tuple(argv), None)
        if started is not None:
            result = self._finish(argv, *started)
            self._fill()
        elif which(argv[0]) is None:
            result = CommandResult(argv, found=False, reason=f"{argv[0]} not found on PATH")
        else:
            try:
                proc = subprocess.run(
                    argv, capture_output=True, timeout=self.timeout, check=False,
                    env={**os.environ, "LC_ALL": "C"},
                )
                result = CommandResult(
                    argv, True, proc.returncode,
                    proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
                )
            except subprocess.TimeoutExpired:
                result = CommandResult(argv, True, 124, reason=f"timed out after {self.timeout:g}s")
            except OSError as exc:
                result = CommandResult(argv, False, reason=str(exc))
        if self.recorder is not None and result.found:
            self.recorder.commands[recording_name(argv)] = result
        return result

    def _finish(self, argv: List[str], proc, deadline: float) -> CommandResult:
        import subprocess
        import time

        try:
            out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return CommandResult(argv, True, 124, reason=f"timed out after {self.timeout:g}s")
        return CommandResult(argv, True, proc.returncode, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"))

    def close(self) -> None:
        """End the commands started and never read (a source that failed before reading)."""
        started, self._started, self._queued = self._started, {}, {}
        for proc, _ in started.values():
            proc.kill()
            proc.communicate()


class RecordedRunner:
    """Replays `ROOT/commands/<name>.txt` (stdout), optional `.rc` (exit code) and `.err`."""

    def __init__(self, root: HostRoot):
        self.root = root
        self._names: Optional[Set[str]] = None  # what commands/ holds, listed once

    def _read(self, name: str) -> Optional[str]:
        # A probe asks for a few commands per netdev (QoS tools on 500 SR-IOV VFs): the listing
        # answers "not recorded" without an open for each. Read inside the root, as host files
        # are: a recording that links out of it is refused with a warning.
        if self._names is None:
            self._names = self.root.list_recordings("/commands")
        return self.root.read_recording("/commands/" + name) if name in self._names else None

    def run(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        name = recording_name(argv)
        out = self._read(name + ".txt")
        if out is None:
            return CommandResult(argv, found=False, reason=f"no recording commands/{name}.txt")
        rc_text = self._read(name + ".rc")
        try:
            rc = int(rc_text.strip()) if rc_text else 0
        except ValueError:
            rc = 1
        return CommandResult(argv, True, rc, out, self._read(name + ".err") or "")


def _scan(fh, needle: bytes, tail: int, limit: int) -> Optional[str]:
    carry, done = b"", 0
    while done < limit:
        chunk = fh.read(SCAN_CHUNK)
        if not chunk:
            return None
        buf = carry + chunk
        at = buf.find(needle)
        if at >= 0:
            end = at + len(needle) + tail
            while len(buf) < end:
                more = fh.read(end - len(buf))
                if not more:
                    break
                buf += more
            return buf[at:end].split(b"\0", 1)[0].decode("utf-8", "replace")
        carry = buf[-(len(needle) - 1):] if len(needle) > 1 else b""
        done += len(chunk)
    return None


def start_commands(runner, argvs: Sequence[Sequence[str]]) -> None:
    """Let `runner` start these commands ahead of their `run` (a runner that cannot, or a
    recorded root, runs each when it is asked for)."""
    start = getattr(runner, "start", None)
    if start is not None:
        start(argvs)


def close_runner(runner) -> None:
    close = getattr(runner, "close", None)
    if close is not None:
        close()


def runner_for(root: HostRoot, recorder: Optional[Recorder] = None):
    """Live commands on the real root, recorded ones anywhere else."""
    return LiveRunner(recorder=recorder) if root.is_live else RecordedRunner(root)


class SourceStatus:
    """Whether a source could run, why not, and what it noticed on the way."""

    def __init__(self) -> None:
        self.ok = True
        self.reason: Optional[str] = None
        self.warnings: List[str] = []

    def to_dict(self) -> dict:
        return {"ok": self.ok, "reason": self.reason, "warnings": sorted(set(self.warnings))}


class ProbeContext:
    """What a source gets: the root, the runner, and a place for warnings."""

    def __init__(self, root: HostRoot, runner=None):
        self.root = root
        self.runner = runner if runner is not None else runner_for(root)
        self.status = SourceStatus()

    def for_source(self) -> "ProbeContext":
        return ProbeContext(self.root, self.runner)

    def warn(self, message: str) -> None:
        self.status.warnings.append(message)

    def text(self, path: str) -> Optional[str]:
        try:
            return self.root.read_text(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None

    def attr(self, path: str) -> Optional[str]:
        """A sysfs attribute: stripped text, None when missing, empty or unreadable."""
        try:
            text = self.root.read_text(path)
        except HostReadError as exc:
            self.warn(f"cannot read {exc.path}: {exc.reason}")
            return None
        if text is None:
            return None
        return text.strip() or None

    def int_attr(self, path: str, base: int = 0) -> Optional[int]:
        text = self.attr(path)
        if text is None:
            return None
        try:
            return int(text, base)
        except ValueError:
            self.warn(f"{path}: expected a number, got {text[:40]!r}")
            return None
