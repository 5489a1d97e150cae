"""Kernel log records that say something about the fabric: NIC firmware health, firmware command
failures, link down/up, PCIe AER, transceiver (module) events and GPU Xid errors.

The kernel keeps a log of records, not of lines (/dev/kmsg: one record per read, its text with
control bytes escaped, `\x0a` for a newline). A record's text may hold bytes a user chose -- a file
name in a segfault record, a mount option in tmpfs's `Unknown parameter '%s'` -- and so newlines:
`dmesg` prints such a record's further lines indented by the timestamp's width, journalctl indents
them too. So the log is read as records: in `dmesg --json` (util-linux 2.35+: one JSON string per
record, newlines kept inside it), or in text, where only a line that starts at its first column
with a record header (`[  445.937186] `, the journal's `[ 445.937186] host kernel: `, syslog's
`Feb  5 15:41:33 host kernel: `, an ISO stamp, or `kernel: `) starts a record and every other line
continues the one before. Only a record's first line is classified, by the text its kernel
producer prints (the format strings named per pattern below): a continuation never starts an
event, whatever it says.

A flood cannot push a fault out: events are kept per class (kind, device and what happened), each
class with its first and last occurrence and a count; at most MAX_CLASSES classes, the events of
any further class are counted in `dropped`. Pure; tested on recorded real messages
(tests/fixtures/outputs/kernel-log/SOURCES.md).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, Optional, Tuple

from ...errors import ParseError
from ...model.jsonread import load_json
from ._common import as_text

# At a line's first column: [ 445.937186] or [5365309.262528] (dmesg and journalctl -o
# short-monotonic), optionally followed by "host kernel: "; or syslog's "Mmm dd hh:mm:ss host
# kernel: "; or an ISO stamp and "host kernel: "; or "kernel: ".
_STAMP = re.compile(r"\[\s*(?P<mono>\d+\.\d+)\]\s*(?:\S+ kernel: )?"
                    r"|(?P<wall>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel: "
                    r"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^ ]*) \S+ kernel: "
                    r"|kernel: ")
_BDF = r"(?:[0-9a-fA-F]{4,5}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
MAX_CLASSES = 4096

# (kind, pattern, fields). Producers (Linux, drivers/net/ethernet/mellanox/mlx5/core/...):
PATTERNS = [
    # health.c poll_health(): "device's health compromised - reached miss count"; print_health_info():
    # "Health issue observed, %s, severity(%d) %s:"; check_fatal_sensors path: "Fatal error %u detected";
    # the unrecoverable-error syndrome text; cmd.c: "... timeout. Will cause a leak of a command resource"
    ("nic-health", re.compile(
        # the driver's own prefix, with the device (dev_err) or without it (MLNX_OFED), always: a record
        # that merely contains these words (a file name in a segfault record) is none of them
        rf"^(?:mlx5_core (?P<dev>{_BDF}): (?:\w+:\d+:\(pid \d+\): )?|\w+:\d+:\(pid \d+\): )"
        r"(?P<what>device's health compromised - reached miss count|Health issue observed, [^\n]*"
        r"|Fatal error \d+ detected|[^\n]*unrecoverable hardware error[^\n]*"
        r"|[^\n]*timeout\. Will cause a leak of a command resource[^\n]*)$")),
    # cmd.c mlx5_cmd_check()/mlx5_cmd_out_err(): "%s(0x%x) op_mod(0x%x) failed, status %s(0x%x), syndrome (0x%x)"
    ("nic-command", re.compile(
        rf"^(?:mlx5_core (?P<dev>{_BDF}): )?(?:mlx5_cmd_(?:check|out_err):\d+:\(pid \d+\): )"
        r"(?P<what>(?P<cmd>\w+)\(0x[0-9a-fA-F]+\)(?: op_mod\(0x[0-9a-fA-F]+\))? failed, status (?P<status>[^(]+)"
        r"\(0x[0-9a-fA-F]+\), syndrome \((?P<syndrome>0x[0-9a-fA-F]+)\).*)$")),
    # en_main.c mlx5e_update_carrier(): netdev_info "Link up" / "Link down"; rxe (rdma_rxe):
    # "set active" / "set down" on the ib device; Intel drivers: "NIC Link is Up/Down"
    ("link", re.compile(rf"^mlx5_core (?P<dev>{_BDF}) (?P<netdev>\S+): (?P<what>Link (?P<state>up|down))\s*$")),
    ("link", re.compile(r"^infiniband (?P<ibdev>\S+): (?P<what>set (?P<state>active|down))\s*$")),
    ("link", re.compile(rf"^\w+ (?P<dev>{_BDF}) (?P<netdev>\S+): (?P<what>NIC Link is (?P<state>Up|Down)\b.*)$")),
    # drivers/pci/pcie/aer.c: "AER: %s%s error message received from %s" (5.x+), older
    # "AER: %s%s error received: %s" / "id=%04x"; aer_print_error(): "PCIe Bus Error: severity=%s, type=%s, (%s)"
    ("pcie-aer", re.compile(
        rf"^\S+ (?P<port>{_BDF}): AER: (?P<what>(?P<multiple>Multiple )?(?P<severity>Corrected|Correctable|Uncorrected|"
        r"Uncorrectable)(?: \((?P<fatal>Fatal|Non-Fatal)\))? error (?:message )?received(?:: | from )"
        rf"(?:id=)?(?P<dev>{_BDF}|[0-9a-fA-F]{{4}})?.*)$")),
    # events.c port_module(): "Port module event: module %u, %s" / "Port module event[error]: module %u, %s, %s"
    ("module", re.compile(
        rf"^mlx5_core (?P<dev>{_BDF}): (?P<what>Port module event(?P<error>\[error\])?: module (?P<module>\d+), "
        r"(?P<status>[^,]+)(?:, (?P<detail>.+))?)$")),
    # NVIDIA driver: "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
    ("gpu-xid", re.compile(r"^NVRM: (?P<what>Xid \(PCI:(?P<dev>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?.*)$")),
]


# What tells one event class from another within a kind (besides its device).
_CLASS_FIELDS = ("xid", "state", "severity", "fatal", "multiple", "cmd", "status", "syndrome", "module",
                 "error")


def records(text: Any) -> Iterator[Tuple[Optional[str], str]]:
    """(time, text) of each record: its text is the first line only; what a record says on
    further lines is no record of its own (see above)."""
    text = as_text(text, "kernel log")
    if text.lstrip().startswith("{"):
        yield from _json_records(text)
        return
    for line in text.split("\n"):
        m = _STAMP.match(line)
        if m:
            yield m.group("mono") or m.group("wall") or m.group("iso"), line[m.end():]


def _json_records(text: str) -> Iterator[Tuple[Optional[str], str]]:
    """`dmesg --json`: {"dmesg": [{"pri": N, "time": T, "msg": "..."}]}; the caller has filtered
    the facility (--kernel). ParseError for a document that is not one: an unread log, never an
    empty one."""
    try:
        doc = load_json(text)
    except ValueError as exc:
        raise ParseError("dmesg --json output", f"not JSON: {str(exc)[:200]}") from None
    entries = doc.get("dmesg") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ParseError("dmesg --json output", "no 'dmesg' list")
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("msg"), str):
            continue
        t = entry.get("time")
        time = f"{t:.6f}" if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        yield time, entry["msg"].split("\n", 1)[0]


def classify(text: Any, limit: int = MAX_CLASSES, start: Optional[float] = None) -> Dict[str, Any]:
    """{"events": [...], "records": N, "dropped": M, "before": B}: one event per class in the order
    each class first occurred, with its `count` and, when it recurred, its `last` time and text; at
    most `limit` classes. With `start` (seconds since boot), a record stamped earlier is left out
    and counted in `before`; a record without such a stamp is kept. ParseError for a `dmesg --json`
    document that is not one."""
    classes: Dict[tuple, dict] = {}
    count = 0
    dropped = 0
    before = 0
    for time, line in records(text):
        count += 1
        stamp = _stamp(time) if start is not None else None
        if start is not None and stamp is not None and stamp < start:
            before += 1
            continue
        event = _event(time, line)
        if event is None:
            continue
        key = (event["kind"], event.get("dev"), event.get("port"), event.get("netdev"), event.get("ibdev"),
               *(event.get(f) for f in _CLASS_FIELDS), _form(event))
        known = classes.get(key)
        if known is not None:
            known["count"] += 1
            known["last"] = {"time": event["time"], "text": event["text"], "seq": count}
        elif len(classes) < limit:
            event["count"] = 1
            event["seq"] = count
            classes[key] = event
        else:
            dropped += 1
    return {"events": list(classes.values()), "records": count, "dropped": dropped, "before": before}


def _stamp(time: Optional[str]) -> Optional[float]:
    """Seconds since boot of a record's stamp ([  445.937186], dmesg --json's time); None for a
    wall-clock form."""
    try:
        return float(time) if time else None
    except ValueError:
        return None


def _form(event: dict) -> Optional[str]:
    """A NIC health message's form (its text up to the first comma, numbers left out); for the
    other kinds the fields above tell the class -- never free text such as an Xid's process name,
    which a user chooses."""
    if event["kind"] != "nic-health":
        return None
    return re.sub(r"\d+", "N", event["what"].split(",")[0])[:80]


def last(event: dict) -> dict:
    """The last occurrence of an event's class: {"time", "text", "seq"}."""
    return event.get("last") or {"time": event.get("time"), "text": event.get("text"), "seq": event.get("seq")}


def _event(time: Optional[str], line: str) -> Optional[dict]:
    body = line.strip()
    for kind, pattern in PATTERNS:
        hit = pattern.match(body)
        if hit:
            fields = {k: v for k, v in hit.groupdict().items() if v is not None and k != "what"}
            return {"kind": kind, "time": time, "text": body[:300], "what": hit.group("what")[:200], **fields}
    return None


def relevant_lines(text: Any) -> str:
    """Only the records classify() counts, in the form they came in (what a capture records: the
    kernel log of a live host changes by the second, its fabric events do not)."""
    text = as_text(text, "kernel log")
    if text.lstrip().startswith("{"):
        kept = [{"time": float(t) if t else None, "msg": line} for t, line in _json_records(text)
                if _event(t, line) is not None]
        return json.dumps({"dmesg": kept}, indent=1) + "\n"
    out = []
    for line in text.split("\n"):
        m = _STAMP.match(line)
        if m and _event(None, line[m.end():]) is not None:
            out.append(line + "\n")
    return "".join(out)
