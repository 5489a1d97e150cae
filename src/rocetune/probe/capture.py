"""Snapshot exactly what a probe reads into a tarball that `--root` can replay."""

from __future__ import annotations

import gzip
import io
import os
import re
import tarfile
from typing import Callable, Dict, Optional, Tuple

from ..fsutil import atomic_write_bytes
from ..hostfs.command import recording_name
from ..hostfs.context import ProbeContext
from ..hostfs.recorder import Recorder
from ..hostfs.root import RECORDED_DIR, HostRoot
from ..hostfs.runners import LiveRunner, RecordedRunner
from .collect import collect_features
from .sources.verbs import IBV_DEVINFO_ARGV


class _RecordingReplay:
    """Replays a recorded root while noting the commands, so a capture of a capture works."""

    def __init__(self, root: HostRoot, recorder: Recorder):
        self.inner = RecordedRunner(root)
        self.recorder = recorder

    def run(self, argv):
        result = self.inner.run(argv)
        if result.found:
            self.recorder.commands[recording_name(argv)] = result
        return result


def record(root: str = "/", also: Optional[Callable[[ProbeContext, dict], object]] = None) -> Tuple[dict, Recorder]:
    """Probe `root` and return the Features plus everything the probe touched; `also(ctx,
    features)` reads more through the same recording root and runner (doctor's readings)."""
    rec = Recorder()
    host_root = HostRoot(root, recorder=rec)
    runner = LiveRunner(recorder=rec) if host_root.is_live else _RecordingReplay(host_root, rec)
    features = collect_features(root, recorder=rec, runner=runner)
    # A live probe reads ports with pyverbs; its command-line twin is what a replay reads.
    runner.run(IBV_DEVINFO_ARGV)
    if also is not None:
        also(ProbeContext(host_root, runner), features)
    return features, rec


def _info(name: str, kind: bytes, size: int = 0, mode: int = 0o644, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.size, ti.mode, ti.linkname = kind, size, mode, link
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "root", "root"
    return ti


_PID_DIR = re.compile(r"^/proc/\d+(?=/|$)")


def _stable(path: str) -> str:
    """`/proc/<pid of the probe>/limits` -> `/proc/self/limits`: the same host gives the same bytes."""
    return _PID_DIR.sub("/proc/self", path)


def archived_mode(source_mode: Optional[int]) -> int:
    """An archived file's mode: no more readable than its source (a root-only file stays
    owner-only), always readable by its owner."""
    return 0o644 if source_mode is None else (source_mode & 0o644) | 0o400


def archived_link(path: str, target: str) -> str:
    """The target a link at host path `path` gets in the archive: what it names on the host (an
    absolute target from the host's root, `..` stopping there, as the probe resolved it), made
    relative to the link's directory. Unpacked anywhere, it points inside the unpacked tree --
    never at the real /sys of the machine it is unpacked on, or above the tree. `path`'s
    directory has no link in it (the recorder keys links by their real place)."""
    where = os.path.dirname(os.path.normpath(path)) or "/"
    named = os.path.normpath(os.path.join(where, target))  # an absolute target replaces `where`
    if named.startswith("//"):
        named = "/" + named.lstrip("/")
    return os.path.relpath(named, where)


def archive_mode(rec: Recorder) -> int:
    """The capture file's own mode: 0600 when any file in it was not readable by everyone."""
    return 0o600 if any(not m & 0o004 for m in rec.modes.values()) else 0o644


def build_tar(root: str, rec: Recorder) -> bytes:
    """Deterministic tar.gz of the recorded paths, laid out as a root (plus commands/)."""
    t = _Tree(HostRoot(root), rec)
    t.add_host_paths()
    t.add_recorded()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(t.entries):
            body = t.payload.get(name)
            tar.addfile(t.entries[name], io.BytesIO(body) if body is not None else None)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


class _Tree:
    """The archive's entries and file contents, as build_tar lays them out."""

    def __init__(self, host: HostRoot, rec: Recorder) -> None:
        self.host = host
        self.rec = rec
        self.entries: Dict[str, tarfile.TarInfo] = {}
        self.payload: Dict[str, bytes] = {}

    def add_dir(self, path: str) -> None:
        rel = _stable(path).strip("/")
        while rel and rel not in self.entries:
            self.entries[rel] = _info(rel, tarfile.DIRTYPE, mode=0o755)
            rel = os.path.dirname(rel)

    def add_link(self, path: str) -> None:
        target = archived_link(path, os.readlink(self.host.host_path(path)))
        self.add_dir(os.path.dirname(path))
        self.entries[path.strip("/")] = _info(path.strip("/"), tarfile.SYMTYPE, mode=0o777, link=target)

    def add_file(self, path: str, data: bytes) -> None:
        mode = archived_mode(self.rec.modes.get(path))
        path = _stable(path)
        self.add_dir(os.path.dirname(path))
        self.entries[path.strip("/")] = _info(path.strip("/"), tarfile.REGTYPE, size=len(data), mode=mode)
        self.payload[path.strip("/")] = data

    def add_host_paths(self) -> None:
        """The host's links, directories, files and the bytes the probe read of them."""
        rec, host = self.rec, self.host
        for path in rec.links:
            if path in ("/proc/self", "/proc/thread-self"):
                continue  # stored as a directory, see _stable
            if os.path.islink(host.host_path(path)):
                self.add_link(path)
        for path in rec.dirs:
            # Only the listed directory itself: sources touch every entry they rely on.
            self.add_dir(path)
        for path in rec.present:
            real = host.host_path(path)
            if os.path.isdir(real):
                self.add_dir(path)
            elif path.strip("/") not in self.entries:
                self.add_file(path, b"")
        for path, text in rec.files.items():
            self.add_file(path, text.encode("utf-8"))
        for path, data in rec.heads.items():
            self.add_file(path, data)  # the bytes read, not the whole file: a replay reads the same
        for path, data in rec.blobs.items():
            self.add_file(path, data)

    def add_recorded(self) -> None:
        """Not host files: what the probe found inside a file too large to copy, the owners and
        environment variables it judged or read (hostfs.root.HostRoot.scan and .environ replay
        them), and the commands it ran."""
        rec = self.rec
        for path, found in rec.strings.items():
            self.add_file(f"/{RECORDED_DIR}/strings{path}.txt", (found + "\n").encode("utf-8"))
        for path, (uid, gid, mode) in rec.owners.items():
            # who owns a directory or library the probe judged (nccl_libs): the archive's own
            # entries are root's, so the host's owners are kept beside them
            self.add_file(f"/{RECORDED_DIR}/owners{path}.txt", f"{uid} {gid} {mode:#o}\n".encode())
        for name, value in rec.environ.items():
            self.add_file(f"/{RECORDED_DIR}/environ/{name}", value.encode("utf-8"))
        for name, result in rec.commands.items():
            self.add_file(f"/commands/{name}.txt", result.stdout.encode("utf-8"))
            if result.returncode:
                self.add_file(f"/commands/{name}.rc", f"{result.returncode}\n".encode())
            if result.stderr:
                self.add_file(f"/commands/{name}.err", result.stderr.encode("utf-8"))


def capture(root: str, out_path: str,
            also: Optional[Callable[[ProbeContext, dict], object]] = None) -> Tuple[dict, int]:
    features, rec = record(root, also)
    data = build_tar(root, rec)
    # A new archive, never the old one's mode: a capture of root-only files is root-only.
    atomic_write_bytes(out_path, data, archive_mode(rec), keep_mode=False)
    return features, len(data)
