"""Cisco NX-OS (Nexus 9000): a Modular QoS CLI configuration written from the plan, and a
running-config (or an excerpt of it) read back, one reading per group of interfaces alike.

NX-OS classifies in a `policy-map type qos` applied to an interface (`service-policy type qos
input NAME`, or switch-wide in `system qos`): each class names a `class-map type qos` that matches
DSCPs (`match dscp 24-31`) or VLAN priorities (`match cos 3`) and sets a qos-group; the first class
that matches wins and `class-default` takes the rest (qos-group 0 when it sets none). qos-group N
leaves by egress queue N (`class type queuing c-out-8q-qN`, `c-out-8q-q-default` for 0; the 4-queue
templates' `c-out-qN`). The `policy-map type network-qos` of `system qos` makes a qos-group no-drop
with `pause pfc-cos C` in its class `c-8q-nqN` (the switch carves its no-drop buffer and headroom
for that class); an interface sends and honours PFC with `priority-flow-control mode on` (`auto`,
the default, only where DCBX negotiates it). The `policy-map type queuing` output policy of
`system qos` (or of the interface) schedules the queues: `priority level 1` strict, `bandwidth
[remaining] percent N` weighted, `random-detect ... ecn` ECN marking. The PFC watchdog is
`priority-flow-control watch-dog-interval on` switch-wide or per interface; on a stuck no-drop
queue it drops the queue's packets (Cisco Nexus 9000 NX-OS QoS Configuration Guide, "Configuring
Priority Flow Control").

Not in a configuration, and so not judged: the no-drop buffer and headroom sizes (the platform
carves them; NX-OS takes no cable length), the watchdog where the running-config has no line (its
default differs by release and platform), PFC on an interface left in `auto` mode (DCBX decides).

Writing: class-maps and one policy of each type named ROCETUNE_*, bound in `system qos` and on
each given interface, qos-group N for the plan's priority N (queue N).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ParseError
from ..model.switch_qos import TRAFFIC_CLASSES, QueueReading, SwitchIntent, SwitchQos, SwitchReading, merged
from ..probe.parsers._common import as_text, clean, require_content
from .base import Rendered, SwitchOs, listed, refuse

WHAT = "NX-OS running-config"
NAME = "ROCETUNE"
# Threshold units of `random-detect` (bytes); packets are not bytes and are not converted.
UNITS = {"bytes": 1, "kbytes": 1000, "mbytes": 1000**2}
MTU = 9216
# The data queue's share of what strict priority leaves (the blueprint's RoCE queue gets 50-60%).
DATA_SHARE, CTS_SHARE = 50, 10
WATCHDOG_ACTION = "drop"  # NX-OS drops the stuck no-drop queue's packets (not configurable)

# Lines only NX-OS writes (EOS has class-maps of type qos and `priority-flow-control mode on` too,
# none of these).
MARKERS = re.compile(
    r"^[^\S\n]*(system qos|policy-map type (network-qos|queuing)|set qos-group|"
    r"priority-flow-control watch-dog-interval)\b",
    re.M,
)
_SECTION_RE = re.compile(
    r"^(class-map type qos|policy-map type (?:qos|network-qos|queuing)|system qos|interface)"
    r"(?:\s+(match-all|match-any))?(?:\s+(\S+))?\s*\Z"
)
_CLASS_RE = re.compile(r"^class(?: type (?:network-qos|queuing))?\s+(\S+)\Z")
_QUEUE_CLASS_RE = re.compile(r"^c-out-(?:8q-)?q(\d|-default)\Z")
_NQ_CLASS_RE = re.compile(r"^c-(?:8q-)?nq(\d|-default)\Z")
_ECN_RE = re.compile(
    r"^random-detect minimum-threshold (\d+) (\w+) maximum-threshold (\d+) (\w+)"
    r"(?: drop-probability (\d+))?(?: weight \d+)?( ecn)?\Z"
)
_SERVICE_RE = re.compile(r"^service-policy type (qos|queuing|network-qos)(?: (input|output))? (\S+)\Z")


class Nxos(SwitchOs):
    name = "nxos"
    title = "Cisco NX-OS"
    suffix = ".nxos"
    order = 40
    port_example = "Ethernet1/1"
    reads = "an NX-OS running-config (show running-config) or an excerpt of it"

    def looks_like(self, text: str) -> bool:
        return bool(MARKERS.search(text))

    def parse(self, text: Any, source: str = WHAT) -> SwitchQos:
        text = clean(as_text(text, WHAT))
        require_content(text, WHAT)
        if not self.looks_like(text):
            raise ParseError(source, "no NX-OS QoS lines (class-map type qos, policy-map type ..., system qos)")
        return _Config(source).read(text)

    def render(
        self, intent: SwitchIntent, ports: Sequence[str], chosen: Mapping[str, str], fabric: Sequence[str] = ()
    ) -> Rendered:
        return _render(intent, list(ports) + list(fabric))


# --- reading -----------------------------------------------------------------------------------


class _Interface:
    def __init__(self) -> None:
        self.qos: Optional[str] = None  # the input qos policy
        self.queuing: Optional[str] = None  # an output queuing policy of its own
        self.pfc_mode: Optional[str] = None  # on | off | auto; None: the default (auto)
        self.watchdog: Optional[bool] = None
        self.shutdown = False
        self.routed: Optional[bool] = None  # `no switchport` / `switchport`
        self.stated = False  # states QoS of its own


class _Config:
    """The sections of a running-config that QoS depends on."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.class_maps: Dict[str, Dict[str, Any]] = {}
        self.qos_policies: Dict[str, List[Tuple[str, Optional[int]]]] = {}
        self.nq_policies: Dict[str, Dict[int, Tuple[int, ...]]] = {}
        self.queuing: Dict[str, Dict[int, Dict[str, Any]]] = {}
        self.system: Dict[str, str] = {}
        self.system_seen = False  # the output has a `system qos` section
        self.watchdog: Optional[bool] = None
        self.interfaces: Dict[str, _Interface] = {}

    def read(self, text: str) -> SwitchQos:
        kind, name, klass = None, "", None
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("!"):
                continue
            top = not raw[:1].isspace()
            m = _SECTION_RE.match(line)
            if m and (top or m.group(1) != "interface"):
                kind, name, klass = m.group(1), m.group(3) or "", None
                self._open(kind, name, m.group(2))
                continue
            if top:
                kind = None
                self._global(line)
                continue
            if kind is None:
                continue
            m = _CLASS_RE.match(line)
            if m and kind.startswith("policy-map"):
                klass = m.group(1)
                self._class(kind, name, klass)
                continue
            self._line(kind, name, klass, line)
        return self._reading()

    def _open(self, kind: str, name: str, match: Optional[str]) -> None:
        if kind == "class-map type qos":
            self.class_maps[name] = {"all": match == "match-all", "dscp": [], "cos": []}
        elif kind == "policy-map type qos":
            self.qos_policies[name] = []
        elif kind == "policy-map type network-qos":
            self.nq_policies[name] = {}
        elif kind == "policy-map type queuing":
            self.queuing[name] = {}
        elif kind == "interface":
            self.interfaces[name] = _Interface()
        elif kind == "system qos":
            self.system_seen = True

    def _global(self, line: str) -> None:
        if line == "priority-flow-control watch-dog-interval on":
            self.watchdog = True
        elif line in ("priority-flow-control watch-dog-interval off", "no priority-flow-control watch-dog-interval on"):
            self.watchdog = False

    def _class(self, kind: str, name: str, klass: str) -> None:
        if kind == "policy-map type qos":
            self.qos_policies[name].append((klass, None))

    def _line(self, kind: str, name: str, klass: Optional[str], line: str) -> None:
        if kind == "class-map type qos":
            m = re.match(r"^match (dscp|cos) (.+)\Z", line)
            if m:
                self.class_maps[name][m.group(1)] += _values(m.group(2), f"class-map {name}", self.source)
        elif kind == "policy-map type qos" and klass is not None:
            m = re.match(r"^set qos-group (\d)\Z", line)
            if m:
                self.qos_policies[name][-1] = (klass, int(m.group(1)))
        elif kind == "policy-map type network-qos" and klass is not None:
            group = _group_of(_NQ_CLASS_RE, klass)
            # `pause pfc-cos 3`, `pause no-drop pfc-cos 3`, `pause buffer-size B pause-threshold P
            # resume-threshold R pfc-cos 3` (the platforms that take the thresholds)
            m = re.match(r"^pause\b.*?\bpfc-cos (.+)\Z", line)
            if group is not None and m:
                self.nq_policies[name][group] = tuple(_values(m.group(1), f"network-qos {name}", self.source))
        elif kind == "policy-map type queuing" and klass is not None:
            group = _group_of(_QUEUE_CLASS_RE, klass)
            if group is not None:
                _queue_line(self.queuing[name].setdefault(group, {}), line, self.source)
        elif kind == "system qos":
            m = _SERVICE_RE.match(line)
            if m:
                self.system[m.group(1)] = m.group(3)
        elif kind == "interface":
            self._interface_line(self.interfaces[name], line)

    def _interface_line(self, s: _Interface, line: str) -> None:
        m = _SERVICE_RE.match(line)
        if line == "shutdown":
            s.shutdown = True
        elif line in ("switchport", "no switchport"):
            s.routed = line == "no switchport"
        elif m and m.group(1) == "qos":
            s.qos, s.stated = m.group(3), True
        elif m and m.group(1) == "queuing" and m.group(2) == "output":
            s.queuing, s.stated = m.group(3), True
        elif re.match(r"^priority-flow-control mode (on|off|auto)\b", line):
            s.pfc_mode, s.stated = line.split()[2], True
        elif line == "no priority-flow-control mode on":
            s.pfc_mode, s.stated = "off", True
        elif line == "priority-flow-control watch-dog-interval on":
            s.watchdog, s.stated = True, True
        elif line in ("priority-flow-control watch-dog-interval off", "no priority-flow-control watch-dog-interval on"):
            s.watchdog, s.stated = False, True

    # --- the readings ----------------------------------------------------------------------------

    def _reading(self) -> SwitchQos:
        warnings: List[str] = []
        ports = {n: s for n, s in self.interfaces.items() if _is_data_port(n)}
        inactive = {n: "shutdown" for n, s in ports.items() if s.shutdown}
        unbound = [n for n, s in ports.items() if n not in inactive and not s.stated and "qos" not in self.system]
        judged = [n for n in ports if n not in inactive and n not in unbound]
        nodrop = self._nodrop(warnings)
        readings = [self._port(n, ports[n], nodrop, warnings) for n in judged]
        if not ports:
            readings = [self._port("global", _Interface(), nodrop, warnings)]
            warnings.append("no interface section: the switch-wide QoS lines alone were read")
        auto = [n for n in judged if ports[n].pfc_mode in (None, "auto")]
        if auto and nodrop:
            warnings.append(
                f"PFC mode auto (NX-OS's default) on {', '.join(auto[:8])}"
                f"{' ...' if len(auto) > 8 else ''}: PFC is on only where DCBX negotiates it with the peer"
            )
        if inactive:
            warnings.append(f"not judged: {len(inactive)} interface(s) shut down ({', '.join(list(inactive)[:8])})")
        return SwitchQos(
            kind="nxos",
            source=self.source,
            groups=merged(readings),
            warnings=warnings,
            unbound_ports=unbound if ports else None,
            all_ports=len(ports) - len(inactive) if ports else None,
            inactive_ports=inactive,
            form="running-config" if ports else "configuration excerpt without interfaces",
        )

    def _nodrop(self, warnings: List[str]) -> Optional[Dict[int, Tuple[int, ...]]]:
        """qos-group -> PFC CoS values of the network-qos policy `system qos` applies; None when
        the output applies none."""
        name = self.system.get("network-qos")
        if name is None:
            # a `system qos` without a network-qos policy keeps NX-OS's default one, which pauses no class
            return {} if self.system_seen else None
        if name not in self.nq_policies:
            warnings.append(f"system qos applies network-qos policy {name}, which the output does not define")
            return None
        return self.nq_policies[name]

    def _port(self, port: str, s: _Interface, nodrop, warnings: List[str]) -> SwitchReading:
        r = SwitchReading(ports=[] if port == "global" else [port])
        policy = s.qos or self.system.get("qos")
        if policy is not None:
            self._classify(r, policy, warnings)
        else:
            r.dscp_default = "not classified: no qos input policy (every packet in qos-group 0)"
            r.dscp_default_priority = 0
        pfc_cos = sorted({c for cos in (nodrop or {}).values() for c in cos})
        if nodrop is None:
            r.pfc = None
        elif s.pfc_mode == "on":
            r.pfc = tuple(pfc_cos)
        elif s.pfc_mode == "off":
            r.pfc = ()
        else:
            r.pfc = None  # auto: DCBX decides (said in a warning)
        queuing = self.queuing.get(s.queuing or self.system.get("queuing", ""), None)
        for q in TRAFFIC_CLASSES:
            fields = queuing.get(q, {}) if queuing is not None else None
            r.queues[q] = _queue_reading(fields, None if nodrop is None else q in nodrop)
        if nodrop is not None and r.pfc:
            r.ingress_lossless = {p: any(p in cos for cos in nodrop.values()) and p in nodrop for p in r.pfc}
        if r.trust == "pcp":  # routing matters to PCP trust only (RoCE v2 on a routed port is untagged)
            r.routed = s.routed
        r.buffer_note = "NX-OS carves the no-drop buffer and headroom of each pause class itself (not in the config)"
        r.cable_note = "NX-OS takes no cable length: the platform sizes the headroom"
        watchdog = s.watchdog if s.watchdog is not None else self.watchdog
        r.watchdog = watchdog
        if watchdog:
            r.watchdog_action = WATCHDOG_ACTION
        elif watchdog is None:
            r.watchdog_note = "no watch-dog-interval line: NX-OS's default differs by release and platform"
        return r

    def _classify(self, r: SwitchReading, policy: str, warnings: List[str]) -> None:
        classes = self.qos_policies.get(policy)
        if classes is None:
            message = f"qos policy {policy} is applied but not defined"
            if message not in warnings:
                warnings.append(message)
            r.dscp_default = f"not known: policy-map type qos {policy} is not in the output"
            return
        default = 0
        dscp = cos = False
        for klass, group in classes:
            if klass == "class-default":
                default = group if group is not None else 0
                continue
            spec = self.class_maps.get(klass)
            if spec is None or group is None:
                continue
            if spec["all"] and spec["dscp"] and spec["cos"]:
                continue  # match-all on both fields: not one field's map
            for d in spec["dscp"]:
                r.dscp_to_priority.setdefault(d, group)
            for c in spec["cos"]:
                r.pcp_to_priority.setdefault(c, group)
            dscp, cos = dscp or bool(spec["dscp"]), cos or bool(spec["cos"])
        r.trust = "both" if dscp and cos else ("dscp" if dscp else ("pcp" if cos else None))
        r.dscp_default = f"class-default: qos-group {default}"
        r.dscp_default_priority = default
        for p in TRAFFIC_CLASSES:  # an unmatched CoS lands in class-default too
            r.pcp_to_priority.setdefault(p, default)


def _values(text: str, where: str, source: str) -> List[int]:
    """`24-31`, `24,26`, `24 26`."""
    out: List[int] = []
    for part in re.split(r"[,\s]+", text.strip()):
        lo, sep, hi = part.partition("-")
        try:
            out += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
        except ValueError:
            raise ParseError(source, f"{where}: {text!r} is not a list of numbers") from None
    return out


def _group_of(regex, klass: str) -> Optional[int]:
    m = regex.match(klass)
    if not m:
        return None
    return 0 if m.group(1) == "-default" else int(m.group(1))


def _queue_line(q: Dict[str, Any], line: str, source: str) -> None:
    if line.startswith("priority"):
        q["strict"] = True
    elif line.startswith("bandwidth"):
        q.setdefault("strict", False)
    else:
        m = _ECN_RE.match(line)
        if m:
            lo, lo_unit, hi, hi_unit, prob, ecn = m.groups()
            if lo_unit != hi_unit:
                raise ParseError(source, f"{line!r}: the two thresholds in different units")
            q.update(ecn=bool(ecn), min=int(lo), max=int(hi), unit=lo_unit, probability=int(prob) if prob else None)


def _queue_reading(fields: Optional[Dict[str, Any]], lossless: Optional[bool]) -> QueueReading:
    if fields is None:
        return QueueReading(lossless=lossless)
    scale = UNITS.get(fields.get("unit", "bytes"))
    lo, hi = fields.get("min"), fields.get("max")
    marked = fields.get("ecn", False)
    return QueueReading(
        strict=fields.get("strict"),
        ecn=marked,
        min_threshold=None if not marked or lo is None or scale is None else float(lo * scale),
        max_threshold=None if not marked or hi is None or scale is None else float(hi * scale),
        probability=fields.get("probability") if marked else None,
        threshold_unit=fields.get("unit", "bytes"),
        lossless=lossless,
    )


def _is_data_port(name: str) -> bool:
    return not name.lower().startswith(("mgmt", "loopback", "vlan", "nve", "tunnel"))


# --- writing -----------------------------------------------------------------------------------


def _render(intent: SwitchIntent, ports: List[str]) -> Rendered:
    i = intent
    lossless = list(i.lossless)
    if 0 in lossless:
        raise refuse(
            "NX-OS: priority 0 is lossless in the plan, but qos-group 0 is class-default's, where every "
            "unclassified packet goes",
            "make RoCE lossless on a priority other than 0",
        )
    if i.data.priority == i.cnp.priority:
        raise refuse(
            "NX-OS: data and CNPs on one qos-group cannot be both no-drop weighted and strict priority",
            "give cnp.priority its own value",
        )
    field = "dscp" if i.trust == "dscp" else "cos"
    classes: Dict[int, List[int]] = {}
    for c in i.classes:
        classes.setdefault(c.priority, []).append(c.dscp if field == "dscp" else c.priority)
    lines = [
        f"! rocetune qos render --os nxos, from the QoS plan: {i.source}",
        "! ECN thresholds in kbytes (1000 bytes) or bytes; qos-group N leaves by queue N (the 8-queue templates).",
    ]
    assumes = [
        "the 8-queue templates (c-out-8q-qN, c-8q-nqN): qos-group N leaves by queue N",
        "the platform carves each pause class's no-drop buffer and headroom (NX-OS takes no cable length)",
    ]
    if lossless and i.watchdog is not None and i.watchdog.action != WATCHDOG_ACTION:
        raise refuse(
            f"NX-OS: pfc_watchdog.action {i.watchdog.action}: NX-OS's PFC watchdog drops a stuck no-drop "
            "queue's packets (Cisco Nexus 9000 NX-OS QoS configuration guide, PFC watchdog); it has no other action",
            "use action: drop for NX-OS switches",
        )
    if lossless:
        assumes.append(
            "PFC watchdog on (watch-dog-interval on): NX-OS drops a stuck no-drop queue's packets, with "
            "its own intervals and multipliers"
            + (
                f" (the plan's detection {i.watchdog.detection_time} ms and restoration "
                f"{i.watchdog.restoration_time} ms are not set on NX-OS: it counts in poll intervals times "
                "multipliers, not in times)"
                if i.watchdog is not None
                else ""
            )
        )
    bound = (
        f"qos input policy {NAME}_QOS and PFC mode on for {', '.join(ports)}; the network-qos and queuing "
        "policies switch-wide (system qos)"
        if ports
        else "the network-qos and queuing policies switch-wide (system qos); the qos input policy is defined but "
        "applied to no interface, so nothing is classified: name the RoCE ports with --ports"
    )
    lines += [f"! assumes: {a}" for a in assumes] + [f"! binds: {bound}"]
    for group, values in sorted(classes.items()):
        lines += [f"class-map type qos match-any {NAME}_{group}", f"  match {field} {listed(sorted(set(values)))}"]
    lines.append(f"policy-map type qos {NAME}_QOS")
    for group in sorted(classes):
        lines += [f"  class {NAME}_{group}", f"    set qos-group {group}"]
    lines += ["  class class-default", "    set qos-group 0"]
    lines.append(f"policy-map type network-qos {NAME}_NQ")
    for p in sorted(lossless):
        lines += [f"  class type network-qos c-8q-nq{p}", f"    mtu {MTU}", f"    pause pfc-cos {p}"]
    lines += ["  class type network-qos c-8q-nq-default", f"    mtu {MTU}"]
    lines += _queuing(i)
    lines += [
        "system qos",
        f"  service-policy type network-qos {NAME}_NQ",
        f"  service-policy type queuing output {NAME}_OUT",
    ]
    if lossless:
        lines.append("priority-flow-control watch-dog-interval on")
    for port in ports:
        lines += [f"interface {port}", f"  priority-flow-control mode {'on' if lossless else 'off'}"]
        if lossless:
            lines.append("  priority-flow-control watch-dog-interval on")
        lines.append(f"  service-policy type qos input {NAME}_QOS")
    return Rendered(text="\n".join(lines) + "\n", assumes=assumes, bound=bound)


def _queuing(i: SwitchIntent) -> List[str]:
    """The output queuing policy: the CNP queue strict, the data queue weighted with ECN, a third
    RoCE class (CTS on its own priority) weighted, the default queue the rest, others none."""
    shares = {i.data.priority: DATA_SHARE}
    if i.cts is not None and i.cts.priority not in (i.data.priority, i.cnp.priority):
        shares[i.cts.priority] = CTS_SHARE
    shares[0] = 100 - sum(v for k, v in shares.items() if k != 0) if 0 not in shares else shares[0]
    out = [f"policy-map type queuing {NAME}_OUT"]
    for q in range(7, -1, -1):
        klass = "c-out-8q-q-default" if q == 0 else f"c-out-8q-q{q}"
        out.append(f"  class type queuing {klass}")
        if q == i.cnp.priority:
            out.append("    priority level 1")
            continue
        out.append(f"    bandwidth remaining percent {shares.get(q, 0)}")
        if q == i.data.priority:
            e = i.ecn
            out.append(
                f"    random-detect minimum-threshold {_size(e.min_threshold)} maximum-threshold "
                f"{_size(e.max_threshold)} drop-probability {e.probability} weight 0 ecn"
            )
    return out


def _size(value: int) -> str:
    return f"{value // 1000} kbytes" if value % 1000 == 0 else f"{value} bytes"


OS = Nxos()
