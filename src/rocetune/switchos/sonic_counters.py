"""SONiC's counter shows, read per port: `show pfc counters` (pfcstat: PFC pause frames received
and sent per priority), `show queue counters` (queuestat: packets, bytes and drops per queue) and
`show queue wredcounters` (WRED drops and ECN-marked packets per queue). One file may hold any of
them, one after another, as they print.

Each is a tabulate "simple" table (sonic-utilities scripts/pfcstat, scripts/queuestat): a header
line, a rule of dashes whose runs give each column's width, then one row per port (or per port
and queue); `queuestat` prints "For namespace ..." above each port's table. Numbers are printed
with thousands separators (`1,200`); `N/A` is a counter the switch does not report, left unread.
Only unicast queues (`UCn`) carry RoCE; multicast (`MCn`) and `ALLn` rows are skipped.

Counter names (per port): rx_pause_pN / tx_pause_pN, drop_pkts_qN, wred_drop_pkts_qN,
ecn_marked_pkts_qN, for priority or queue N.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..errors import ParseError

WHAT = "SONiC counters (show pfc counters, show queue counters, show queue wredcounters)"
_RULE = re.compile(r"^-+(?:\s+-+)+\s*\Z")
_QUEUE_COLUMNS = {"Drop/pkts": "drop_pkts", "WredDrp/pkts": "wred_drop_pkts", "EcnMarked/pkts": "ecn_marked_pkts"}
_PFC = re.compile(r"PFC([0-7])\Z")
_UNICAST = re.compile(r"UC(\d{1,2})\Z")
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})*\Z|\d+\Z")


def parse(text: str, source: str) -> Dict[str, Dict[str, int]]:
    """{port: {counter: value}} from the tables in `text`; ParseError when none is one of them."""
    counters: Dict[str, Dict[str, int]] = {}
    lines = text.splitlines()
    tables = 0
    for i, line in enumerate(lines):
        if i == 0 or not _RULE.match(line):
            continue
        spans = _spans(line)
        header = [_cut(lines[i - 1], s) for s in spans]
        rows = []
        for row in lines[i + 1 :]:
            if not row.strip() or _RULE.match(row):
                break
            rows.append([_cut(row, s) for s in spans])
        if header and header[0] in ("Port Rx", "Port Tx"):
            tables += 1
            _pfc(header, rows, counters, "rx" if header[0] == "Port Rx" else "tx")
        elif header[:2] == ["Port", "TxQ"]:
            tables += 1
            _queues(header, rows, counters)
    if not tables:
        raise ParseError(source, f"no table of {WHAT}")
    return counters


def _spans(rule: str) -> List[Tuple[int, int]]:
    """Each column's (start, end) from the rule; a column reaches to the next one's start, since
    tabulate right-aligns numbers and a wide value may pass its rule by nothing."""
    runs = [m.span() for m in re.finditer(r"-+", rule)]
    return [(start, runs[k + 1][0] if k + 1 < len(runs) else 10**6) for k, (start, _) in enumerate(runs)]


def _cut(line: str, span: Tuple[int, int]) -> str:
    return line[span[0] : span[1]].strip()


def _value(text: str) -> Optional[int]:
    return int(text.replace(",", "")) if _NUMBER.match(text) else None


def _pfc(header: List[str], rows: List[List[str]], out: Dict[str, Dict[str, int]], side: str) -> None:
    for row in rows:
        port = row[0]
        for name, text in zip(header[1:], row[1:]):
            m, value = _PFC.match(name), _value(text)
            if m and port and value is not None:
                out.setdefault(port, {})[f"{side}_pause_p{m.group(1)}"] = value


def _queues(header: List[str], rows: List[List[str]], out: Dict[str, Dict[str, int]]) -> None:
    for row in rows:
        port, queue = row[0], _UNICAST.match(row[1]) if len(row) > 1 else None
        if not port or queue is None:
            continue
        for name, text in zip(header[2:], row[2:]):
            value = _value(text)
            if name in _QUEUE_COLUMNS and value is not None:
                out.setdefault(port, {})[f"{_QUEUE_COLUMNS[name]}_q{queue.group(1)}"] = value
