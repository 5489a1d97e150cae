"""Parse ``ethtool -S IF`` (driver statistics) into {name: integer}.

ethtool prints a ``NIC statistics:`` header and one ``name: value`` line per counter, indented.
The name is everything before the last ``: `` (bnx2x prints ``[0]: rx_bytes: 123``, be2net
``rxq0: rx_bytes: 123``); values are unsigned integers. Lines that fit neither are reported as
warnings and skipped; a name printed twice keeps its first value. Returns
``{"counters": {...}, "warnings": [...]}``; ParseError when the output is empty.
"""

from __future__ import annotations

import re
from typing import Dict, List

from ._common import add_warning, as_text, clean, guarded, require_content, snippet

WHAT = "ethtool -S"

_LINE_RE = re.compile(r"^\s*(\S(?:.{0,200}?\S)?)\s*:\s*(\d{1,20})\s*\Z")
_HEADER_RE = re.compile(r"^\s*NIC statistics\s*:\s*\Z", re.IGNORECASE)
_NO_STATS_RE = re.compile(r"no stats available", re.IGNORECASE)


@guarded(WHAT)
def parse_ethtool_stats(text) -> dict:
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    counters: Dict[str, int] = {}
    warnings: List[str] = []
    for line in text.splitlines():
        if not line.strip() or _HEADER_RE.match(line):
            continue
        m = _LINE_RE.match(line)
        if m is None:
            if _NO_STATS_RE.search(line):
                add_warning(warnings, f"{WHAT}: the driver reports no statistics")
            else:
                add_warning(warnings, f"{WHAT}: skipped a line that is not 'name: number': {snippet(line)}")
            continue
        counters.setdefault(m.group(1), int(m.group(2)))
    return {"counters": counters, "warnings": warnings}
