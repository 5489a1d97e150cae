"""The operator's repair mark: "this node was repaired now", so that what came before stops
counting. Kernel-log events stamped before the mark and counter readings taken before it are
left out of doctor's judgement; what happens after it is judged as usual.

`rocetune doctor --repaired REASON` writes it (after `mlxfwreset`, a reseated cable, a GPU
reset), as versioned JSON at `MARK_PATH` under the host root. A mark of another boot says
nothing: a reboot already starts the kernel log and the counters afresh.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from ..errors import ExitCode, HostReadError, RocetuneError
from ..fsutil import atomic_write
from ..hostfs.root import HostRoot
from ..model.jsonread import load_json
from ..text import printable

MARK_PATH = "/var/lib/rocetune/repaired.json"
MARK_KIND = "rocetune-repair-mark"
MARK_VERSION = 1
MAX_REASON = 200


def _uptime(host: HostRoot) -> Optional[float]:
    try:
        text = host.read_text("/proc/uptime", max_bytes=4096)
        return float(text.split()[0]) if text else None
    except (HostReadError, ValueError, IndexError):
        return None


def _boot_id(host: HostRoot) -> Optional[str]:
    try:
        text = host.read_text("/proc/sys/kernel/random/boot_id", max_bytes=4096)
    except HostReadError:
        return None
    return text.strip() or None if text else None


def write_mark(root: str, reason: str, clock: Callable[[], float] = time.time) -> dict:
    """Record a repair now on the host under `root`; returns the mark (with "file")."""
    reason = " ".join(printable(reason).split())
    if not reason or len(reason) > MAX_REASON:
        raise RocetuneError(f"--repaired: give what was repaired in 1 to {MAX_REASON} characters", code=ExitCode.USAGE)
    host = HostRoot(root)
    now = clock()
    mark = {
        "kind": MARK_KIND,
        "version": MARK_VERSION,
        "reason": reason,
        "boot_id": _boot_id(host),
        "taken_at": {
            "wall": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "epoch_s": round(now, 3),
            "uptime_s": _uptime(host),
        },
    }
    import json

    try:
        target = host.path_for_write(MARK_PATH)
        atomic_write(target, json.dumps(mark, sort_keys=True, indent=1) + "\n", mode=0o644)
    except (HostReadError, OSError) as exc:
        why = exc.reason if isinstance(exc, HostReadError) else (exc.strerror or str(exc))
        raise RocetuneError(
            f"--repaired: cannot write the repair mark {MARK_PATH}: {why}",
            hint="run as root on the node",
            code=ExitCode.OUTPUT,
        ) from None
    return dict(mark, file=target)


def load_mark(root: str) -> Optional[dict]:
    """The repair mark of this boot, or None (none, another boot's, or unreadable: a mark that
    cannot be read leaves everything counted, never less)."""
    host = HostRoot(root)
    try:
        text = host.read_text(MARK_PATH, max_bytes=64 << 10)
        doc: Any = load_json(text) if text else None
    except (HostReadError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("kind") != MARK_KIND or doc.get("version") != MARK_VERSION:
        return None
    taken = doc.get("taken_at")
    if not isinstance(taken, dict) or not isinstance(taken.get("epoch_s"), (int, float)):
        return None
    boot = _boot_id(host)
    if doc.get("boot_id") and boot and doc["boot_id"] != boot:
        return None
    return doc


def before_mark(mark: Optional[dict], snapshot: dict) -> bool:
    """Whether a counter reading was taken before the repair mark."""
    if mark is None:
        return False
    taken, at = snapshot["taken_at"], mark["taken_at"]
    same_boot = mark.get("boot_id") and mark.get("boot_id") == snapshot.get("boot_id")
    if same_boot and isinstance(taken.get("uptime_s"), (int, float)) and isinstance(at.get("uptime_s"), (int, float)):
        return float(taken["uptime_s"]) < float(at["uptime_s"])
    return float(taken["epoch_s"]) < float(at["epoch_s"])
