"""Write an env and the files it points at as one unit, or refuse to when the plan would
degrade the node (`env --no-degrade`, the boot unit), keeping the refusal's record for doctor."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..envfiles.changes import MANAGED_MARKER, env_changes
from ..errors import ExitCode, RocetuneError
from ..model.env_output import EnvResult, FileWrite
from .inputs import check_config

# NCCL's config file that rocetune did not write is kept once under this suffix.
BACKUP_SUFFIX = ".rocetune-orig"


def write_env(result: EnvResult, outputs: Sequence[Tuple[str, str]], *, check: bool = False,
              make_dirs: bool = False) -> List[FileWrite]:
    """Write the files the env points at and each env file of `outputs` ((format, path) pairs)
    as one unit: every target is checked and every new content written to a temporary file
    before any is renamed into place, so a failure leaves the old set as it was and no env
    names a file that is missing.

    A target must be absent or a regular file (fsutil: a device, FIFO, socket, directory or
    symlink is refused, with --check too); its current content is read without following a link
    and up to a size cap. A target that already holds its content is left alone (same bytes,
    same mtime): a boot-time rerun that finds nothing new rewrites nothing. Each env file's
    `changes` names the variables whose value differs from the file's previous one. An NCCL
    config file that rocetune did not write (no managed marker) is kept once as
    FILE.rocetune-orig, with the original's mode and owner. With `check`, nothing is written and
    the result says what would be; `make_dirs` creates missing directories."""
    from ..envfiles import dialects
    from ..fsutil import read_old_text

    paths = [os.path.abspath(p) for _, p in outputs]
    if len(set(paths)) != len(paths):
        raise RocetuneError("two env files name the same path: " + ", ".join(sorted(
            {p for p in paths if paths.count(p) > 1})), code=ExitCode.USAGE)
    writes = [FileWrite(os.path.abspath(f.path), f.content, read_old_text(f.path)) for f in result.files]
    for fmt, path in outputs:
        text, before = result.texts[fmt], read_old_text(path)
        changes = env_changes(before, text, fmt) if before is not None else []
        keeps_owner_copy = dialects.get(fmt).keeps_owner_copy
        backup = _backup_path(path, before) if keeps_owner_copy and before != text else None
        writes.append(FileWrite(os.path.abspath(path), text, before, fmt, changes, backup))
    for w in writes:
        _check_writable(w.path, make_dirs, trial=check and w.changed)
    result.writes = writes
    if check:
        return writes
    _write_all([w for w in writes if w.changed], make_dirs)
    return writes


def refuse_degraded(env: EnvResult, outputs: Sequence[Tuple[str, str]], root: str, config=None,
                    check: bool = False) -> Optional[Dict[str, Any]]:
    """When the plan falls short (degradation), the refusal: its reasons and, unless `check`,
    the record kept for doctor; None when it does not, after removing an earlier refusal's record."""
    from ..envfiles import degrade

    reasons = degradation(env, outputs, config or check_config(root))
    if not reasons:
        return None
    files = [path for _, path in outputs]
    return {"reasons": reasons, "record": None if check else degrade.save_record(root, reasons, files)}


def accept_written(root: str, paths: Sequence[str]) -> None:
    """The env files now hold a plan someone accepted: no earlier refusal stands for them."""
    from ..envfiles.degrade import clear_record

    clear_record(root, list(paths))


def degradation(result: EnvResult, outputs: Sequence[Tuple[str, str]], config=None) -> List[str]:
    """Why writing `result` over `outputs` would degrade the node (`env --no-degrade`, the boot
    unit): each way the plan falls short of the expectations (as the node's check configuration
    grades them), and what it would lose against each env file rocetune wrote before
    (rocetune.envfiles.degrade), a variable the NCCL planned for ignores among what it changes
    included. [] when it is not short."""
    from ..checks.config import apply
    from ..envfiles.degrade import shortfalls, values_of
    from ..fsutil import read_old_text

    graded = apply(result.plan.findings, config).findings
    reasons = [f"{f.message} ({f.id})" for f in graded if f.kind == "expect" and f.severity == "error"]
    for fmt, path in outputs:
        old = values_of(read_old_text(path), fmt)
        new = values_of(result.texts[fmt], fmt)
        if old is not None and new is not None:
            chosen = {d.key for d in result.plan.decisions if d.rule_id == "override"}
            reasons += [f"{path}: {r}" for r in shortfalls(old, new, result.nccl, chosen)]
    return list(dict.fromkeys(reasons))


def _write_all(writes: List[FileWrite], make_dirs: bool) -> None:
    from ..fsutil import Target, target_stat, write_files

    targets = []
    for w in writes:
        if w.backup:
            # The original's mode and owner: a root-only nccl.conf stays root-only in its copy.
            st = target_stat(w.path)
            targets.append(Target(w.backup, (w.before or "").encode("utf-8"),
                                  st.st_mode & 0o7777 if st else 0o600,
                                  owner=(st.st_uid, st.st_gid) if st else None))
        targets.append(Target(w.path, w.content.encode("utf-8"), 0o644))
    if make_dirs:
        for directory in sorted({os.path.dirname(t.path) for t in targets}):
            try:
                os.makedirs(directory, 0o755, exist_ok=True)
            except OSError as exc:
                raise RocetuneError(f"cannot create {directory}: {exc.strerror or exc}",
                                    hint="check that its parent is writable", code=ExitCode.OUTPUT) from None
    write_files(targets)


def _backup_path(path: str, old: Optional[str]) -> Optional[str]:
    backup = path + BACKUP_SUFFIX
    if old is None or old.startswith(MANAGED_MARKER) or os.path.lexists(backup):
        return None
    return os.path.abspath(backup)


def _check_writable(path: str, make_dirs: bool = False, trial: bool = False) -> None:
    """Refuse a target that cannot be written, before anything is; with `trial` (--check), a
    temporary file is made and removed in its directory, the only way to know a pseudo file
    system (/proc, /sys) refuses new files."""
    from ..fsutil import can_create_in, check_directory, target_stat

    target_stat(path)
    check_directory(path)
    directory = os.path.dirname(os.path.abspath(path))
    while make_dirs and not os.path.isdir(directory) and not os.path.lexists(directory):
        directory = os.path.dirname(directory)  # the nearest existing one must be writable
    if not os.path.isdir(directory):
        raise RocetuneError(f"cannot write {path}: {directory} does not exist",
                            hint="create the directory first", code=ExitCode.OUTPUT)
    if not os.access(directory, os.W_OK):
        raise RocetuneError(f"cannot write {path}: {directory} is not writable",
                            hint="run as a user who may write there", code=ExitCode.OUTPUT)
    if trial and directory == os.path.dirname(os.path.abspath(path)):
        can_create_in(directory, path)
