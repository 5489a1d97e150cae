"""Kernel log lines that say something about the fabric: NIC firmware health, firmware command
failures, link down/up, PCIe AER, transceiver (module) events and GPU Xid errors.

Each kind is recognised by the text its kernel producer prints (the format strings named per
pattern below), in any of the forms a log reaches us: `dmesg` (`[  445.937186] msg`), the journal
(`journalctl -k -o short-monotonic`: `[  445.937186] host kernel: msg`), syslog (`Feb  5 15:41:33
host kernel: msg`), or a bare `kernel: msg`. `classify(text)` returns the events in log order;
every other line is ignored. Pure; tested on recorded real messages (tests/fixtures/outputs/
kernel-log/SOURCES.md).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ._common import as_text

# [ 445.937186] or [5365309.262528] (dmesg and journalctl -o short-monotonic), optionally
# followed by "host kernel: "; or syslog's "Mmm dd hh:mm:ss host kernel: "; or "kernel: ".
_STAMP = re.compile(r"^\s*\[\s*(?P<mono>\d+\.\d+)\]\s*(?:\S+ kernel: )?"
                    r"|^(?P<wall>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel: "
                    r"|^(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^ ]*) \S+ kernel: "
                    r"|^kernel: ")
_BDF = r"(?:[0-9a-fA-F]{4,5}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"

# (kind, pattern, fields). Producers (Linux, drivers/net/ethernet/mellanox/mlx5/core/...):
PATTERNS = [
    # health.c poll_health(): "device's health compromised - reached miss count"; print_health_info():
    # "Health issue observed, %s, severity(%d) %s:"; check_fatal_sensors path: "Fatal error %u detected";
    # the unrecoverable-error syndrome text; cmd.c: "... timeout. Will cause a leak of a command resource"
    ("nic-health", re.compile(
        rf"^(?:mlx5_core (?P<dev>{_BDF}): )?(?:\w+:\d+:\(pid \d+\): )?"
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
        rf"^\S+ (?P<port>{_BDF}): AER: (?P<what>(?:Multiple )?(?P<severity>Corrected|Correctable|Uncorrected|"
        r"Uncorrectable)(?: \((?P<fatal>Fatal|Non-Fatal)\))? error (?:message )?received(?:: | from )"
        rf"(?:id=)?(?P<dev>{_BDF}|[0-9a-fA-F]{{4}})?.*)$")),
    # events.c port_module(): "Port module event: module %u, %s" / "Port module event[error]: module %u, %s, %s"
    ("module", re.compile(
        rf"^mlx5_core (?P<dev>{_BDF}): (?P<what>Port module event(?P<error>\[error\])?: module (?P<module>\d+), "
        r"(?P<status>[^,]+)(?:, (?P<detail>.+))?)$")),
    # NVIDIA driver: "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
    ("gpu-xid", re.compile(r"^NVRM: (?P<what>Xid \(PCI:(?P<dev>[0-9a-fA-F:.]+)\): (?P<xid>\d+),?.*)$")),
]


def classify(text: Any, limit: int = 5000) -> Dict[str, Any]:
    """{"events": [...], "lines": N, "dropped": M}: at most `limit` events, the latest kept."""
    text = as_text(text, "kernel log")
    events: List[dict] = []
    lines = 0
    dropped = 0
    for raw in text.splitlines():
        lines += 1
        event = _event(raw)
        if event is None:
            continue
        events.append(event)
        if len(events) > limit:
            events.pop(0)
            dropped += 1
    return {"events": events, "lines": lines, "dropped": dropped}


def _event(raw: str) -> Optional[dict]:
    m = _STAMP.match(raw)
    time = None
    body = raw
    if m:
        time = m.group("mono") or m.group("wall") or m.group("iso")
        body = raw[m.end():]
    body = body.strip()
    for kind, pattern in PATTERNS:
        hit = pattern.match(body)
        if hit:
            fields = {k: v for k, v in hit.groupdict().items() if v is not None and k != "what"}
            return {"kind": kind, "time": time, "text": body[:300], "what": hit.group("what")[:200], **fields}
    return None


def relevant_lines(text: str) -> str:
    """Only the lines classify() keeps (what a capture records: the kernel log of a live host
    changes by the second, its fabric events do not)."""
    return "".join(line + "\n" for line in text.splitlines() if _event(line) is not None)
