"""Rooted host I/O: every file read and every command goes through here.

`HostRoot` reads files of a host that may be mounted, unpacked or built anywhere (`--root DIR`);
paths are always written as on the host (`/sys/class/net`), never joined by callers.
`LiveRunner` runs commands on this machine; `RecordedRunner` replays `ROOT/commands/<argv>.txt`.
Both can record what was touched, which is how `rocetune capture` writes exactly what was read.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Sequence, Set

from .errors import HostReadError

MAX_READ_BYTES = 4 << 20
_MAX_LINK_HOPS = 40


class Recorder:
    """Collects the host paths a probe touched and the commands it ran."""

    def __init__(self) -> None:
        self.files: Dict[str, str] = {}  # host path -> the text the probe read
        self.present: Set[str] = set()  # paths whose existence mattered, not their content
        self.dirs: Dict[str, List[str]] = {}
        self.links: Set[str] = set()
        self.commands: Dict[str, "CommandResult"] = {}


class HostRoot:
    """Files of one host, seen through a root directory."""

    def __init__(self, root: str = "/", recorder: Optional[Recorder] = None):
        self.root = os.path.abspath(root)
        self.recorder = recorder
        self._resolved: Dict[str, str] = {}  # host path -> real host path

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
        norm = os.path.normpath(path)
        return "/" if norm == "/" else self._real(norm, 0)

    def _real(self, path: str, hops: int) -> str:
        # Every prefix is resolved once and cached: a probe reads thousands of files in the
        # same few hundred directories, so each directory costs one lstat.
        hit = self._resolved.get(path)
        if hit is not None:
            return hit
        parent, name = os.path.split(path)
        real_parent = "/" if parent == "/" else self._real(parent, hops)
        candidate = real_parent.rstrip("/") + "/" + name
        real = self._join(candidate)
        if hops < _MAX_LINK_HOPS and os.path.islink(real):
            if self.recorder is not None:
                self.recorder.links.add(candidate)
            target = os.readlink(real)
            # real_parent has no links left in it, so ".." in the target can be folded lexically.
            result = self._real(os.path.normpath(os.path.join(real_parent, target)), hops + 1)
        else:
            result = candidate
        self._resolved[path] = result
        return result

    def readlink(self, path: str) -> Optional[str]:
        try:
            parent, name = os.path.split(os.path.normpath(path))
            target = os.readlink(self._join(self.realpath(parent).rstrip("/") + "/" + name))
        except OSError:
            return None
        self._note_link(path)
        return target

    def link_name(self, path: str) -> Optional[str]:
        """Basename of a symlink's target (`.../driver` -> `mlx5_core`), or None."""
        target = self.readlink(path)
        return os.path.basename(target.rstrip("/")) if target else None

    # --- queries -------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        """Whether a path exists (without following a final symlink)."""
        parent, name = os.path.split(os.path.normpath(path))
        real = self._join(self.realpath(parent).rstrip("/") + "/" + name)
        ok = os.path.lexists(real)
        if ok and self.recorder is not None:
            if os.path.islink(real):
                self._note_link(path)
            else:
                self.recorder.present.add(self.realpath(path))
        return ok

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.host_path(self.realpath(path)))

    def listdir(self, path: str) -> List[str]:
        """Sorted entries of a directory; [] when it is missing or unreadable."""
        real = self.host_path(self.realpath(path))
        try:
            names = sorted(os.listdir(real))
        except OSError:
            return []
        if self.recorder is not None:
            self.recorder.dirs[self.realpath(path)] = names
        return names

    def read_text(self, path: str, max_bytes: int = MAX_READ_BYTES) -> Optional[str]:
        """Text of a file; None when it does not exist. Raises HostReadError when unusable."""
        real_host = self.realpath(path)
        try:
            # O_NONBLOCK: opening a FIFO must not hang the probe; fstat below refuses it.
            fd = os.open(self._join(real_host), os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HostReadError(path, exc.strerror or str(exc)) from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise HostReadError(path, "is a directory")
            if not stat.S_ISREG(mode):
                raise HostReadError(path, "not a regular file")
            data = _read_capped(fd, max_bytes)
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

    def _note_link(self, path: str) -> None:
        if self.recorder is not None:
            # Keyed by the link's real location, so a capture never nests a path under a symlink.
            parent, name = os.path.split(os.path.normpath(path))
            self.recorder.links.add(os.path.join(self.realpath(parent), name))


def _read_capped(fd: int, max_bytes: int) -> bytes:
    # Small reads: procfs sysctl handlers refuse one huge read() with ENOMEM.
    chunks, total = [], 0
    while total <= max_bytes:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


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


class LiveRunner:
    """Runs commands on this machine, with a timeout; a missing tool is `found=False`."""

    def __init__(self, timeout: float = 20.0, recorder: Optional[Recorder] = None):
        self.timeout = timeout
        self.recorder = recorder

    def run(self, argv: Sequence[str]) -> CommandResult:
        import shutil
        import subprocess

        argv = list(argv)
        if shutil.which(argv[0]) is None:
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


class RecordedRunner:
    """Replays `ROOT/commands/<name>.txt` (stdout), optional `.rc` (exit code) and `.err`."""

    def __init__(self, root: HostRoot):
        self.root = root

    def _file(self, name: str) -> str:
        return os.path.join(self.root.root, "commands", name)

    def run(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        name = recording_name(argv)
        out = _read_recording(self._file(name + ".txt"))
        if out is None:
            return CommandResult(argv, found=False, reason=f"no recording commands/{name}.txt")
        rc_text = _read_recording(self._file(name + ".rc"))
        try:
            rc = int(rc_text.strip()) if rc_text else 0
        except ValueError:
            rc = 1
        return CommandResult(argv, True, rc, out, _read_recording(self._file(name + ".err")) or "")


def _read_recording(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


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
        text = self.text(path)
        if text is None:
            return None
        text = text.strip()
        return text or None

    def int_attr(self, path: str, base: int = 0) -> Optional[int]:
        text = self.attr(path)
        if text is None:
            return None
        try:
            return int(text, base)
        except ValueError:
            self.warn(f"{path}: expected a number, got {text[:40]!r}")
            return None
