"""Low-level reads the host root and the operator's files share: one bounded read of a sysfs
attribute or of any regular file, what kind of file a mode names, and a search inside a large file
that never holds more than a chunk of it."""

from __future__ import annotations

import os
import stat
from typing import Optional

from ..errors import HostReadError

SCAN_CHUNK = 1 << 20
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def is_normal(path: str) -> bool:
    """Whether os.path.normpath would leave an absolute path as it is (the paths callers build)."""
    return path[:1] == "/" and "//" not in path and "/." not in path and path[-1:] != "/"


def normpath(path: str) -> str:
    """os.path.normpath, skipped for the paths callers build (already normal)."""
    return path if is_normal(path) else os.path.normpath(path)


def not_regular(mode: int) -> str:
    return "is a directory" if stat.S_ISDIR(mode) else "not a regular file"


def read_sysfs(fd: int, path: str, max_bytes: int) -> bytes:
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
            raise HostReadError(path, not_regular(mode))
        return data
    if len(data) < 4096:
        return data
    return data + read_capped(fd, max_bytes)


def read_capped(fd: int, max_bytes: int, size: int = 0) -> bytes:
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


def scan_file(fh, needle: bytes, tail: int, limit: int) -> Optional[str]:
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
