"""What the kernel said about the fabric within the window: read from /dev/kmsg through `dmesg
--kernel` (the ring buffer, there for root on every host), else from the journal (`journalctl -k
-b`, bounded to its last JOURNAL_LINES kernel lines: what a user in the systemd-journal group may
read where dmesg is restricted), and classified by parsers/kernel_log.py (NIC firmware health,
firmware command failures, link down/up, PCIe AER, transceiver events, GPU Xid).

The window: the last WINDOW_S by default, or what `--since` says (passed to the tools, which
bound the reading themselves); and never before the operator's repair mark (doctor/repair.py).
Both tools stamp each line with the seconds since boot, so an event is placed against the
host's /proc/uptime; a host whose uptime cannot be read, or a line without a stamp, is judged
since boot, as before a window existed -- never less than was asked.

Only the lines that classify as one of those are kept -- also in a capture (`rocetune capture`
records the filtered output in place of the command's whole output): a live host's kernel log
changes by the second, its fabric events do not, and a capture replays to the same reading.
"""

from __future__ import annotations

from typing import List, Optional

from ..hostfs.command import CommandResult, recording_name
from ..hostfs.context import ProbeContext
from ..probe.parsers.kernel_log import classify, relevant_lines

JOURNAL_LINES = 50000
JOURNAL_ARGV = ("journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q", "-n", str(JOURNAL_LINES))
DMESG_ARGV = ("dmesg", "--kernel")
MAX_EVENTS = 2000
WINDOW_S = 24 * 3600.0  # the default window: a day (docs/gate.md, "Time and repairs")


def argvs(since: Optional[str]) -> List[List[str]]:
    """The commands tried, in order: the kernel ring buffer, then the journal."""
    journal = list(JOURNAL_ARGV) + (["--since", since] if since else [])
    dmesg = list(DMESG_ARGV) + (["--since", since] if since else [])
    return [dmesg, journal]


def read(ctx: ProbeContext, since: Optional[str] = None, mark: Optional[dict] = None) -> Optional[dict]:
    """{"source", "since", "within", "window", "events", "lines", "dropped"}; None when neither
    tool answered. `within` is how the findings name the window ("in the last 24 h")."""
    for argv in argvs(since):
        result = ctx.runner.run(argv)
        if not result.found or result.returncode != 0:  # dmesg_restrict, no journal access
            continue
        kept = relevant_lines(result.stdout)
        recorder = getattr(ctx.runner, "recorder", None)
        if recorder is not None:  # a capture keeps the fabric's lines only (see above)
            recorder.commands[recording_name(argv)] = CommandResult(argv, True, 0, kept, "")
        doc = classify(kept, limit=MAX_EVENTS)
        doc.update(source=" ".join(argv), since=since or "boot")
        doc.update(within(doc, _uptime(ctx), None if since else WINDOW_S, mark))
        return doc
    return None


def _uptime(ctx: ProbeContext) -> Optional[float]:
    text = ctx.text("/proc/uptime")
    try:
        return float(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None


def _stamp(event: dict) -> Optional[float]:
    """Seconds since boot of an event's line ([  445.937186]); None for another form."""
    try:
        return float(event.get("time") or "")
    except ValueError:
        return None


def _inside(event: dict, start: float) -> bool:
    stamp = _stamp(event)
    return stamp is None or stamp >= start


def within(doc: dict, uptime: Optional[float], span_s: Optional[float], mark: Optional[dict]) -> dict:
    """The events of `doc` inside the window -- the last `span_s` seconds (None: as the tools
    read them), after the repair mark -- and how to name it: {"events", "within", "window"}."""
    label = "since boot" if doc.get("since", "boot") == "boot" else f"since {doc['since']}"
    start: Optional[float] = None
    if span_s is not None and uptime is not None and uptime > span_s:
        start, label = uptime - span_s, f"in the last {_span(span_s)}"
    taken = (mark or {}).get("taken_at") or {}
    marked = taken.get("uptime_s")
    if isinstance(marked, (int, float)) and (start is None or marked > start) and (uptime is None or marked <= uptime):
        start = float(marked)
        label = f"since the repair marked at {taken.get('wall') or '?'} ({(mark or {}).get('reason')})"
    events = doc.get("events") or []
    if start is not None:
        events = [e for e in events if _inside(e, start)]
    window = {"from_uptime_s": start, "uptime_s": uptime, "span_s": span_s,
              "left_out": len(doc.get("events") or []) - len(events),
              "repaired": {k: mark.get(k) for k in ("reason", "taken_at")} if mark else None}
    return {"events": events, "within": label, "window": window}


def _span(seconds: float) -> str:
    if seconds % 86400 == 0:
        days = int(seconds // 86400)
        return "24 h" if days == 1 else f"{days} days"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 60)} min"
