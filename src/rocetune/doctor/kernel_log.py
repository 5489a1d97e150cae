"""What the kernel said about the fabric since boot (or since `--since`): read from /dev/kmsg
through `dmesg --kernel --json` (the ring buffer, there for root on every host; JSON keeps each
record whole: util-linux 2.35 and later), else `dmesg --kernel` (older util-linux: records are
told apart by their headers), else from the journal
(`journalctl -k -b`, bounded to its last JOURNAL_LINES kernel lines: what a user in the
systemd-journal group may read where dmesg is restricted), and classified by
parsers/kernel_log.py (NIC firmware health, firmware command failures, link down/up, PCIe AER,
transceiver events, GPU Xid).

Only the lines that classify as one of those are kept -- also in a capture (`rocetune capture`
records the filtered output in place of the command's whole output): a live host's kernel log
changes by the second, its fabric events do not, and a capture replays to the same reading.
"""

from __future__ import annotations

from typing import List, Optional

from ..errors import ParseError
from ..hostfs.command import CommandResult, recording_name
from ..hostfs.context import ProbeContext
from ..probe.parsers.kernel_log import classify, relevant_lines

JOURNAL_LINES = 50000
JOURNAL_ARGV = ("journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q", "-n", str(JOURNAL_LINES))
DMESG_ARGV = ("dmesg", "--kernel")
DMESG_JSON_ARGV = ("dmesg", "--kernel", "--json")


def argvs(since: Optional[str]) -> List[List[str]]:
    """The commands tried, in order: the kernel ring buffer, then the journal."""
    journal = list(JOURNAL_ARGV) + (["--since", since] if since else [])
    dmesg = list(DMESG_ARGV) + (["--since", since] if since else [])
    dmesg_json = list(DMESG_JSON_ARGV) + (["--since", since] if since else [])
    return [dmesg_json, dmesg, journal]


def read(ctx: ProbeContext, since: Optional[str] = None) -> Optional[dict]:
    """{"source", "since", "events", "records", "dropped"}; None when no tool answered. A reader
    that crashes on what the log holds gives `failed` (the exception), never an empty log:
    doctor-reader-failed says it."""
    for argv in argvs(since):
        result = ctx.runner.run(argv)
        if not result.found or result.returncode != 0:  # dmesg_restrict, no journal access
            continue
        try:
            kept = relevant_lines(result.stdout)
            doc = classify(kept)
        except ParseError as exc:  # output that is no reading of the log: the next tool's
            ctx.warn(f"{' '.join(argv)}: {exc.message}")
            continue
        except Exception as exc:  # the reader's fault, said as such (doctor-reader-failed)
            return {"source": " ".join(argv), "since": since or "boot", "events": [], "records": 0, "dropped": 0,
                    "failed": type(exc).__name__, "reason": f"{type(exc).__name__}: {str(exc)[:300]}"}
        recorder = getattr(ctx.runner, "recorder", None)
        if recorder is not None:  # a capture keeps the fabric's lines only (see above)
            recorder.commands[recording_name(argv)] = CommandResult(argv, True, 0, kept, "")
        doc.update(source=" ".join(argv), since=since or "boot")
        return doc
    return None
