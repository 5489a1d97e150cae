"""SONiC CONFIG_DB QoS (`sonic-cfggen -d --print-data`, /etc/sonic/config_db.json, or what
`config qos reload` generates) read into rocetune.model.switch_qos readings: one reading per group
of ports that share their maps, PFC priorities and queue settings.

Tables read: DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP, TC_TO_QUEUE_MAP, PORT_QOS_MAP, QUEUE, SCHEDULER,
WRED_PROFILE (field names as in sonic-buildimage files/build_templates/qos_config.j2).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...errors import ParseError
from ...model.jsonread import load_json
from ...model.switch_qos import QueueReading, SwitchQos, SwitchReading
from ._common import as_text, clean, require_content

WHAT = "SONiC config_db"
TABLES = ("DSCP_TO_TC_MAP", "DOT1P_TO_TC_MAP", "TC_TO_QUEUE_MAP", "PORT_QOS_MAP", "QUEUE",
          "SCHEDULER", "WRED_PROFILE")
# WRED_PROFILE.ecn values that mark green packets (what an unpoliced RoCE packet is).
_ECN_GREEN = ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and any(t in doc for t in TABLES)


def parse(text: Any, source: str = WHAT) -> SwitchQos:
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    try:
        doc = load_json(text)
    except ValueError as exc:
        raise ParseError(source, f"not JSON: {exc}", hint="give the output of `sonic-cfggen -d --print-data` "
                                                          "or /etc/sonic/config_db.json") from None
    if not looks_like(doc):
        raise ParseError(source, "no QoS table (DSCP_TO_TC_MAP, PORT_QOS_MAP, QUEUE ...) in this JSON")
    return from_doc(doc, source)


def from_doc(doc: Dict[str, Any], source: str) -> SwitchQos:
    warnings: List[str] = []
    port_maps = _table(doc, "PORT_QOS_MAP", source)
    queues = _queues(_table(doc, "QUEUE", source), source)
    ports = sorted((set(p for p in port_maps if p != "global") | set(queues)), key=_natural)
    global_map = port_maps.get("global", {}) if isinstance(port_maps.get("global"), dict) else {}
    groups: Dict[Tuple, SwitchReading] = {}
    for port in ports or ["global"]:
        binding = port_maps.get(port) if isinstance(port_maps.get(port), dict) else {}
        reading = _reading(doc, port, binding, global_map, queues.get(port, {}), source, warnings)
        key = _signature(reading)
        if key in groups:
            groups[key].ports.append(port)
        else:
            groups[key] = reading
    return SwitchQos(kind="sonic", source=source, groups=list(groups.values()), warnings=warnings)


def _reading(doc, port, binding, global_map, queue_fields, source, warnings) -> SwitchReading:
    r = SwitchReading(ports=[] if port == "global" else [port])
    dscp_name = _ref(binding, port, "dscp_to_tc_map", source) or _ref(global_map, "global", "dscp_to_tc_map", source)
    dot1p_name = _ref(binding, port, "dot1p_to_tc_map", source)
    if dscp_name:
        r.trust = "dscp"
        r.dscp_to_tc = _int_map(_named(doc, "DSCP_TO_TC_MAP", dscp_name, source), f"DSCP_TO_TC_MAP|{dscp_name}", source)
        r.dscp_default = "not in the map: traffic class 0"
    elif dot1p_name:
        r.trust = "pcp"
    tcq = _ref(binding, port, "tc_to_queue_map", source)
    if tcq:
        r.tc_to_queue = _int_map(_named(doc, "TC_TO_QUEUE_MAP", tcq, source), f"TC_TO_QUEUE_MAP|{tcq}", source)
    if port != "global":
        r.pfc = _priorities(binding.get("pfc_enable", ""), f"PORT_QOS_MAP|{port}.pfc_enable", source)
    for q, fields in sorted(queue_fields.items()):
        r.queues[q] = _queue(doc, fields, f"QUEUE|{port}|{q}", source, warnings)
    if port != "global":
        for q in range(8):  # a queue with no QUEUE entry has no WRED profile: no ECN marking
            r.queues.setdefault(q, QueueReading(ecn=False))
    return r


def _ref(binding: Dict[str, Any], port: str, field: str, source: str) -> Optional[str]:
    """The name a PORT_QOS_MAP entry (or a QUEUE entry) gives in `field`: a string, or nothing."""
    name = binding.get(field)
    if name is None or name == "":
        return None
    if not isinstance(name, str):
        table = "QUEUE" if field in ("scheduler", "wred_profile") else "PORT_QOS_MAP"
        raise ParseError(source, f"{table}|{port}.{field}: {str(name)[:60]!r} is not the name of a map")
    return name


def _queue(doc, fields, where, source, warnings) -> QueueReading:
    strict = None
    sched_name = _ref(fields, where[len("QUEUE|"):], "scheduler", source)
    if sched_name:
        sched = _named(doc, "SCHEDULER", sched_name, source, warnings)
        if sched is not None:
            strict = str(sched.get("type", "")).upper() == "STRICT"
    wred_name = _ref(fields, where[len("QUEUE|"):], "wred_profile", source)
    if not wred_name:
        return QueueReading(strict=strict, ecn=False)
    wred = _named(doc, "WRED_PROFILE", wred_name, source, warnings)
    if wred is None:
        return QueueReading(strict=strict)
    ecn = str(wred.get("ecn", "ecn_none")) in _ECN_GREEN
    return QueueReading(strict=strict, ecn=ecn,
                        min_threshold=_number(wred.get("green_min_threshold"), f"{where} green_min_threshold", source),
                        max_threshold=_number(wred.get("green_max_threshold"), f"{where} green_max_threshold", source),
                        probability=_number(wred.get("green_drop_probability"), f"{where} green_drop_probability", source))


def _queues(table: Dict[str, Any], source: str) -> Dict[str, Dict[int, Dict[str, Any]]]:
    """QUEUE keys: `PORT|Q`, `PORT1,PORT2|Q`, `PORT|Q1-Q2`, or with a chassis prefix
    `HOST|ASIC|PORT|Q`: the port list and the queue are the last two parts."""
    out: Dict[str, Dict[int, Dict[str, Any]]] = {}
    for key, fields in table.items():
        parts = str(key).split("|")
        if len(parts) < 2 or not isinstance(fields, dict):
            raise ParseError(source, f"QUEUE key {key!r}: expected PORT|QUEUE with a mapping of fields")
        for q in _range(parts[-1], f"QUEUE key {key!r}", source):
            for port in parts[-2].split(","):
                out.setdefault(port, {}).setdefault(q, {}).update(fields)
    return out


def _table(doc, name, source) -> Dict[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise ParseError(source, f"{name} is not a mapping")
    return table


def _named(doc, table, name, source, warnings=None) -> Optional[Dict[str, Any]]:
    entry = _table(doc, table, source).get(name)
    if isinstance(entry, dict):
        return entry
    message = f"{table}|{name} is referenced but not defined"
    if warnings is None:
        raise ParseError(source, message)
    warnings.append(message)
    return None


def _int_map(entry: Dict[str, Any], where: str, source: str) -> Dict[int, int]:
    try:
        return {int(k): int(v) for k, v in entry.items()}
    except (TypeError, ValueError):
        raise ParseError(source, f"{where}: expected numbers on both sides") from None


def _priorities(text: str, where: str, source: str) -> Tuple[int, ...]:
    text = str(text).strip()
    if not text:
        return ()
    out = set()
    for part in text.split(","):
        out.update(_range(part, where, source))
    return tuple(sorted(out))


def _range(text: str, where: str, source: str) -> List[int]:
    try:
        lo, _, hi = text.strip().partition("-")
        return list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ParseError(source, f"{where}: {text!r} is not a number or a range") from None


def _number(value, where, source):
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise ParseError(source, f"{where}: {value!r} is not a number") from None


def _signature(r: SwitchReading) -> Tuple:
    return (r.trust, tuple(sorted(r.dscp_to_tc.items())), tuple(sorted(r.tc_to_queue.items())), r.pfc,
            tuple(sorted(r.queues.items())))


def _natural(name: str):
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
