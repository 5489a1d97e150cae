"""The NIC counter baseline: the last snapshot, kept on the host so the next reading has rates.

Stored as the snapshot itself (versioned JSON, rocetune.model.nic_counters), written atomically
at `BASELINE_PATH` under the host root (the root is a directory, "/" on the host itself).
"""

from __future__ import annotations

import json
import os
from typing import Optional

from ..errors import ExitCode, RocetuneError
from ..fsutil import atomic_write
from ..model.jsonread import load_json
from ..model.nic_counters import validate_snapshot

BASELINE_PATH = "/var/lib/rocetune/counters.json"
# A baseline is a few KB a port; anything far larger is not one.
MAX_BASELINE_BYTES = 64 << 20


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
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        atomic_write(target, text, mode=0o644)
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
        with open(target, "rb") as fh:
            data = fh.read(MAX_BASELINE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RocetuneError(f"cannot read the NIC counter baseline {target}: {exc.strerror or exc}",
                            hint=hint, code=ExitCode.INPUT) from None
    if len(data) > MAX_BASELINE_BYTES:
        raise RocetuneError(f"NIC counter baseline {target}: larger than {MAX_BASELINE_BYTES} bytes",
                            hint=hint, code=ExitCode.INPUT)
    try:
        snapshot = load_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RocetuneError(f"NIC counter baseline {target}: not JSON ({exc})", hint=hint,
                            code=ExitCode.INPUT) from None
    try:
        return validate_snapshot(snapshot, f"NIC counter baseline {target}")
    except RocetuneError as exc:
        raise RocetuneError(exc.message, hint=hint, code=ExitCode.INPUT) from None
