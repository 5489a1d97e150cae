"""Writing files safely: a reader sees the old file or the new one, never half of one.

The one writer of rocetune: the package (through `rocetune.fsutil`, which turns its errors into
OUTPUT errors) and the collection's modules (plugins/module_utils/rocetune_files.py, a copy that
tools/sync_module_utils.py writes from this file) both write through it. Standard library only.

A target must be absent or a regular file: a device (`-o /dev/null` run as root would replace the
device node), a FIFO (a reader would hang), a socket, a directory or a symlink (a link in a
directory someone else owns could point anywhere) is refused with a FileTargetError naming it,
before anything is written. An existing target is read without following a link, without
blocking, and only up to `MAX_OLD_BYTES`. The new content goes to a temporary file created with
O_EXCL beside the target, gets its mode and group on the open descriptor, is fsync'ed and renamed
over the target.

What root writes is root's (docs/security.md). The new file is the writer's own: an existing
file's permission bits are kept less group and world write and the set-id and sticky bits, and
its group only when the writer owned it -- never the owner of a file another user put there first
(in /tmp, that user would go on writing what root wrote). Run as root, a target is refused when
another user could replace it after the write: a directory on its path that belongs to another
user, that its group or others may write without being root's own sticky directory, or a link
on the path that another user owns (`directory_problem`). tests/unit/test_root_writers.py holds
both entry points to these rules.

The modules plan a set of files first and apply it later (`plan_files`, `apply_changes`: only
what differs, with Ansible-style diffs, symlinks and removals included).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

MAX_OLD_BYTES = 4 << 20  # an env file is a few KB; a larger target is not one of ours
KEPT_BITS = 0o755  # what a written file may carry: no group/world write, no set-id or sticky bit
TEMP_MARK = ".rocetune-tmp-"  # .NAME.rocetune-tmp-<pid>-<n>: ours, and which process made it
_OPEN_OLD = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_TEMP = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
              | getattr(os, "O_CLOEXEC", 0))
_counter = [0]


class FileTargetError(ValueError):
    """A target that cannot or must not be written (a device, a link, too large, no room); the
    message names it. `why` is the reason alone, `hint` what to do (None: write a regular file)."""

    def __init__(self, path: str, why: str, hint: Optional[str] = None):
        super().__init__(f"cannot write {path}: {why}")
        self.path = path
        self.why = why
        self.hint = hint


UNSAFE_DIR_HINT = "write it in a directory only root may change, or run as the user who owns the directory"


def directory_problem(directory: str) -> Optional[str]:
    """Why root must not write a file in `directory` (which need not exist yet), or None.

    Root's file must stay root's: every directory on the path, as given and as resolved, must
    belong to root and be writable by no one else -- unless it is root's own sticky directory
    (/tmp), where no other user may rename or remove a file root owns. A link on the path must
    be root's (its owner could point it elsewhere between the check and the write). As any other
    user, the kernel's permissions are the boundary and nothing is refused here."""
    if os.geteuid() != 0:
        return None
    given = os.path.abspath(directory)
    return _chain_problem(given, links=True) or _chain_problem(os.path.realpath(given), links=False)


def _chain_problem(path: str, links: bool) -> Optional[str]:
    parts = [p for p in path.split("/") if p]
    prefixes = ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for d in prefixes:
        try:
            st = os.lstat(d)
        except OSError:
            return None  # the rest is missing: made by root under the directories checked
        if stat.S_ISLNK(st.st_mode):
            if links and st.st_uid != 0:
                return f"{d} is a symbolic link of uid {st.st_uid}, who could point it elsewhere"
            continue  # its target's directories are checked on the resolved path
        why = _dir_mode_problem(d, st)
        if why:
            return why
    return None


def _dir_mode_problem(d: str, st: os.stat_result) -> Optional[str]:
    sticky = bool(st.st_mode & stat.S_ISVTX)
    if st.st_uid != 0:
        return (f"{d} belongs to uid {st.st_uid}, who could replace the file after root writes it"
                + (" (a sticky bit keeps users from each other's files, not from its owner)" if sticky else ""))
    if st.st_mode & 0o022 and not sticky:
        who = "others" if st.st_mode & 0o002 else "its group"
        return f"{d} is writable by {who} and not sticky: they could replace the file after root writes it"
    return None


def check_directory(path: str) -> None:
    """FileTargetError naming `path` when root must not write it there (directory_problem)."""
    why = directory_problem(os.path.dirname(os.path.abspath(path)))
    if why:
        raise FileTargetError(path, why, hint=UNSAFE_DIR_HINT)


@dataclass
class Target:
    """One file of a set written together: `mode` for a new file; an existing one keeps its own
    mode unless `keep_mode` is false (either less KEPT_BITS). `owner` (uid, gid) of an original
    this file copies: its group is kept when the writer owned it."""

    path: str
    data: bytes
    mode: int = 0o644
    keep_mode: bool = True
    owner: Optional[Tuple[int, int]] = None


def kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def target_stat(path: str) -> Optional[os.stat_result]:
    """lstat of a target: None when absent; FileTargetError when it is anything but a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise FileTargetError(path, "a part of its directory is not a directory") from None
    except OSError as exc:
        raise FileTargetError(path, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise FileTargetError(path, f"it is {kind_of(st.st_mode)}, not a regular file")
    return st


def read_old(path: str, max_bytes: int = MAX_OLD_BYTES) -> Optional[bytes]:
    """The current content of a target (to compare, diff or back up): None when absent.
    Never follows a final link, never blocks, never reads more than `max_bytes`: FileTargetError."""
    try:
        fd = os.open(path, _OPEN_OLD)
    except FileNotFoundError:
        return None
    except OSError as exc:
        target_stat(path)  # names the kind when it is a link (ELOOP) or a part is not a directory
        raise FileTargetError(path, f"cannot read the current file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileTargetError(path, f"it is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > max_bytes:
            raise FileTargetError(path, _too_large(max_bytes))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise FileTargetError(path, _too_large(max_bytes))
        return b"".join(chunks)
    except OSError as exc:
        raise FileTargetError(path, f"cannot read the current file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _too_large(max_bytes: int) -> str:
    return f"the current file is larger than {max_bytes} bytes: not one rocetune writes"


def read_old_text(path: str, max_bytes: int = MAX_OLD_BYTES) -> Optional[str]:
    data = read_old(path, max_bytes)
    return None if data is None else data.decode("utf-8", "replace")


def can_create_in(directory: str, path: str) -> None:
    """Whether a temporary file can be made in `directory` (what --check asks without writing):
    one is created and removed at once. FileTargetError naming `path` when it cannot."""
    check_directory(path)
    try:
        fd, tmp = _make_temp(directory, os.path.basename(path), 0o600)
    except OSError as exc:
        raise FileTargetError(path, exc.strerror or str(exc),
                              hint="check that the directory exists and is writable") from None
    os.close(fd)
    _unlink(tmp)


def write_files(targets: Sequence[Target]) -> None:
    """Write every target as one unit: each is checked, then every temporary file is written and
    fsync'ed, and only then are they renamed over the targets. A failure before the renames
    (a refused target, ENOSPC) removes the temporary files and leaves every old file as it was:
    FileTargetError naming the target."""
    stats = [target_stat(t.path) for t in targets]
    for t in targets:
        check_directory(t.path)
    temps: List[str] = []
    current = ""
    try:
        for t, st in zip(targets, stats):
            current = t.path
            temps.append(_write_temp(t, st))
        for i, t in enumerate(targets):
            current = t.path
            os.replace(temps[i], t.path)
            temps[i] = ""
    except OSError as exc:
        for tmp in temps:
            if tmp:
                _unlink(tmp)
        changed = "" if all(temps) else " (the files before it in the set were written)"
        raise FileTargetError(current, (exc.strerror or str(exc)) + changed,
                              hint="check that the directory exists and is writable, and has room") from None
    except BaseException:
        for tmp in temps:
            if tmp:
                _unlink(tmp)
        raise
    for directory in sorted({os.path.dirname(os.path.abspath(t.path)) for t in targets}):
        _fsync_dir(directory)


def atomic_write_bytes(path: str, data: bytes, mode: int = 0o644, keep_mode: bool = True) -> None:
    """One file through `write_files`."""
    write_files([Target(path, data, mode, keep_mode)])


def atomic_write(path: str, text: str, mode: int = 0o644) -> None:
    """`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def _write_temp(t: Target, old: Optional[os.stat_result]) -> str:
    directory = os.path.dirname(os.path.abspath(t.path))
    name = os.path.basename(t.path)
    clean_stale_temps(directory, name)
    fd, tmp = _make_temp(directory, name, 0o600)
    try:
        view = memoryview(t.data)
        while view:
            view = view[os.write(fd, view):]
        if old is not None and t.keep_mode:
            os.fchmod(fd, stat.S_IMODE(old.st_mode) & KEPT_BITS)
            _keep_group(fd, old.st_uid, old.st_gid)
        else:
            os.fchmod(fd, t.mode & KEPT_BITS)
            if t.owner is not None:
                _keep_group(fd, *t.owner)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _keep_group(fd: int, uid: int, gid: int) -> None:
    """The group of a file the writer itself owned; another user's file gives nothing."""
    if uid != os.geteuid() or gid == os.getegid():
        return
    try:
        os.fchown(fd, -1, gid)
    except PermissionError:
        pass  # not root, and not in that group: the new file has the writer's group


def _make_temp(directory: str, name: str, mode: int):
    while True:
        _counter[0] += 1
        tmp = os.path.join(directory, f".{name}{TEMP_MARK}{os.getpid()}-{_counter[0]}")
        try:
            return os.open(tmp, _OPEN_TEMP, mode), tmp
        except FileExistsError:
            continue


def clean_stale_temps(directory: str, name: str) -> List[str]:
    """Remove the temporary files a killed writer of `name` left in `directory`: ours by name,
    regular files owned by this user, made by a process that is gone. Returns what was removed."""
    prefix = f".{name}{TEMP_MARK}"
    removed: List[str] = []
    try:
        entries = [e for e in os.listdir(directory) if e.startswith(prefix)]
    except OSError:
        return removed
    for entry in entries:
        pid_text = entry[len(prefix):].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        path = os.path.join(directory, entry)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
            _unlink(path)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def read_text(path: str) -> Optional[str]:
    """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def read_current(path: str) -> Tuple[Optional[str], Optional[int]]:
    """(text, permission bits) of a file target, (None, None) when absent; read as `read_old`
    reads (FileTargetError for a link, a FIFO, a device, or more than MAX_OLD_BYTES)."""
    data = read_old(path)
    if data is None:
        return None, None
    st = os.lstat(path)
    return data.decode("utf-8", "replace"), stat.S_IMODE(st.st_mode)


def plan_files(files: Sequence[dict], links: Sequence[dict], absent: Sequence[str] = ()) -> Tuple[list, list]:
    """files: [{path, content, mode ("0644")}], links: [{path, src}], absent: [path] that must not
    exist -> (changes, diffs), only what differs. FileTargetError, before anything changes, for a
    target that is not a regular file (files), a directory (links), or neither a file nor a link
    (absent), or that root must not write there (directory_problem)."""
    changes: list = []
    diffs: list = []
    for f in files:
        check_directory(f["path"])
        have, mode = read_current(f["path"])
        if have != f["content"] or mode != int(f["mode"], 8) & KEPT_BITS or not _owned(f["path"]):
            changes.append(("file", f))
            diffs.append(_diff(f["path"], have or "", f["content"]))
    for link in links:
        check_directory(link["path"])
        if os.path.islink(link["path"]):
            if os.readlink(link["path"]) == link["src"]:
                continue
        elif os.path.lexists(link["path"]) and os.path.isdir(link["path"]):
            raise FileTargetError(link["path"], "it is a directory, not a symbolic link")
        changes.append(("link", link))
        diffs.append(_diff(link["path"], "", f"-> {link['src']}\n"))
    for path in absent:
        if os.path.islink(path):
            before = f"-> {os.readlink(path)}\n"
        elif os.path.lexists(path):
            before = read_current(path)[0] or ""
        else:
            continue
        changes.append(("remove", {"path": path}))
        diffs.append(_diff(path, before, ""))
    return changes, diffs


def _diff(path: str, before: str, after: str) -> dict:
    return {"before": before, "after": after, "before_header": path, "after_header": path}


def _owned(path: str) -> bool:
    """Whether an existing target is the writer's own (as root, another user's file is replaced)."""
    st = target_stat(path)
    return st is None or os.geteuid() != 0 or st.st_uid == 0


def apply_changes(changes: Sequence[Tuple[str, dict]]) -> None:
    """Carry out what plan_files planned, in its order: a file through write_files (its mode as
    planned, its group kept when the writer owned the old one), a link made beside and renamed
    over, a removal. FileTargetError names the file that could not be written."""
    for kind, item in changes:
        path = item["path"]
        if kind == "remove":
            os.unlink(path)
            continue
        parent = os.path.dirname(path)
        # exist_ok: hosts of one play write into one controller folder at once (switch configs)
        os.makedirs(parent, 0o755, exist_ok=True)
        if kind == "link":
            tmp = os.path.join(parent, f".{os.path.basename(path)}{TEMP_MARK}{os.getpid()}-link")
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(item["src"], tmp)
            os.rename(tmp, path)
            continue
        old = target_stat(path)
        owner = (old.st_uid, old.st_gid) if old is not None else None
        write_files([Target(path, item["content"].encode("utf-8"), int(item["mode"], 8), keep_mode=False,
                            owner=owner)])
