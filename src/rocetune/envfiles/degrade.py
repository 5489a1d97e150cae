"""Never degrade a node quietly: what a new env would lose against the one it replaces, and the
record a refusal leaves for doctor.

A plan re-derived on a node that lost a rail (or whose one rail lost PFC) fits the broken node:
seven rails in NCCL_IB_HCA, no NCCL_IB_TC. `rocetune env --no-degrade` (the boot unit's mode)
compares the new env with the previous one and refuses to write a shortfall; the previous files
stay as they are, and /var/lib/rocetune/env-refused.json under the root says why until a later
run writes (or keeps) an env that is not short. docs/roles/rocetune_env.md explains the choice.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Collection, Dict, List, Optional, Tuple

from ..errors import ExitCode, HostReadError, RocetuneError
from ..hostfs.reads import kind_of
from ..hostfs.root import HostRoot
from ..nccl import releases
from ..nccl.syntax import ib_hca_entries
from .changes import MANAGED_MARKER

Version = Tuple[int, int, int]

RECORD_PATH = "/var/lib/rocetune/env-refused.json"
RECORD_SCHEMA = "rocetune.env-refused/1"
# The variables that put RoCE in its traffic class: dropping one sends RoCE out in class 0.
TRAFFIC_CLASS = ("NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_FIFO_TC", "UCX_IB_TRAFFIC_CLASS")


def values_of(text: Optional[str], fmt: str) -> Optional[Dict[str, str]]:
    """The variables of an env file rocetune wrote; None for no file or one it did not write
    (the site's own file is not a plan to compare with)."""
    if not text or not text.startswith(MANAGED_MARKER):
        return None
    from .read import parse_text

    return {a.key: a.value for a in parse_text(text, fmt).assignments if a.value is not None}


def shortfalls(old: Dict[str, str], new: Dict[str, str], nccl: Optional[Version] = None,
               chosen: Collection[str] = ()) -> List[str]:
    """What the env `new` loses against `old`: RDMA ports NCCL_IB_HCA no longer names, a
    traffic-class variable dropped, sockets where RDMA was, and a change carried by an NCCL
    variable the release `nccl` does not read (NCCL_IB_ADDR_RANGE in place of a pinned
    NCCL_IB_GID_INDEX below 2.21.5: the job would get NCCL's default instead). A changed value is
    not a loss (a GID index that moved is what the boot unit is for). The variables in `chosen`
    (the user's overrides) are the user's word, not the plan's change."""
    out = []
    for key in sorted(k for k in new if k.startswith("NCCL_") and new[k] != old.get(k) and k not in chosen):
        if nccl is not None and releases.reads(key, nccl) is False:
            out.append(f"{key}={new[key]} would be {'changed' if key in old else 'set'}, and NCCL "
                       f"{'.'.join(map(str, nccl))} does not read it")
    before, after = _ports(old.get("NCCL_IB_HCA")), _ports(new.get("NCCL_IB_HCA"))
    if before:
        lost = [p for p in before if p not in (after or [])]
        if lost:
            out.append(f"NCCL_IB_HCA would lose {', '.join(lost)} ({len(before)} -> {len(after or [])} "
                       "RDMA ports)")
    for key in TRAFFIC_CLASS:
        if key in old and key not in new:
            out.append(f"{key}={old[key]} would be dropped: RoCE would go out in traffic class 0")
    if new.get("NCCL_IB_DISABLE") == "1" and old.get("NCCL_IB_DISABLE") != "1":
        out.append("NCCL_IB_DISABLE=1 would be set: NCCL would run over TCP sockets")
    return out


def _ports(value: Optional[str]) -> Optional[List[str]]:
    """The ports an NCCL_IB_HCA list names (`mlx5_0:1`, or a device alone); None for an
    exclusion list or no value (nothing to count)."""
    if not value:
        return None
    exclude, _exact, entries = ib_hca_entries(value)
    if exclude:
        return None
    return [name if port < 0 else f"{name}:{port}" for name, port in entries]


def record_file(root: str) -> str:
    """Where the record of the host under `root` is on this machine: resolved inside the root
    (a link on its path never leads out of it)."""
    try:
        return HostRoot(os.path.abspath(root or "/")).path_inside(RECORD_PATH)
    except HostReadError as exc:
        raise RocetuneError(f"cannot reach {RECORD_PATH} under {root or '/'}: {exc.reason}",
                            code=ExitCode.OUTPUT) from None


def save_record(root: str, reasons: List[str], files: List[str]) -> str:
    """Write the refusal record (deterministic JSON, atomically, its directory resolved inside
    the root; the writer refuses anything but a regular file there); returns its path."""
    from ..fsutil import atomic_write

    text = json.dumps({"schema": RECORD_SCHEMA, "reasons": reasons,
                       "files": [os.path.abspath(f) for f in files]},
                      sort_keys=True, indent=1) + "\n"
    target = record_file(root)
    try:
        target = HostRoot(os.path.abspath(root or "/")).path_for_write(RECORD_PATH)
        atomic_write(target, text, mode=0o644)
    except HostReadError as exc:
        raise RocetuneError(f"cannot write {target}: {exc.reason}", code=ExitCode.OUTPUT) from None
    except OSError as exc:
        raise RocetuneError(f"cannot write {target}: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
    return target


def clear_record(root: str, files: List[str]) -> bool:
    """Remove the refusal record when it is about one of `files` (a run that wrote them, or
    found them not short); True when there was one. Read through the root (a regular file only,
    without blocking); anything else in its place is refused, not removed."""
    target = record_file(root)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise RocetuneError(f"cannot read {target}: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
    if not stat.S_ISREG(st.st_mode):
        raise RocetuneError(f"{target} is {kind_of(st.st_mode)}, not a regular file: not read, not removed",
                            hint="remove it by hand if it is not yours", code=ExitCode.OUTPUT)
    try:
        text = HostRoot(os.path.abspath(root or "/")).read_text(RECORD_PATH, 1 << 20)
    except HostReadError:
        text = None
    record = read_record(text)
    if record and record["files"] and not set(map(os.path.abspath, files)) & set(record["files"]):
        return False
    try:
        os.unlink(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise RocetuneError(f"cannot remove {target}: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
    return True


def read_record(text: Optional[str]) -> Optional[dict]:
    """The record's content as doctor reads it through the root; a file that is not one gives
    its reason as the only one (the refusal still happened)."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return {"reasons": [f"{RECORD_PATH} is not JSON"], "files": []}
    if not isinstance(data, dict) or data.get("schema") != RECORD_SCHEMA:
        return {"reasons": [f"{RECORD_PATH} is not a record this rocetune writes"], "files": []}
    reasons = [str(r) for r in data.get("reasons") or [] if isinstance(r, str)]
    return {"reasons": reasons, "files": [str(f) for f in data.get("files") or [] if isinstance(f, str)]}
