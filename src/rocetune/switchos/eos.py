"""Arista EOS: a configuration written from the plan, and a running-config (or an excerpt of it)
read back, one reading per group of interfaces that share their QoS.

Read: global `qos map dscp D... to traffic-class T [drop-precedence P]`, `qos map cos C... to
traffic-class T`, `qos map traffic-class T... to tx-queue Q`, `priority-flow-control all off`; in
`interface` and `qos profile` sections `qos trust dscp|cos`, `no qos trust`, `priority-flow-control
on|mode on`, `no priority-flow-control`, `priority-flow-control priority N no-drop|drop`,
`priority-flow-control pause watchdog`, `service-profile NAME` (a qos profile the interface
applies); per `tx-queue N` / `uc-tx-queue N`: `priority strict`, `no priority`, `random-detect ecn
minimum-threshold X UNIT maximum-threshold Y UNIT [max-mark-probability P] [weight W]`.
`mc-tx-queue` sections and other commands are skipped. A running-config prints what differs from
the defaults: an interface section without a PFC line has PFC off, a queue without random-detect
marks no ECN. What an excerpt does not state (trust, the default DSCP map, a queue's default
scheduling) stays unknown, and the check says so.

Writing: `qos map` lines and one qos profile applied to the given interfaces. The queue section's
keyword depends on the platform family: `uc-tx-queue` on Trident and Tomahawk (Strata) platforms,
`tx-queue` on Jericho (Sand) ones, which reject `uc-tx-queue`. Interface names do not tell them
apart (a 7280R and a 7050X both name Ethernet1/1, a 7800R and a 7300X both Ethernet3/1/1), so the
family is a choice and rocetune refuses to guess it.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ParseError
from ..model.qos import PfcWatchdog
from ..model.switch_qos import TRAFFIC_CLASSES, QueueReading, SwitchIntent, SwitchQos, SwitchReading
from ..model.switch_qos import merged as merged_readings
from ..probe.parsers._common import as_text, clean, require_content
from .base import Choice, Rendered, SwitchOs, refuse, template

WHAT = "EOS running-config"
PROFILE = "ROCETUNE_ROCE"
# Threshold units EOS takes for random-detect ecn; segments (the platform's buffer cell) and
# milliseconds (queue delay) are not bytes and are not converted.
UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000 ** 2}
QUEUE_KEYWORD = {"strata": "uc-tx-queue", "jericho": "tx-queue"}
# The RoCE data queue's share: weighted (`no priority`) with a guaranteed bandwidth, as every published
# EOS RoCE example sets it (EOS's watchdog also watches only queues with a guaranteed bandwidth).
DATA_BANDWIDTH = 50
# The PFC watchdog, switch-wide: the plan's pfc_watchdog, else drop on the stuck queue (EOS
# errdisables the port without an action) with detection and recovery as SONiC's `pfcwd
# start_default` (200 ms); polling half the shorter of the two. EOS takes the action drop,
# errdisable or notify-only, the timeout and recovery time in seconds with two decimals and the
# polling interval with three (Arista AVD eos_cli_config_gen priority_flow_control.watchdog).
WATCHDOG_ACTIONS = ("drop", "errdisable", "notify-only")
_ECN_RE = re.compile(r"^random-detect ecn minimum-threshold (\d+) (\w+) maximum-threshold (\d+) (\w+)"
                     r"(?: max-mark-probability (\d+))?(?: weight \d+)?\Z")
_SECTION_RE = re.compile(r"^(interface|qos profile)\s+(\S+)")
_QUEUE_RE = re.compile(r"^(uc-|mc-)?tx-queue\s+(\d+)\Z")
_DSCP_MAP_RE = re.compile(r"^qos map dscp ([\d ]+) to traffic-class (\d+)(?: drop-precedence \d+)?\Z")
_COS_MAP_RE = re.compile(r"^qos map cos ([\d ]+) to traffic-class (\d+)(?: drop-precedence \d+)?\Z")
_TCQ_RE = re.compile(r"^qos map traffic-class ([\d ]+) to (?:uc-)?tx-queue (\d+)\Z")


class Eos(SwitchOs):
    name = "eos"
    title = "Arista EOS"
    suffix = ".cfg"
    order = 30
    port_example = "Ethernet1/1"
    reads = "an EOS running-config (show running-config) or an excerpt of it"
    choices = (
        Choice("platform", tuple(QUEUE_KEYWORD),
               "for EOS, the platform family: strata (Trident/Tomahawk: 7050X, 7060X, 7260X, 7300X, 7358X, 7368X, "
               "7388X; queues are uc-tx-queue) or jericho (7020R, 7280R, 7500R, 7800R; queues are tx-queue)"),
    )

    def looks_like(self, text: str) -> bool:
        from .nxos import MARKERS  # an NX-OS config has PFC and Ethernet interfaces too

        return bool(re.search(r"^[^\S\n]*(priority-flow-control|qos (map|trust|profile)|interface Ethernet)",
                              text, re.M)) and not MARKERS.search(text)

    def parse(self, text: Any, source: str = WHAT) -> SwitchQos:
        text = clean(as_text(text, WHAT))
        require_content(text, WHAT)
        if not self.looks_like(text):
            raise ParseError(source, "no EOS QoS lines (qos map, qos trust, priority-flow-control, interface ...)")
        return _parse(text, source)

    def render(self, intent: SwitchIntent, ports: Sequence[str], chosen: Mapping[str, str],
               fabric: Sequence[str] = ()) -> Rendered:
        platform = self.choice(chosen, "platform")
        if platform is None:
            raise refuse("EOS: the queue keyword depends on the platform family (uc-tx-queue on Trident/Tomahawk, "
                         "tx-queue on Jericho, which rejects uc-tx-queue), and port names do not tell them apart",
                         "name it: --platform strata|jericho (`show version`: 7050X/7060X/7260X/7300X/7368X are "
                         "strata, 7020R/7280R/7500R/7800R jericho)")
        i = intent
        ports = list(ports) + list(fabric)   # EOS takes no cable length: host and fabric ports alike
        assumes = [f"platform family {platform}: `{QUEUE_KEYWORD[platform]} N` sections, traffic class N in "
                   "queue N (EOS's default traffic-class-to-queue map)",
                   "the platform's default buffer (MMU) profile gives each no-drop priority its headroom (EOS takes "
                   "no cable length)"]
        watchdog = _watchdog_lines(i.watchdog or PfcWatchdog()) if i.lossless else []
        if i.lossless:
            timers = ", ".join(f"{k.replace('default ', '')} {v} s" for k, v in watchdog[1:])
            assumes.append(f"PFC watchdog action {watchdog[0][1]}, {timers} (switch-wide lines"
                           f"{'' if i.watchdog else ': rocetune default, the plan states no pfc_watchdog'}; "
                           "EOS errdisables the port when no action is given)")
        bound = (f"qos profile {PROFILE} applied to {', '.join(ports)}; the `qos map` lines are switch-wide"
                 if ports else f"the `qos map` lines (switch-wide); qos profile {PROFILE} is defined but applied "
                 "to no interface: PFC, queues and trust are per interface, name the RoCE ports with --ports")
        queues: Dict[int, Dict[str, Any]] = {i.data.priority: {"ecn": i.ecn, "bandwidth": DATA_BANDWIDTH}}
        queues.setdefault(i.cnp.priority, {})["strict"] = True
        text = template("eos.cfg.j2").render(
            source=i.source, notes=[f"assumes: {a}" for a in assumes] + [f"binds: {bound}"], trust=i.trust,
            dscp_map=[(c.dscp, c.priority) for c in i.classes], classes=list(TRAFFIC_CLASSES),
            lossless=list(i.lossless), profile=PROFILE, queue_keyword=QUEUE_KEYWORD[platform],
            queues=sorted(queues.items()), ports=ports, watchdog=watchdog)
        return Rendered(text=text, assumes=assumes, bound=bound)


def _seconds(ms: int) -> str:
    return str(ms // 1000) if ms % 1000 == 0 else f"{ms / 1000:.3f}".rstrip("0")


def _watchdog_lines(w: PfcWatchdog) -> List[Tuple[str, str]]:
    """(keyword, value) of the switch-wide `priority-flow-control pause watchdog` lines."""
    if w.action not in WATCHDOG_ACTIONS:
        raise refuse(f"EOS: pfc_watchdog.action {w.action}: EOS's watchdog drops, errdisables the port or only "
                     "notifies; it has no forward action", "use action: drop for EOS switches")
    odd = [f"{k} {v} ms" for k, v in (("detection_time", w.detection_time), ("restoration_time", w.restoration_time))
           if v % 10]
    if odd:
        raise refuse(f"EOS: pfc_watchdog {', '.join(odd)}: EOS takes the watchdog's timeout and recovery time in "
                     "seconds with two decimals (10 ms steps)", "use multiples of 10 ms")
    return [("action", w.action), ("default timeout", _seconds(w.detection_time)),
            ("default recovery-time", _seconds(w.restoration_time)),
            ("default polling-interval", _seconds(min(w.detection_time, w.restoration_time) // 2))]


# --- reading -----------------------------------------------------------------------------------

class _Section:
    def __init__(self) -> None:
        self.trust: Optional[str] = None
        self.pfc_on: Optional[bool] = None
        self.no_drop: List[int] = []
        self.drop: List[int] = []
        self.profile: Optional[str] = None
        self.watchdog: Optional[bool] = None
        self.queues: Dict[int, Dict[str, Any]] = {}
        self.shutdown = False
        self.watchdog_action: Optional[str] = None   # `priority-flow-control pause watchdog port action A`
        self.qos = False      # the section states QoS of its own (trust, PFC, a queue, a qos profile)
        self.routed = False   # `no switchport`: EOS's Ethernet interfaces switch unless told


def _parse(text: str, source: str) -> SwitchQos:
    dscp_to_tc: Dict[int, int] = {}
    cos_to_tc: Dict[int, int] = {}
    tc_to_queue: Dict[int, int] = {}
    all_off = False
    watchdog: Dict[str, str] = {}
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
            all_off = _global_line(line, dscp_to_tc, cos_to_tc, tc_to_queue, watchdog) or all_off
            continue
        m = _QUEUE_RE.match(line)
        if m:  # multicast queues are not RoCE's: their lines are read into a queue nobody looks at
            queue = {} if m.group(1) == "mc-" else section.queues.setdefault(int(m.group(2)), {})
            section.qos = section.qos or m.group(1) != "mc-"
            continue
        if queue is not None and _queue_line(line, queue, source):
            continue
        _section_line(line, section)
    interfaces = {name: s for name, s in interfaces.items() if _is_data_port(name)}
    # One policy on every OS: a port that is shut down is not judged; one that states no QoS of its
    # own (no trust, PFC, queue or service-profile line) binds none, as a SONiC port without its
    # PORT_QOS_MAP entry.
    inactive = {name: "shutdown" for name, s in interfaces.items() if s.shutdown}
    unbound = [name for name, s in interfaces.items() if name not in inactive and not s.qos]
    judged = {name: s for name, s in interfaces.items() if name not in inactive and name not in unbound}
    groups = _groups(judged, profiles, dscp_to_tc, cos_to_tc, tc_to_queue, all_off, watchdog) \
        if judged or not interfaces else []
    warnings = [] if interfaces else ["no interface section: the global QoS lines alone were read"]
    if inactive:
        down = list(inactive)
        warnings.append(f"not judged: {len(down)} interface(s) shut down ({', '.join(down[:8])}"
                        f"{' ...' if len(down) > 8 else ''})")
    return SwitchQos(kind="eos", source=source, groups=groups, warnings=warnings,
                     unbound_ports=unbound if interfaces else None,
                     all_ports=len(interfaces) - len(inactive) if interfaces else None, inactive_ports=inactive,
                     form="running-config" if interfaces else "configuration excerpt without interfaces")


_WATCHDOG_RE = re.compile(r"^priority-flow-control pause watchdog (action|default timeout|default recovery-time|"
                          r"default polling-interval) (\S+)\Z")


def _global_line(line: str, dscp_to_tc, cos_to_tc, tc_to_queue, watchdog: Dict[str, str]) -> bool:
    """A global line into the maps and the watchdog's settings; True for `priority-flow-control
    all off`."""
    m = _WATCHDOG_RE.match(line)
    if m:
        watchdog[m.group(1).replace("default ", "")] = m.group(2)
        return False
    for regex, target in ((_DSCP_MAP_RE, dscp_to_tc), (_COS_MAP_RE, cos_to_tc), (_TCQ_RE, tc_to_queue)):
        m = regex.match(line)
        if m:
            for v in m.group(1).split():
                target[int(v)] = int(m.group(2))
            return False
    return line == "priority-flow-control all off"


def _is_data_port(name: str) -> bool:
    return not name.lower().startswith(("management", "loopback", "vlan", "vxlan"))


def _queue_line(line: str, queue: Dict[str, Any], source: str) -> bool:
    if line == "priority strict":
        queue["strict"] = True
    elif line == "no priority":
        queue["strict"] = False
    elif _ECN_RE.match(line):  # other random-detect lines (drop, ecn count) are no ECN marking
        m = _ECN_RE.match(line)
        assert m is not None
        lo, lo_unit, hi, hi_unit, prob = m.groups()
        if lo_unit != hi_unit:
            raise ParseError(source, f"{line!r}: the two thresholds in different units")
        queue.update(ecn=True, min=int(lo), max=int(hi), unit=lo_unit, probability=int(prob) if prob else None)
    else:
        return False
    return True


def _section_line(line: str, section: _Section) -> None:
    if line == "shutdown":
        section.shutdown = True
        return
    if line == "no switchport":
        section.routed = True
        return
    if line.startswith(("qos ", "no qos ", "priority-flow-control", "no priority-flow-control", "service-profile ")):
        section.qos = True
    m = re.match(r"^qos trust (dscp|cos)\Z", line)
    if m:
        section.trust = "dscp" if m.group(1) == "dscp" else "pcp"
    elif line == "no qos trust":
        section.trust = "none"
    elif line in ("priority-flow-control on", "priority-flow-control mode on"):
        section.pfc_on = True
    elif line in ("no priority-flow-control", "no priority-flow-control mode on", "priority-flow-control off"):
        section.pfc_on = False
    elif re.match(r"^priority-flow-control priority \d+ (no-drop|drop)\Z", line):
        words = line.split()
        (section.no_drop if words[3] == "no-drop" else section.drop).append(int(words[2]))
    elif line == "priority-flow-control pause watchdog":
        section.watchdog = True
    elif line == "no priority-flow-control pause watchdog":
        section.watchdog = False
    elif line.startswith("priority-flow-control pause watchdog port action "):
        section.watchdog_action = line.split()[-1]
    elif line.startswith("service-profile "):
        section.profile = line.split()[1]


def _groups(interfaces: Dict[str, _Section], profiles: Dict[str, _Section], dscp_to_tc: Dict[int, int],
            cos_to_tc: Dict[int, int], tc_to_queue: Dict[int, int], all_off: bool,
            watchdog: Dict[str, str]) -> List[SwitchReading]:
    readings = []
    names = list(interfaces) or ["global"]
    for name in names:
        own = interfaces.get(name, _Section())
        merged = _merge(profiles.get(own.profile) if own.profile else None, own)
        reading = SwitchReading(ports=[] if name == "global" else [name], trust=merged.trust,
                                dscp_to_priority=dict(dscp_to_tc), pcp_to_priority=dict(cos_to_tc),
                                tc_to_queue=dict(tc_to_queue),
                                dscp_default="not in `qos map dscp`: the EOS default map applies")
        reading.pfc = _pfc(merged, name, all_off)
        # A running-config prints every non-default line: a queue without random-detect marks no ECN.
        reading.queues = {q: _queue_reading(merged.queues.get(q, {})) for q in TRAFFIC_CLASSES}
        reading.buffer_note = "EOS sizes no-drop headroom from the platform's buffer profile (not in the config)"
        reading.cable_note = "EOS takes no cable length: headroom comes from the platform's buffer profile"
        if reading.trust == "pcp":  # routing matters to PCP trust only (RoCE v2 on a routed port is untagged)
            reading.routed = own.routed if name != "global" else None
        _watchdog(reading, merged, name, watchdog)
        readings.append(reading)
    return merged_readings(readings)


def _watchdog(reading: SwitchReading, s: _Section, name: str, settings: Dict[str, str]) -> None:
    """`priority-flow-control pause watchdog` in the interface (or its qos profile) turns it on;
    the global `... watchdog action drop|no-drop` sets what it does, and without it EOS errdisables
    the port (Arista AVD priority_flow_control.watchdog: after the timeout the port is errdisabled
    or drops on the congested priorities)."""
    if s.watchdog is not None:
        reading.watchdog = s.watchdog
    elif name != "global":
        reading.watchdog = False  # a running-config prints the line where it is on
    else:
        reading.watchdog_note = "an excerpt without interfaces says nothing of a port's watchdog"
    if reading.watchdog:
        reading.watchdog_action = s.watchdog_action or settings.get("action", "errdisable")
        timers = ", ".join(f"{k} {v} s" for k, v in sorted(settings.items()) if k != "action")
        parts = [] if "action" in settings or s.watchdog_action else [
            "no `priority-flow-control pause watchdog action` line: EOS errdisables the port"]
        parts.append(f"timers {timers}" if timers else "EOS's default timers")
        reading.watchdog_note = "; ".join(parts)
        reading.watchdog_detection_ms = _ms(settings.get("timeout"))
        reading.watchdog_restoration_ms = _ms(settings.get("recovery-time"))


def _ms(seconds: Optional[str]) -> Optional[int]:
    """EOS's watchdog seconds (`0.2`, `60`) in milliseconds; None when absent or not a number."""
    if seconds is None or not re.fullmatch(r"\d{1,5}(\.\d{1,3})?", seconds):
        return None
    whole, _, part = seconds.partition(".")
    return int(whole) * 1000 + int((part + "000")[:3])


def _pfc(s: _Section, name: str, all_off: bool) -> Optional[Tuple[int, ...]]:
    if all_off or s.pfc_on is False:
        return ()
    if s.pfc_on:
        return tuple(sorted(set(s.no_drop)))
    if name == "global":
        return None  # an excerpt of global lines says nothing about a port
    return ()  # a running-config interface without `priority-flow-control on` has PFC off


def _merge(profile: Optional[_Section], own: _Section) -> _Section:
    """An interface's own lines over the qos profile it applies."""
    if profile is None:
        return own
    out = _Section()
    out.trust = own.trust or profile.trust
    out.pfc_on = own.pfc_on if own.pfc_on is not None else profile.pfc_on
    out.no_drop = own.no_drop or profile.no_drop
    out.watchdog = own.watchdog if own.watchdog is not None else profile.watchdog
    out.watchdog_action = own.watchdog_action or profile.watchdog_action
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


OS = Eos()
