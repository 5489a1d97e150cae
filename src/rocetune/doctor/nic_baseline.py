"""The NIC counter baseline: the last snapshot, kept on the host so the next reading has rates.

Stored as the snapshot itself (versioned JSON, rocetune.model.nic_counters), written atomically
at `BASELINE_PATH` under the host root (the root is a directory, "/" on the host itself). Read
and written through the root (rocetune.hostfs.root.HostRoot): a link on the way resolves inside the
root, never out of it, and the file is read as every host file is (a regular file, without
blocking, capped).
"""

from __future__ import annotations

import json
import os
from typing import Optional

from ..errors import ExitCode, HostReadError, RocetuneError
from ..fsutil import atomic_write
from ..hostfs.root import HostRoot
from ..model.jsonread import load_json
from ..model.nic_counters import validate_snapshot

BASELINE_PATH = "/var/lib/rocetune/counters.json"
# A baseline is a few KB a port (a 522-device host's: ~2 MB); anything far larger is not one.
MAX_BASELINE_BYTES = 16 << 20


def baseline_file(root: str = "/", path: str = BASELINE_PATH) -> str:
    """Where the baseline of the host under `root` lives on this machine."""
    if not path.startswith("/"):
        raise RocetuneError(f"baseline path must be absolute: {path!r}", code=ExitCode.USAGE)
    return os.path.join(os.path.abspath(root), os.path.normpath(path).lstrip("/"))


def save_baseline(snapshot: dict, root: str = "/", path: str = BASELINE_PATH) -> str:
    """Write `snapshot` as the baseline (validated first; parent directories made); returns the
    file written. RocetuneError (exit OUTPUT) when it cannot be written; the old one stays."""
    validate_snapshot(snapshot, "NIC counter snapshot to save")
    target = baseline_file(root, path)
    text = json.dumps(snapshot, sort_keys=True, indent=1) + "\n"
    try:
        target = HostRoot(root).path_for_write(path)
        atomic_write(target, text, mode=0o644)
    except HostReadError as exc:
        raise RocetuneError(f"cannot write the NIC counter baseline {target}: {exc.reason}",
                            hint="run as a user that may write there, or name another path",
                            code=ExitCode.OUTPUT) from None
    except OSError as exc:
        raise RocetuneError(f"cannot write the NIC counter baseline {target}: {exc.strerror or exc}",
                            hint="run as a user that may write there, or name another path",
                            code=ExitCode.OUTPUT) from None
    return target


def load_baseline(root: str = "/", path: str = BASELINE_PATH) -> Optional[dict]:
    """The saved baseline, or None when there is none. RocetuneError (exit INPUT) when the file
    is unreadable, not JSON, or not a snapshot this rocetune reads; the hint says to remove it."""
    target = baseline_file(root, path)
    hint = f"remove {target}; the next reading saves a new baseline"
    try:
        text = HostRoot(root).read_text(path, max_bytes=MAX_BASELINE_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"cannot read the NIC counter baseline {target}: {exc.reason}",
                            hint=hint, code=ExitCode.INPUT) from None
    if text is None:
        return None
    try:
        snapshot = load_json(text)
    except ValueError as exc:
        raise RocetuneError(f"NIC counter baseline {target}: not JSON ({exc})", hint=hint,
                            code=ExitCode.INPUT) from None
    try:
        return validate_snapshot(snapshot, f"NIC counter baseline {target}")
    except RocetuneError as exc:
        raise RocetuneError(exc.message, hint=hint, code=ExitCode.INPUT) from None
