"""Arista EOS running-config (or an excerpt of it) read into rocetune.model.switch_qos readings:
one per group of interfaces that share their QoS.

Read: global `qos map dscp D... to traffic-class T`; in `interface` and `qos profile` sections
`qos trust dscp|cos`, `priority-flow-control priority N no-drop`, `service-profile NAME` (a qos
profile applied to the interface), and per `tx-queue N` / `uc-tx-queue N`: `priority strict`,
`no priority`, `random-detect ecn minimum-threshold X UNIT maximum-threshold Y UNIT
[max-mark-probability P]`. Lines of other commands are skipped; what a section does not state
stays unknown (the check says so) instead of being assumed from a platform default.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...errors import ParseError
from ...model.switch_qos import QueueReading, SwitchQos, SwitchReading
from ._common import as_text, clean, require_content

WHAT = "EOS running-config"
# Threshold units EOS takes for random-detect ecn; segments depend on the platform's cell size.
UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000 ** 2}
_ECN_RE = re.compile(r"random-detect ecn minimum-threshold (\d+) (\w+) maximum-threshold (\d+) (\w+)"
                     r"(?: max-mark-probability (\d+))?")
_SECTION_RE = re.compile(r"^(interface|qos profile)\s+(\S+)")
_QUEUE_RE = re.compile(r"^(?:uc-)?tx-queue\s+(\d+)\Z")


def looks_like(text: str) -> bool:
    return bool(re.search(r"^[^\S\n]*(priority-flow-control|qos (map|trust|profile)|interface Ethernet)", text, re.M))


class _Section:
    def __init__(self) -> None:
        self.trust: Optional[str] = None
        self.pfc_on: Optional[bool] = None
        self.no_drop: List[int] = []
        self.profile: Optional[str] = None
        self.queues: Dict[int, Dict[str, Any]] = {}


def parse(text: Any, source: str = WHAT) -> SwitchQos:
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    if not looks_like(text):
        raise ParseError(source, "no EOS QoS lines (qos map, qos trust, priority-flow-control, interface ...)")
    dscp_to_tc: Dict[int, int] = {}
    interfaces: Dict[str, _Section] = {}
    profiles: Dict[str, _Section] = {}
    section: Optional[_Section] = None
    section_indent = 0
    queue: Optional[Dict[str, Any]] = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("!", "#")):
            continue
        indent = len(raw) - len(raw.lstrip())
        m = _SECTION_RE.match(line)
        if m:  # published excerpts indent the whole config: a section is what is indented below it
            section, section_indent, queue = _Section(), indent, None
            (interfaces if m.group(1) == "interface" else profiles)[m.group(2)] = section
            continue
        if section is None or indent <= section_indent:
            section, queue = None, None
            m = re.match(r"^qos map dscp ([\d ]+) to traffic-class (\d+)\Z", line)
            if m:
                for d in m.group(1).split():
                    dscp_to_tc[int(d)] = int(m.group(2))
            continue
        m = _QUEUE_RE.match(line)
        if m:
            queue = section.queues.setdefault(int(m.group(1)), {})
            continue
        if queue is not None and _queue_line(line, queue, source):
            continue
        _section_line(line, section)
    groups = _groups(interfaces, profiles, dscp_to_tc)
    warnings = [] if interfaces else ["no interface section: the global QoS lines alone were read"]
    return SwitchQos(kind="eos", source=source, groups=groups, warnings=warnings)


def _queue_line(line: str, queue: Dict[str, Any], source: str) -> bool:
    if line == "priority strict":
        queue["strict"] = True
    elif line == "no priority":
        queue["strict"] = False
    else:
        m = _ECN_RE.match(line)
        if not m:
            return False
        lo, lo_unit, hi, hi_unit, prob = m.groups()
        if lo_unit != hi_unit:
            raise ParseError(source, f"{line!r}: the two thresholds in different units")
        queue.update(ecn=True, min=int(lo), max=int(hi), unit=lo_unit,
                     probability=int(prob) if prob else None)
    return True


def _section_line(line: str, section: _Section) -> None:
    m = re.match(r"^qos trust (dscp|cos)\Z", line)
    if m:
        section.trust = "dscp" if m.group(1) == "dscp" else "pcp"
    elif line == "priority-flow-control on" or line == "priority-flow-control mode on":
        section.pfc_on = True
    elif line in ("no priority-flow-control", "no priority-flow-control mode on"):
        section.pfc_on = False
    elif re.match(r"^priority-flow-control priority \d+ no-drop\Z", line):
        section.no_drop.append(int(line.split()[2]))
    elif line.startswith("service-profile "):
        section.profile = line.split()[1]


def _groups(interfaces: Dict[str, _Section], profiles: Dict[str, _Section],
            dscp_to_tc: Dict[int, int]) -> List[SwitchReading]:
    groups: Dict[Tuple, SwitchReading] = {}
    names = list(interfaces) or ["global"]
    for name in names:
        own = interfaces.get(name, _Section())
        merged = _merge(profiles.get(own.profile) if own.profile else None, own)
        reading = SwitchReading(ports=[] if name == "global" else [name], trust=merged.trust,
                                dscp_to_tc=dict(dscp_to_tc),
                                dscp_default="not in `qos map dscp`: the EOS default map applies")
        if merged.pfc_on is False:
            reading.pfc = ()
        elif merged.pfc_on or merged.no_drop:
            reading.pfc = tuple(sorted(set(merged.no_drop))) if merged.pfc_on else ()
        # A running-config prints every non-default line: a queue without random-detect marks no ECN.
        reading.queues = {q: _queue_reading(merged.queues.get(q, {})) for q in range(8)}
        key = (reading.trust, reading.pfc, tuple(sorted((q, v) for q, v in reading.queues.items())))
        if key in groups:
            groups[key].ports.extend(reading.ports)
        else:
            groups[key] = reading
    return list(groups.values())


def _merge(profile: Optional[_Section], own: _Section) -> _Section:
    """An interface's own lines over the qos profile it applies."""
    if profile is None:
        return own
    out = _Section()
    out.trust = own.trust or profile.trust
    out.pfc_on = own.pfc_on if own.pfc_on is not None else profile.pfc_on
    out.no_drop = own.no_drop or profile.no_drop
    out.queues = {q: dict(profile.queues.get(q, {}), **own.queues.get(q, {}))
                  for q in set(profile.queues) | set(own.queues)}
    return out


def _queue_reading(fields: Dict[str, Any]) -> QueueReading:
    unit = fields.get("unit", "bytes")
    scale = UNITS.get(unit)
    lo, hi = fields.get("min"), fields.get("max")
    return QueueReading(strict=fields.get("strict"), ecn=fields.get("ecn", False),
                        min_threshold=None if lo is None or scale is None else float(lo * scale),
                        max_threshold=None if hi is None or scale is None else float(hi * scale),
                        probability=fields.get("probability"), threshold_unit=unit)
