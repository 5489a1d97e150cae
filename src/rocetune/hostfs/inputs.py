"""Files named by the operator, or found in a directory others may write: read only when they
are regular files, without blocking, capped, and (where asked) owned by root or the user."""

from __future__ import annotations

import os
import stat
from typing import Optional, Set

from ..errors import HostReadError
from .reads import kind_of, read_capped

_OPEN_INPUT = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


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
        data = read_capped(fd, max_bytes, st.st_size)
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
