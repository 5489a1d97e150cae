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

from typing import List, Optional, Tuple

from ..errors import ParseError
from ..hostfs.command import CommandResult, recording_name
from ..hostfs.context import ProbeContext
from ..probe.parsers.kernel_log import classify, relevant_lines

JOURNAL_LINES = 50000
JOURNAL_ARGV = ("journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q", "-n", str(JOURNAL_LINES))
DMESG_ARGV = ("dmesg", "--kernel")
DMESG_JSON_ARGV = ("dmesg", "--kernel", "--json")
WINDOW_S = 24 * 3600.0  # the default window: a day (docs/gate.md, "Time and repairs")


def argvs(since: Optional[str]) -> List[List[str]]:
    """The commands tried, in order: the kernel ring buffer, then the journal."""
    journal = list(JOURNAL_ARGV) + (["--since", since] if since else [])
    dmesg = list(DMESG_ARGV) + (["--since", since] if since else [])
    dmesg_json = list(DMESG_JSON_ARGV) + (["--since", since] if since else [])
    return [dmesg_json, dmesg, journal]


def read(ctx: ProbeContext, since: Optional[str] = None, mark: Optional[dict] = None) -> Optional[dict]:
    """{"source", "since", "within", "window", "events", "records", "dropped"}; None when no tool
    answered. `within` is how the findings name the window ("in the last 24 h"). The window is
    applied to the records before they are classified, so a class's count and first and last
    occurrence are the window's own. A reader that crashes on what the log holds gives `failed`
    (the exception), never an empty log: doctor-reader-failed says it."""
    start, label, window = bounds(since, _uptime(ctx), None if since else WINDOW_S, mark)
    for argv in argvs(since):
        result = ctx.runner.run(argv)
        if not result.found or result.returncode != 0:  # dmesg_restrict, no journal access
            continue
        try:
            kept = relevant_lines(result.stdout)
            doc = classify(kept, start=start)
        except ParseError as exc:  # output that is no reading of the log: the next tool's
            ctx.warn(f"{' '.join(argv)}: {exc.message}")
            continue
        except Exception as exc:  # the reader's fault, said as such (doctor-reader-failed)
            return {"source": " ".join(argv), "since": since or "boot", "events": [], "records": 0, "dropped": 0,
                    "failed": type(exc).__name__, "reason": f"{type(exc).__name__}: {str(exc)[:300]}",
                    "within": label, "window": window}
        recorder = getattr(ctx.runner, "recorder", None)
        if recorder is not None:  # a capture keeps the fabric's lines only (see above)
            recorder.commands[recording_name(argv)] = CommandResult(argv, True, 0, kept, "")
        window = dict(window, left_out=doc.pop("before", 0))
        doc.update(source=" ".join(argv), since=since or "boot", within=label, window=window)
        return doc
    return None


def _uptime(ctx: ProbeContext) -> Optional[float]:
    text = ctx.text("/proc/uptime")
    recorder = getattr(ctx.root, "recorder", None)
    if recorder is not None:  # a clock: a capture keeping it would differ each time it is taken;
        recorder.files.pop("/proc/uptime", None)  # its replay judges the kept events since boot
    try:
        return float(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None


def bounds(since: Optional[str], uptime: Optional[float], span_s: Optional[float],
           mark: Optional[dict]) -> Tuple[Optional[float], str, dict]:
    """Where the window starts (seconds since boot; None: as the tools read the log), how the
    findings name it, and its record: the last `span_s` seconds, never before the repair mark."""
    label = f"since {since}" if since else "since boot"
    start: Optional[float] = None
    if span_s is not None and uptime is not None and uptime > span_s:
        start, label = uptime - span_s, f"in the last {_span(span_s)}"
    taken = (mark or {}).get("taken_at") or {}
    marked = taken.get("uptime_s")
    if isinstance(marked, (int, float)) and (start is None or marked > start) and (uptime is None or marked <= uptime):
        start = float(marked)
        label = f"since the repair marked at {taken.get('wall') or '?'} ({(mark or {}).get('reason')})"
    window = {"from_uptime_s": start, "uptime_s": uptime, "span_s": span_s, "left_out": 0,
              "repaired": {k: mark.get(k) for k in ("reason", "taken_at")} if mark else None}
    return start, label, window


def _span(seconds: float) -> str:
    if seconds % 86400 == 0:
        days = int(seconds // 86400)
        return "24 h" if days == 1 else f"{days} days"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 60)} min"
