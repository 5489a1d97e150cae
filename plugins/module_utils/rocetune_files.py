# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Write a set of small files (and symlinks) in one module call: only those whose content,
mode or target differ, each atomically, with Ansible-style diffs.

A file target must be absent or a regular file: a symlink (in a directory another user may
write, it could point anywhere), a device, a FIFO (reading it would hang), a socket or a
directory is refused by plan_files, before anything changes, with a FileTargetError naming it.
The old content is read without following a link, without blocking and only up to
MAX_OLD_BYTES. The new content goes to a temporary file created with O_EXCL|O_NOFOLLOW beside the
target, gets its mode and group on the open descriptor, is fsync'ed and renamed over the target.

What root writes is root's, exactly as the package's writer (rocetune.fsutil) has it: the new
file is the writer's own (the old file's group is kept only when the writer owned it), its mode
never carries group/world write or set-id bits (KEPT_BITS), and run as root a target is refused
at planning when another user could replace it after the write (directory_problem: a directory
on its path that belongs to another user or that others may write without being root's sticky
one, or a link on the path that another user owns). tests/unit/test_root_writers.py holds both
writers to the same cases.

Pure Python (2.7 and 3): unit-tested on a temporary directory."""

from __future__ import absolute_import, division, print_function

import errno
import os
import stat

__metaclass__ = type

MAX_OLD_BYTES = 4 << 20  # a unit or a drop-in is a few KB; a larger target is not one of ours
KEPT_BITS = 0o755  # what a written file may carry: no group/world write, no set-id or sticky bit
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_OPEN_OLD = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
_OPEN_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


class FileTargetError(ValueError):
    """A target that must not be written or read as one of ours; the message names it."""

    def __init__(self, path, why):
        ValueError.__init__(self, "cannot write %s: %s" % (path, why))
        self.path = path


def _kind(mode):
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def target_stat(path):
    """lstat of a file target: None when absent; FileTargetError when it is not a regular file."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise FileTargetError(path, exc.strerror or str(exc))
    if not stat.S_ISREG(st.st_mode):
        raise FileTargetError(path, "it is %s, not a regular file" % _kind(st.st_mode))
    return st


def directory_problem(directory):
    """Why root must not write a file in `directory` (which need not exist yet), or None: every
    directory on the path, as given and as resolved, belongs to root and is writable by no one
    else unless it is root's sticky directory (/tmp); a link on the path is root's. Nothing is
    refused to any other user: the kernel's permissions are the boundary there."""
    if os.geteuid() != 0:
        return None
    given = os.path.abspath(directory)
    return _chain_problem(given, True) or _chain_problem(os.path.realpath(given), False)


def _chain_problem(path, links):
    parts = [p for p in path.split("/") if p]
    for d in ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]:
        try:
            st = os.lstat(d)
        except OSError:
            return None  # the rest is missing: made by root under the directories checked
        if stat.S_ISLNK(st.st_mode):
            if links and st.st_uid != 0:
                return "%s is a symbolic link of uid %d, who could point it elsewhere" % (d, st.st_uid)
            continue
        sticky = bool(st.st_mode & stat.S_ISVTX)
        if st.st_uid != 0:
            return ("%s belongs to uid %d, who could replace the file after root writes it" % (d, st.st_uid)
                    + (" (a sticky bit keeps users from each other's files, not from its owner)" if sticky else ""))
        if st.st_mode & 0o022 and not sticky:
            who = "others" if st.st_mode & 0o002 else "its group"
            return "%s is writable by %s and not sticky: they could replace the file after root writes it" % (d, who)
    return None


def check_directory(path):
    """FileTargetError naming `path` when root must not write it there (directory_problem)."""
    why = directory_problem(os.path.dirname(os.path.abspath(path)))
    if why:
        raise FileTargetError(path, why)


def read_old(path, max_bytes=MAX_OLD_BYTES):
    """(text, mode) of a file target, (None, None) when absent. Never follows a final link, never
    blocks on a FIFO or device, never reads more than `max_bytes`: FileTargetError instead."""
    try:
        fd = os.open(path, _OPEN_OLD)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None, None
        target_stat(path)  # names the kind: a link fails with ELOOP, a socket with ENXIO
        raise FileTargetError(path, "cannot read the current file: %s" % (exc.strerror or exc))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileTargetError(path, "it is %s, not a regular file" % _kind(st.st_mode))
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise FileTargetError(path, "the current file is larger than %d bytes: not one this role writes"
                                  % max_bytes)
        return b"".join(chunks).decode("utf-8", "replace"), stat.S_IMODE(st.st_mode)
    except OSError as exc:
        raise FileTargetError(path, "cannot read the current file: %s" % (exc.strerror or exc))
    finally:
        os.close(fd)


def read_text(path):
    """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def plan_files(files, links, absent=()):
    """files: [{path, content, mode}], links: [{path, src}], absent: [path] that must not exist
    -> (changes, diffs). FileTargetError, before anything changes, for a target that is not a
    regular file (files), a directory (links), or neither a file nor a link (absent)."""
    changes, diffs = [], []
    for f in files:
        check_directory(f["path"])
        have, mode = read_old(f["path"])
        if have != f["content"] or mode != int(f["mode"], 8) & KEPT_BITS or not _owned(f["path"]):
            changes.append(("file", f))
            diffs.append({"before": have or "", "after": f["content"],
                          "before_header": f["path"], "after_header": f["path"]})
    for link in links:
        check_directory(link["path"])
        if os.path.islink(link["path"]):
            if os.readlink(link["path"]) == link["src"]:
                continue
        elif os.path.lexists(link["path"]) and os.path.isdir(link["path"]):
            raise FileTargetError(link["path"], "it is a directory, not a symbolic link")
        changes.append(("link", link))
        diffs.append({"before": "", "after": "-> %s\n" % link["src"],
                      "before_header": link["path"], "after_header": link["path"]})
    for path in absent:
        if os.path.islink(path):
            before = "-> %s\n" % os.readlink(path)
        elif os.path.lexists(path):
            before = read_old(path)[0] or ""
        else:
            continue
        changes.append(("remove", {"path": path}))
        diffs.append({"before": before, "after": "", "before_header": path, "after_header": path})
    return changes, diffs


def _owned(path):
    """Whether an existing target is the writer's own (as root, another user's file is replaced)."""
    st = target_stat(path)
    return st is None or os.geteuid() != 0 or st.st_uid == 0


def _temp_name(path, n):
    return os.path.join(os.path.dirname(path), ".%s.rocetune-tmp-%d-%d" % (os.path.basename(path), os.getpid(), n))


def _write_file(path, content, mode):
    """content to a new temporary file beside `path`: mode (less KEPT_BITS) and, when the writer
    owned the old file, its group set on the descriptor, fsync'ed, renamed over `path`."""
    st = target_stat(path)
    data = content.encode("utf-8")
    for n in range(100):
        tmp = _temp_name(path, n)
        try:
            fd = os.open(tmp, _OPEN_TEMP, 0o600)
            break
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
    else:
        raise FileTargetError(path, "no free temporary name beside it")
    try:
        try:
            os.fchmod(fd, mode & KEPT_BITS)
            if st is not None and st.st_uid == os.geteuid() and st.st_gid != os.getegid():
                try:
                    os.fchown(fd, -1, st.st_gid)
                except OSError as exc:
                    if exc.errno != errno.EPERM:
                        raise
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def apply_changes(changes):
    for kind, item in changes:
        if kind == "remove":
            os.unlink(item["path"])
            continue
        parent = os.path.dirname(item["path"])
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        if kind == "link":
            tmp = _temp_name(item["path"], 0)
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(item["src"], tmp)
            os.rename(tmp, item["path"])
            continue
        _write_file(item["path"], item["content"], int(item["mode"], 8))
