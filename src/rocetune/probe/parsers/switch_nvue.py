"""NVIDIA Cumulus Linux `nv show qos roce` (text form) read into a rocetune.model.switch_qos
reading of the whole switch.

The layout is the one NVIDIA documents for Cumulus Linux 5.x (docs.nvidia.com, "RDMA over
Converged Ethernet - RoCE", Verify RoCE Configuration): key/value lines with an operational and
an applied column, then the "RoCE PCP/DSCP->SP mapping" and "RoCE SP->TC mapping and ETS" tables.
Sizes are printed with binary units (146.48 KB is 150000 bytes).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...errors import ParseError
from ...model.switch_qos import QueueReading, SwitchQos, SwitchReading
from ._common import as_text, clean, require_content

WHAT = "nv show qos roce"
_UNITS = {"bytes": 1, "byte": 1, "b": 1, "kb": 1024, "mb": 1024 ** 2, "gb": 1024 ** 3}
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)?\Z")
_MAPPING = "RoCE PCP/DSCP->SP mapping"
_ETS = "RoCE SP->TC mapping"


def looks_like(text: str) -> bool:
    return _MAPPING in text or ("congestion-control" in text and "trust-mode" in text)


def parse(text: Any, source: str = WHAT) -> SwitchQos:
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    if text.lstrip().startswith(("{", "[")):
        raise ParseError(source, "this is JSON: rocetune reads the text form of `nv show qos roce`",
                         hint="run `nv show qos roce` without -o json and give that output")
    if not looks_like(text):
        raise ParseError(source, "no RoCE QoS lines (congestion-control, trust-mode, the PCP/DSCP->SP table)")
    values = _key_values(text)
    reading = SwitchReading(ports=[])
    warnings: List[str] = []
    trust = values.get("trust-mode")
    if trust is not None:
        modes = set(t.strip() for t in trust.split(","))
        reading.trust = "both" if {"pcp", "dscp"} <= modes else ("dscp" if "dscp" in modes else "pcp")
    if "pfc-priority" in values:
        reading.pfc = tuple(sorted(_ints(values["pfc-priority"], "pfc-priority", source)))
    elif values.get("mode", "").startswith("lossy"):
        reading.pfc = ()
    sp_of_dscp = _dscp_table(text, source)
    tc_of_sp, strict = _ets_table(text, source)
    reading.dscp_to_tc = {d: tc_of_sp.get(sp, sp) for d, sp in sp_of_dscp.items()}
    ecn_tcs = set(_ints(values["enabled-tc"], "enabled-tc", source)) if values.get("enabled-tc") else set()
    ecn_on = values.get("congestion-mode", "").upper().startswith("ECN")
    low = _size(values.get("min-threshold"), "min-threshold", source)
    high = _size(values.get("max-threshold"), "max-threshold", source)
    probability = _int_or_none(values.get("probability"), "probability", source)
    for tc in range(8):
        marked = ecn_on and tc in ecn_tcs
        reading.queues[tc] = QueueReading(
            strict=strict.get(tc), ecn=marked if "enabled-tc" in values else None,
            min_threshold=low if marked else None, max_threshold=high if marked else None,
            probability=probability if marked else None)
    return SwitchQos(kind="nvue", source=source, groups=[reading], warnings=warnings)


def _key_values(text: str) -> Dict[str, str]:
    """`key   operational   applied` lines before the first table: the operational value, else the applied."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if _MAPPING in line or _ETS in line:
            break
        m = re.match(r"^\s*([a-z][a-z0-9-]*)\s{2,}(\S.*?)\s*\Z", line)
        if not m:
            continue
        fields = re.split(r"\s{2,}", m.group(2))
        out.setdefault(m.group(1), fields[0])
    return out


def _section(text: str, title: str) -> List[List[str]]:
    """The rows of the table under `title`: the lines after its header's dashed rule, up to a
    blank line or an unindented line (the next title). A row starts with its index or its name
    (`cnp`, `roce`), then the columns."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if title in line), None)
    if start is None:
        return []
    rows: List[List[str]] = []
    in_rows = False
    for line in lines[start + 1:]:
        stripped = line.strip()
        if not in_rows:
            in_rows = bool(stripped) and "-" in stripped and set(stripped) <= set("- ")
            continue
        if not stripped or not line[:1].isspace():
            break
        rows.append(stripped.split())
    return rows


def _dscp_table(text: str, source: str) -> Dict[int, int]:
    """DSCP -> switch priority from rows `IDX PCP DSCP,... SP` (or `cnp PCP DSCP SP`)."""
    out: Dict[int, int] = {}
    for row in _section(text, _MAPPING):
        if len(row) < 4:
            continue
        for d in _ints(row[2], "DSCP column", source):
            out[d] = _int(row[3], "switch-prio column", source)
    return out


def _ets_table(text: str, source: str) -> Tuple[Dict[int, int], Dict[int, bool]]:
    """switch priority -> traffic class, and whether each class is strict, from
    `IDX SP TC SCHEDULER` rows (`strict-priority`, `strict priority`, `DWRR-50%`)."""
    tc_of_sp: Dict[int, int] = {}
    strict: Dict[int, bool] = {}
    for row in _section(text, _ETS):
        if len(row) < 4:
            continue
        sp, tc = _int(row[1], "switch-prio column", source), _int(row[2], "traffic-class column", source)
        tc_of_sp[sp] = tc
        strict[tc] = " ".join(row[3:]).lower().startswith("strict")
    return tc_of_sp, strict


def _size(value: Optional[str], what: str, source: str) -> Optional[float]:
    if value is None:
        return None
    m = _SIZE_RE.match(value.strip())
    unit = (m.group(2) or "bytes").lower() if m else None
    if not m or unit not in _UNITS:
        raise ParseError(source, f"{what}: {value!r} is not a size like 146.48 KB")
    return float(m.group(1)) * _UNITS[unit]


def _ints(text: str, what: str, source: str) -> List[int]:
    return [_int(t, what, source) for t in text.replace(" ", "").split(",") if t]


def _int(text: str, what: str, source: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ParseError(source, f"{what}: {text!r} is not a number") from None


def _int_or_none(text: Optional[str], what: str, source: str) -> Optional[int]:
    return None if text is None else _int(text, what, source)
