"""The NIC counter baseline: the readings of the last hour, kept on the host so the next reading
has rates over a window that slides (see "the sliding window" below).

Stored as versioned JSON (a window of snapshots, rocetune.model.nic_counters), written atomically
at `BASELINE_PATH` under the host root (the root is a directory, "/" on the host itself). Read
and written through the root (rocetune.hostfs.root.HostRoot): a link on the way resolves inside the
root, never out of it, and the file is read as every host file is (a regular file, without
blocking, capped).
"""

from __future__ import annotations

import json
import os
from typing import Any, List, Optional

from ..errors import ExitCode, HostReadError, RocetuneError
from ..fsutil import atomic_write
from ..hostfs.root import HostRoot
from ..model.jsonread import load_json
from ..model.nic_counters import validate_snapshot

BASELINE_PATH = "/var/lib/rocetune/counters.json"
# A baseline is a few KB a port (a 522-device host's: ~2 MB); anything far larger is not one.
MAX_BASELINE_BYTES = 32 << 20


def baseline_file(root: str = "/", path: str = BASELINE_PATH) -> str:
    """Where the baseline of the host under `root` lives on this machine."""
    if not path.startswith("/"):
        raise RocetuneError(f"baseline path must be absolute: {path!r}", code=ExitCode.USAGE)
    return os.path.join(os.path.abspath(root), os.path.normpath(path).lstrip("/"))


def save_baseline(snapshot: dict, root: str = "/", path: str = BASELINE_PATH) -> str:
    """Write `snapshot` as the baseline (validated first; parent directories made); returns the
    file written. RocetuneError (exit OUTPUT) when it cannot be written; the old one stays."""
    validate_snapshot(snapshot, "NIC counter snapshot to save")
    return _write(json.dumps(snapshot, sort_keys=True, indent=1) + "\n", root, path)


def _write(text: str, root: str, path: str) -> str:
    target = baseline_file(root, path)
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
    """The newest saved reading, or None when there is none. RocetuneError (exit INPUT) when the
    file is unreadable, not JSON, or not a snapshot or window this rocetune reads; the hint says
    to remove it."""
    window = load_window(root, path)
    return window[-1] if window else None


def _load_document(root: str, path: str, target: str, hint: str) -> Any:
    try:
        text = HostRoot(root).read_text(path, max_bytes=MAX_BASELINE_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"cannot read the NIC counter baseline {target}: {exc.reason}",
                            hint=hint, code=ExitCode.INPUT) from None
    if text is None:
        return None
    try:
        return load_json(text)
    except ValueError as exc:
        raise RocetuneError(f"NIC counter baseline {target}: not JSON ({exc})", hint=hint,
                            code=ExitCode.INPUT) from None


# --- the sliding window ------------------------------------------------------------------------
# Rates are judged over about the last WINDOW_S: the baseline file keeps the readings of the
# last WINDOW_S, at least SPACING_S apart (at most WINDOW_S / SPACING_S + 1 of them), and a
# reading is judged against the oldest one still inside the window. A burst that ended leaves
# the window as the readings after it replace the ones before it; the gate (every health check)
# and `--save-baseline` (the doctor timer) keep the window current. The file was one snapshot
# before: such a file is read as a window of one.
WINDOW_KIND = "rocetune-nic-counter-window"
WINDOW_VERSION = 1
WINDOW_S = 3600.0
SPACING_S = WINDOW_S / 3


def age_s(old: dict, new: dict) -> float:
    """Seconds from reading `old` to reading `new`: by the uptime within one boot (immune to
    clock steps), else by the wall clock."""
    old_up, new_up = old["taken_at"].get("uptime_s"), new["taken_at"].get("uptime_s")
    same_boot = old.get("boot_id") and old.get("boot_id") == new.get("boot_id")
    if same_boot and isinstance(old_up, (int, float)) and isinstance(new_up, (int, float)):
        return float(new_up) - float(old_up)
    return float(new["taken_at"]["epoch_s"]) - float(old["taken_at"]["epoch_s"])


def reference(window: List[dict], current: dict, span_s: float = WINDOW_S) -> Optional[dict]:
    """The reading `current` is judged against: the oldest one of the window taken within
    `span_s` before it; when every one is older, the newest (the only rate there is). None for
    an empty window."""
    earlier = [s for s in window if age_s(s, current) > 0]
    if not earlier:
        return window[-1] if window else None  # judge() says the interval is not positive
    inside = [s for s in earlier if age_s(s, current) <= span_s]
    return inside[0] if inside else earlier[-1]


def slide(window: List[dict], current: dict, span_s: float = WINDOW_S,
          spacing_s: float = SPACING_S) -> Optional[List[dict]]:
    """The window after `current`: the readings of its boot within `span_s`, `current` added
    when the newest kept is at least `spacing_s` older; None when nothing changes (the file is
    not rewritten for a reading that adds nothing)."""
    kept = [s for s in window if 0 < age_s(s, current) <= span_s and s.get("boot_id") == current.get("boot_id")]
    if kept and age_s(kept[-1], current) < spacing_s:
        return None if kept == window else kept
    return kept + [current]


def load_window(root: str = "/", path: str = BASELINE_PATH) -> List[dict]:
    """The saved readings, oldest first ([] when there are none); errors as load_baseline's."""
    target = baseline_file(root, path)
    hint = f"remove {target}; the next reading saves a new baseline"
    doc = _load_document(root, path, target, hint)
    if doc is None:
        return []
    if isinstance(doc, dict) and doc.get("kind") == WINDOW_KIND:
        if doc.get("version") != WINDOW_VERSION or not isinstance(doc.get("snapshots"), list):
            raise RocetuneError(f"NIC counter baseline {target}: a {WINDOW_KIND} version {doc.get('version')!r} "
                                f"this rocetune does not read", hint=hint, code=ExitCode.INPUT)
        try:
            return [validate_snapshot(s, f"NIC counter baseline {target}") for s in doc["snapshots"]]
        except RocetuneError as exc:
            raise RocetuneError(exc.message, hint=hint, code=ExitCode.INPUT) from None
    try:
        return [validate_snapshot(doc, f"NIC counter baseline {target}")]
    except RocetuneError as exc:
        raise RocetuneError(exc.message, hint=hint, code=ExitCode.INPUT) from None


def save_window(window: List[dict], root: str = "/", path: str = BASELINE_PATH) -> str:
    """Write the readings (oldest first) as the baseline window, atomically; errors as save_baseline's."""
    for snapshot in window:
        validate_snapshot(snapshot, "NIC counter snapshot to save")
    doc = {"kind": WINDOW_KIND, "version": WINDOW_VERSION, "span_s": WINDOW_S, "snapshots": window}
    return _write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n", root, path)
