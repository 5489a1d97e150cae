"""`HostRoot`: the files of one host, seen through a root directory (`--root DIR`)."""

from __future__ import annotations

import errno
import os
import stat
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..errors import HostReadError
from .reads import is_normal, kind_of, normpath, not_regular, read_capped, read_sysfs, scan_file
from .recorder import Recorder

MAX_READ_BYTES = 4 << 20
# What a capture records beside the host's files and commands/: the environment variables the
# probe read (environ/NAME) and the strings it found inside files too large to copy
# (strings/<host path>.txt); a replay reads them instead. See docs/cli.md (capture).
RECORDED_DIR = "recorded"
_MAX_LINK_HOPS = 40
_OPEN_LEAF = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_LINK = -1  # what _open_leaf answers for a final component that is a symlink
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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
        norm = normpath(path)
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
            result = self._real(normpath(os.path.join(real_parent, target)), hops + 1)
        self._resolved[path] = result
        return result

    def _leaf(self, path: str) -> str:
        """The host path of `path` with every directory above it resolved, the last part as is."""
        norm = normpath(path)
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
        norm = path if is_normal(path) else os.path.normpath(path)
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
                data = read_sysfs(fd, path, max_bytes)
            else:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise HostReadError(path, not_regular(st.st_mode))
                data = read_capped(fd, max_bytes, st.st_size)
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

    def read_texts(self, directory: str, names: Sequence[str], max_bytes: int = MAX_READ_BYTES
                   ) -> Tuple[Dict[str, Optional[str]], Dict[str, HostReadError]]:
        """read_text of each `directory/name`, in one batch: the directory is resolved and opened
        once and each file opened relative to it, only once it is known to be a regular file
        (sysfs attributes: a GID table is 255 files a port). Returns (texts, errors): a text, or
        None when missing, for each name; the HostReadError read_text would raise for the others.
        Anything but a plain small file (a link, a special file, a capture being recorded)
        takes read_text itself."""
        texts: Dict[str, Optional[str]] = {}
        errors: Dict[str, HostReadError] = {}
        slow: List[str] = list(names)
        if self.recorder is None and names:
            try:
                real_dir = self.realpath(directory)
                dfd = os.open(self._join(real_dir), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
            except (HostReadError, OSError):
                dfd = None
            if dfd is not None:
                try:
                    slow = self._read_batch(dfd, real_dir, names, max_bytes, texts)
                finally:
                    os.close(dfd)
        for name in slow:
            try:
                texts[name] = self.read_text(f"{directory}/{name}", max_bytes)
            except HostReadError as exc:
                errors[name] = exc
        return texts, errors

    def _read_batch(self, dfd: int, real_dir: str, names: Sequence[str], max_bytes: int,
                    texts: Dict[str, Optional[str]]) -> List[str]:
        """The plain case of read_texts; the names it leaves to read_text."""
        base = real_dir if real_dir != "/" else ""
        sysfs = real_dir.startswith("/sys/")
        checked = bool(self._prefix)  # under a root: only what a listing saw as a regular file
        regular = self._regular
        slow: List[str] = []
        for name in names:
            if "/" in name:
                slow.append(name)
                continue
            if checked and base + "/" + name not in regular:
                try:  # an lstat relative to the directory: a device node is never opened
                    if not stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                        slow.append(name)
                        continue
                except FileNotFoundError:
                    texts[name] = None
                    continue
                except OSError:
                    slow.append(name)
                    continue
            try:
                fd = os.open(name, _OPEN_LEAF, dir_fd=dfd)
            except FileNotFoundError:
                texts[name] = None
                continue
            except OSError:
                slow.append(name)
                continue
            try:
                data = os.read(fd, 65536) if sysfs else b""
            except OSError:
                data = b""
            finally:
                os.close(fd)
            if not data or len(data) >= 4096 or b"\x00" in data:
                slow.append(name)  # empty, large, not a sysfs file or binary: read_text decides
                continue
            try:
                texts[name] = data.decode("utf-8")
            except UnicodeDecodeError:
                slow.append(name)
        return slow

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
                raise HostReadError(path, not_regular(mode))
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
            raise HostReadError(path, not_regular(st.st_mode))
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
        found = self._read_regular(path, lambda fd, st: read_capped(fd, max_bytes, st.st_size))
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
                found = scan_file(fh, needle, tail, limit)
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
            return read_capped(opened[1], MAX_READ_BYTES)[:MAX_READ_BYTES].decode("utf-8", "replace")
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

    def path_inside(self, path: str) -> str:
        """Where the file at host path `path` is on this machine, its directories resolved inside
        the root as a read resolves them (never a path out of the root), the last part as is (a
        link there is the caller's to refuse). HostReadError when a directory cannot be resolved."""
        return self._join(self._leaf(path))

    def path_for_write(self, path: str, mode: int = 0o755) -> str:
        """Where the file at host path `path` is written on this machine: its directory resolved
        inside the root as a read would resolve it (a link's absolute target taken from the
        root, `..` stopping there: never a path out of the root), the directories missing made
        one by one (a part that is not a directory: HostReadError). The file itself is for the
        caller's writer, which refuses a link or anything but a regular file there."""
        norm = normpath(path)
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
