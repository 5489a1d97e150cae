"""SONiC: CONFIG_DB JSON written for `config load`, and CONFIG_DB read back (`sonic-cfggen -d
--print-data`, /etc/sonic/config_db.json, `sonic-db-dump -n CONFIG_DB`).

Reading. Tables: DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP, TC_TO_QUEUE_MAP, TC_TO_PRIORITY_GROUP_MAP,
PFC_PRIORITY_TO_PRIORITY_GROUP_MAP, PORT_QOS_MAP, QUEUE, SCHEDULER, WRED_PROFILE, BUFFER_PG,
BUFFER_QUEUE, BUFFER_PROFILE, PORT, DEVICE_METADATA (field names as sonic-buildimage's
files/build_templates/qos_config.j2 and buffers_config.j2 write them). Three forms: tables of keys
(`{"PORT_QOS_MAP": {"Ethernet0": {...}}}`), flat redis keys (`{"PORT_QOS_MAP|Ethernet0": {...}}`,
with or without sonic-db-dump's `{"type": "hash", "value": {...}}`), and references in the form
CONFIG_DB used before SONiC 202106 (`"[DSCP_TO_TC_MAP|AZURE]"`, which sonic-utilities'
db_migrator turns into `AZURE` at version_3_0_2).

Buffers. A lossless priority needs an ingress priority group with headroom and an egress queue
that does not drop. In the dynamic buffer model (DEVICE_METADATA buffer_model dynamic) a PG with
profile `NULL` gets headroom computed by buffermgrd; in the traditional model buffermgrd writes
`pg_lossless_<speed>_<cable>_profile` PGs itself -- for the priorities of `pfc_enable` since
sonic-swss #2171 (202205), for PGs 3-4 only before -- so a CONFIG_DB saved before buffermgrd ran
holds no lossless PG yet, and the reading says so rather than calling it lossy.

Writing: see `Sonic.render`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ParseError
from ..model.jsonread import load_json
from ..model.switch_qos import TRAFFIC_CLASSES, QueueReading, SwitchIntent, SwitchQos, SwitchReading, merged
from ..probe.parsers._common import as_text, clean, require_content
from .base import Choice, Rendered, SwitchOs, listed, refuse, runs, span

WHAT = "SONiC config_db"
QOS_TABLES = ("DSCP_TO_TC_MAP", "DOT1P_TO_TC_MAP", "TC_TO_QUEUE_MAP", "PORT_QOS_MAP", "QUEUE",
              "SCHEDULER", "WRED_PROFILE", "BUFFER_PG", "BUFFER_QUEUE")
# WRED_PROFILE.ecn values that mark green packets (what an unpoliced RoCE packet is).
_ECN_GREEN = ("ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all")
_REF_RE = re.compile(r"^\[([A-Z_]+)\|([^\]]*)\]\Z")
NAME = "ROCETUNE"  # map, scheduler and WRED names, beside the switch's own AZURE ones
# The keys SONiC's buffer template (files/build_templates/buffers_config.j2) gives every active
# port: lossless PG and queues 3-4, lossy PG 0 and queues 0-2 and 5-6.
TEMPLATE_LOSSLESS = (3, 4)
TEMPLATE_QUEUE = {"0-2": "lossy", "3-4": "lossless", "5-6": "lossy"}
TEMPLATE_QUEUES = tuple(range(7))
# The buffer profiles those templates define on every platform (buffers_defaults_*.j2).
EGRESS_LOSSLESS, EGRESS_LOSSY = "egress_lossless_profile", "egress_lossy_profile"
# Mellanox's templates give lossy queues q_lossy_profile (no reserved size, its own alpha), not
# egress_lossy_profile (9216 bytes reserved per queue): sonic-buildimage buffers_defaults_*.j2 of
# the Mellanox SKUs, and buffers-mellanox2410*.json in sonic-config-engine's tests.
LOSSY_QUEUE_PROFILE = {"mellanox": "q_lossy_profile"}
# The CABLE_LENGTH entry SONiC's templates write (buffermgrd reads the fields of every entry).
CABLE_ENTRY = "AZURE"
# The PFC watchdog as `pfcwd start_default` sets it (sonic-utilities pfcwd/main.py: 200 ms detection,
# restoration and polling, action drop, scaled up by one step per 32 ports).
PFCWD_MS, PFCWD_PORTS_PER_STEP, PFCWD_MAX_POLL_MS = 200, 32, 1000
# ASICs whose SAI takes the PFC priority -> PG map, and SONiC's QoS template binds it (AZURE {3:3, 4:4}).
PFC_TO_PG_ASICS = ("mellanox", "barefoot")


class Sonic(SwitchOs):
    name = "sonic"
    title = "SONiC"
    suffix = ".json"
    order = 10
    port_example = "Ethernet0,Ethernet4"
    comments = False
    reads = "SONiC CONFIG_DB JSON (sonic-cfggen -d --print-data, config_db.json, sonic-db-dump)"
    choices = (
        Choice("buffer_model", ("dynamic", "traditional"),
               "SONiC's buffer model (DEVICE_METADATA|localhost buffer_model): dynamic gets lossless "
               "PGs with profile NULL, traditional relies on buffermgrd (202205 or later) creating them "
               "from pfc_enable; needed when a lossless priority is outside SONiC's 3-4"),
        Choice("platform", ("mellanox", "barefoot", "broadcom", "other"),
               "for SONiC, the switch's asic_type: mellanox and barefoot bind a PFC-priority-to-PG map "
               "(SONiC's AZURE maps only 3 and 4); needed when a lossless priority is outside 3-4"),
    )

    def looks_like(self, text: str) -> bool:
        if not text.lstrip().startswith("{"):
            return False
        try:
            doc = load_json(text)
        except ValueError:
            return True  # JSON that does not parse: this reader names the error
        return _is_configdb(doc)

    def parse(self, text: Any, source: str = WHAT) -> SwitchQos:
        text = clean(as_text(text, WHAT))
        require_content(text, WHAT)
        try:
            doc = load_json(text)
        except ValueError as exc:
            raise ParseError(source, f"not JSON: {exc}", hint="give the output of `sonic-cfggen -d --print-data` "
                                                              "or /etc/sonic/config_db.json") from None
        if not _is_configdb(doc):
            raise ParseError(source, "no QoS table (DSCP_TO_TC_MAP, PORT_QOS_MAP, QUEUE ...) in this JSON")
        return from_doc(doc, source)

    def render(self, intent: SwitchIntent, ports: Sequence[str], chosen: Mapping[str, str],
               fabric: Sequence[str] = ()) -> Rendered:
        return _Render(self, intent, list(ports) + list(fabric), chosen, list(ports)).render()


# --- reading -----------------------------------------------------------------------------------

def _is_configdb(doc: Any) -> bool:
    return isinstance(doc, dict) and any(k in QOS_TABLES or str(k).split("|", 1)[0] in QOS_TABLES for k in doc)


def normalise(doc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Tables of keys, whatever the form: flat `TABLE|key` entries folded in, sonic-db-dump's
    {"type", "value"} unwrapped, pre-202106 `[TABLE|name]` references turned into names, and
    entries `config load` would delete (null) dropped."""
    out: Dict[str, Dict[str, Any]] = {}
    for key, value in doc.items():
        if not isinstance(key, str):
            continue
        if isinstance(value, dict) and "|" not in key:
            for entry, fields in value.items():
                out.setdefault(key, {})[str(entry)] = fields
        elif "|" in key:
            table, _, entry = key.partition("|")
            if isinstance(value, dict) and set(value) >= {"type", "value"} and isinstance(value["value"], dict):
                value = value["value"]
            out.setdefault(table, {})[entry] = value
    for entries in out.values():
        for gone in [e for e, f in entries.items() if f is None]:
            del entries[gone]
        for fields in entries.values():
            if isinstance(fields, dict):
                for field, v in fields.items():
                    if isinstance(v, str) and v.startswith("["):
                        fields[field] = _deref(v)
    return out


def _deref(value: str) -> str:
    """`[TABLE|name]` (or a comma list of them) -> `name` (db_migrator's conversion)."""
    parts = [_REF_RE.match(p.strip()) for p in value.split(",")]
    if not all(parts):
        return value
    return ",".join(m.group(2) for m in parts if m)


def from_doc(doc: Dict[str, Any], source: str) -> SwitchQos:
    db = normalise(doc)
    warnings: List[str] = []
    port_maps = _table(db, "PORT_QOS_MAP", source)
    queues = _per_port(_table(db, "QUEUE", source), "QUEUE", source)
    pgs = _per_port(_table(db, "BUFFER_PG", source), "BUFFER_PG", source)
    bufq = _per_port(_table(db, "BUFFER_QUEUE", source), "BUFFER_QUEUE", source)
    for table in ("BUFFER_PG", "BUFFER_QUEUE"):
        warnings += _overlaps(_table(db, table, source), table)
    port_table = _table(db, "PORT", source)
    switch_ports = [p for p in port_table if isinstance(port_table[p], dict)]
    # One policy on every OS: a port administratively down is not judged (buffermgrd gives it no
    # lossless buffers either), and the reading says which ports it left out.
    inactive = {p: "admin down" for p in switch_ports if str(port_table[p].get("admin_status", "")).lower() == "down"}
    model = str((_table(db, "DEVICE_METADATA", source).get("localhost") or {}).get("buffer_model") or "")
    if not model and any(str(f.get("profile")) == "NULL" for p in pgs.values() for f in p.values()):
        model = "dynamic"  # only the dynamic model has PGs whose headroom buffermgrd computes (NULL)
    _check_references(port_maps, source)
    bound = [p for p, f in port_maps.items()
             if p != "global" and p not in inactive and isinstance(f, dict) and _binds(f)]
    if switch_ports:
        ports = sorted(bound, key=_natural)
    else:
        ports = sorted((set(bound) | set(queues)) - set(inactive), key=_natural)
    global_map = port_maps.get("global") if isinstance(port_maps.get("global"), dict) else {}
    ctx = _Ctx(db, source, warnings, model, "BUFFER_PG" in db, "BUFFER_QUEUE" in db,
               any(_is_pg_lossless_name(str(f.get("profile", ""))) for p in pgs.values() for f in p.values()))
    readings = []
    for port in ports or (["global"] if global_map else []):
        binding = port_maps.get(port) if isinstance(port_maps.get(port), dict) else {}
        readings.append(_reading(ctx, port, binding, global_map, queues.get(port, {}), pgs.get(port, {}),
                                 bufq.get(port, {})))
    groups = merged(readings)
    nowhere = ""
    if global_map and not [p for p in ports if p != "global"]:
        nowhere = ("only PORT_QOS_MAP|global binds QoS (a switch-wide dscp_to_tc_map): no port has PFC, its queues or "
                   "lossless buffers")
    unbound = None
    if switch_ports:
        unbound = sorted((p for p in switch_ports if p not in bound and p not in inactive), key=_natural)
    if inactive:
        down = sorted(inactive, key=_natural)
        warnings.append(f"not judged: {len(down)} port(s) administratively down ({', '.join(down[:8])}"
                        f"{' ...' if len(down) > 8 else ''})")
    return SwitchQos(kind="sonic", source=source, groups=groups, warnings=warnings,
                     unbound_ports=unbound, all_ports=len(switch_ports) - len(inactive) if switch_ports else None,
                     inactive_ports=inactive, bound_nowhere=nowhere,
                     form=f"CONFIG_DB (buffer model {model or 'not stated'})")


class _Ctx:
    def __init__(self, db, source, warnings, model, has_pg, has_queue, any_runtime_pg):
        self.db, self.source, self.warnings, self.model = db, source, warnings, model
        self.has_pg, self.has_queue, self.any_runtime_pg = has_pg, has_queue, any_runtime_pg
        self.cables = _cables(db, source)
        # ports with an IP of their own (INTERFACE|PORT or INTERFACE|PORT|PREFIX): routed
        self.routed = ({str(k).split("|")[0] for k in _table(db, "INTERFACE", source)}
                       if "INTERFACE" in db else None)
        self.watchdog = _table(db, "PFC_WD", source) if "PFC_WD" in db else None


def _cables(db, source) -> Optional[Dict[str, str]]:
    """port -> cable length as CABLE_LENGTH states it (buffermgrd reads every entry's fields);
    None when the output has no CABLE_LENGTH table."""
    if "CABLE_LENGTH" not in db:
        return None
    out: Dict[str, str] = {}
    for fields in _table(db, "CABLE_LENGTH", source).values():
        if isinstance(fields, dict):
            out.update({str(k): str(v) for k, v in fields.items()})
    return out


_REFERENCES = ("dscp_to_tc_map", "dot1p_to_tc_map", "tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map",
               "pfc_to_pg_map")


def _check_references(port_maps: Dict[str, Any], source: str) -> None:
    """A PORT_QOS_MAP field that names a map holds a name: anything else is an input error
    naming the port and the field (it was a TypeError, exit 70)."""
    for port, fields in port_maps.items():
        if not isinstance(fields, dict):
            continue
        for field in _REFERENCES:
            value = fields.get(field)
            if value is not None and not isinstance(value, str):
                raise ParseError(source, f"PORT_QOS_MAP|{port}.{field}: {str(value)[:60]!r} is not the name of a map")


def _binds(fields: Dict[str, Any]) -> bool:
    return any(fields.get(k) for k in ("dscp_to_tc_map", "dot1p_to_tc_map", "pfc_enable", "tc_to_queue_map",
                                       "tc_to_pg_map"))


def _reading(ctx: _Ctx, port, binding, global_map, queue_fields, pg_fields, bufq_fields) -> SwitchReading:
    db, source = ctx.db, ctx.source
    r = SwitchReading(ports=[] if port == "global" else [port])
    dscp_name = binding.get("dscp_to_tc_map") or global_map.get("dscp_to_tc_map")
    dot1p_name = binding.get("dot1p_to_tc_map")
    if dscp_name:
        r.trust = "dscp"
        r.dscp_to_priority = _map(ctx, "DSCP_TO_TC_MAP", dscp_name)
        if r.dscp_to_priority:
            r.dscp_default, r.dscp_default_priority = "not in the map: traffic class 0", 0
        else:
            r.dscp_default = f"not known: DSCP_TO_TC_MAP|{dscp_name} is not in the output"
    elif dot1p_name:
        r.trust = "pcp"
    if dot1p_name:
        r.pcp_to_priority = _map(ctx, "DOT1P_TO_TC_MAP", dot1p_name)
    tcq = binding.get("tc_to_queue_map")
    if tcq:
        r.tc_to_queue = _map(ctx, "TC_TO_QUEUE_MAP", tcq)
    if port == "global":
        return r
    r.pfc = _priorities(binding.get("pfc_enable", ""), f"PORT_QOS_MAP|{port}.pfc_enable", source)
    buffer_queues = _buffer_queues(ctx, bufq_fields) if ctx.has_queue else {}
    for q in TRAFFIC_CLASSES:  # a queue with no QUEUE entry has no WRED profile: no ECN marking
        base = _queue(db, queue_fields.get(q, {}), f"QUEUE|{port}|{q}", source, ctx.warnings)
        # BUFFER_QUEUE present but no key for the queue: the queue has no profile of the plan's and
        # keeps the ASIC's default (lossy) buffer
        lossless = buffer_queues.get(q, False) if ctx.has_queue else None
        r.queues[q] = replace(base, lossless=lossless)
    r.ingress_lossless, r.buffer_note = _ingress(ctx, binding, pg_fields, r)
    _watchdog(ctx, port, binding, r)
    _cable(ctx, port, r)
    if r.trust == "pcp":  # routing matters to PCP trust only (RoCE v2 on a routed port is untagged)
        r.routed = None if ctx.routed is None else port in ctx.routed
    return r


def _ms(value) -> Optional[int]:
    """A PFC_WD time (milliseconds, a string in CONFIG_DB); None when absent or not a number."""
    text = str(value) if value is not None else ""
    return int(text) if text.isdigit() and len(text) <= 6 else None


def _watchdog(ctx: _Ctx, port: str, binding, r: SwitchReading) -> None:
    """PFC_WD|PORT (action, detection and restoration times) starts the watchdog on the port;
    PORT_QOS_MAP pfcwd_sw_enable, where present, names the priorities it watches."""
    if ctx.watchdog is None:
        r.watchdog_note = "no PFC_WD table in the output"
        return
    entry = ctx.watchdog.get(port)
    if not isinstance(entry, dict):
        r.watchdog, r.watchdog_note = False, f"no PFC_WD|{port} entry"
        return
    r.watchdog_action = str(entry.get("action", "drop"))
    r.watchdog_detection_ms = _ms(entry.get("detection_time"))
    r.watchdog_restoration_ms = _ms(entry.get("restoration_time"))
    watched = binding.get("pfcwd_sw_enable")
    if watched is None:
        r.watchdog = True
        return
    on = _priorities(watched, f"PORT_QOS_MAP|{port}.pfcwd_sw_enable", ctx.source)
    missing = [p for p in (r.pfc or ()) if p not in on]
    r.watchdog = not missing
    if missing:
        r.watchdog_note = f"pfcwd_sw_enable {watched or 'empty'} leaves priority {listed(missing)} unwatched"


def _cable(ctx: _Ctx, port: str, r: SwitchReading) -> None:
    if ctx.cables is None:
        r.cable_note = "no CABLE_LENGTH table in the output"
        return
    text = ctx.cables.get(port)
    if text is None:
        r.cable_note = (f"CABLE_LENGTH states none for {port}: buffermgrd waits for one before it creates "
                        "the port's lossless PGs")
        return
    m = re.match(r"^(\d+)m\Z", text.strip())
    if not m:
        raise ParseError(ctx.source, f"CABLE_LENGTH {port}: {text[:40]!r} is not a length like 5m")
    r.cable_length = int(m.group(1))


def _ingress(ctx: _Ctx, binding, pg_fields, r: SwitchReading):
    """{priority: lossless ingress PG?} for the priorities of pfc_enable, and a note when unsure."""
    if not ctx.has_pg:
        return None, "no BUFFER_PG table in the output"
    tc_to_pg = {}
    if binding.get("tc_to_pg_map"):
        tc_to_pg = _map(ctx, "TC_TO_PRIORITY_GROUP_MAP", binding["tc_to_pg_map"])
    pfc_to_pg = None
    if binding.get("pfc_to_pg_map"):
        name = binding["pfc_to_pg_map"]
        pfc_to_pg = _map(ctx, "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", name)
    pg_state = _pg_states(ctx, pg_fields)
    out: Dict[int, Optional[bool]] = {}
    notes = []
    runtime = ctx.model != "dynamic" and not ctx.any_runtime_pg
    for p in r.pfc or ():
        pg = tc_to_pg.get(p, p)
        if pfc_to_pg is not None and pfc_to_pg.get(p) != pg:
            out[p] = False
            notes.append(f"PFC priority {p} maps to PG {pfc_to_pg.get(p, 'none')} "
                         f"({binding['pfc_to_pg_map']}), its traffic class to PG {pg}")
            continue
        state = pg_state.get(pg)
        if state is None and runtime:
            notes.append("no lossless PG yet: in the traditional buffer model buffermgrd creates them "
                         "at run time (for every pfc_enable priority since SONiC 202205, for 3-4 before)")
        out[p] = state if state is not None else (None if runtime else False)
    return out, "; ".join(dict.fromkeys(notes))


def _pg_states(ctx: _Ctx, pg_fields) -> Dict[int, Optional[bool]]:
    out: Dict[int, Optional[bool]] = {}
    for pg, fields in pg_fields.items():
        out[pg] = _profile_lossless(ctx, str(fields.get("profile", "")), "ingress")
    return out


def _buffer_queues(ctx: _Ctx, bufq_fields) -> Dict[int, Optional[bool]]:
    return {q: _profile_lossless(ctx, str(f.get("profile", "")), "egress") for q, f in bufq_fields.items()}


def _profile_lossless(ctx: _Ctx, name: str, direction: str) -> Optional[bool]:
    """Whether a buffer profile is a lossless one. A profile the output's BUFFER_PROFILE table does
    not define binds nothing (orchagent cannot resolve the reference): not lossless, said in a
    warning. Ingress: `NULL` (headroom computed in the dynamic model) or a profile with xoff
    headroom; a profile without is lossy. Egress: by the templates' names (egress_lossless_profile,
    egress_lossy_profile, q_lossy_profile), else by the pool -- the pools alone do not tell,
    Broadcom templates put egress_lossy_profile in egress_lossless_pool. None when nothing says
    (no BUFFER_PROFILE table and a name that tells nothing)."""
    db = ctx.db
    if direction == "ingress" and name == "NULL":
        return True
    table = db.get("BUFFER_PROFILE")
    profile = table.get(name) if isinstance(table, dict) else None
    profile = profile if isinstance(profile, dict) else None
    if isinstance(table, dict) and profile is None and not (direction == "ingress" and _is_pg_lossless_name(name)
                                                            and ctx.model != "dynamic"):
        message = f"BUFFER_PROFILE|{name} is referenced but not defined: the {direction} buffer it names binds nothing"
        if message not in ctx.warnings:
            ctx.warnings.append(message)
        return False
    if direction == "ingress":
        if profile is not None:
            return str(profile.get("xoff", "0")).strip() not in ("", "0")
        return True if _is_pg_lossless_name(name) else (False if "lossy" in name else None)
    if "lossless" in name:
        return True
    if "lossy" in name:
        return False
    pool = str((profile or {}).get("pool", ""))
    return True if "lossless" in pool else (False if "lossy" in pool else None)


def _is_pg_lossless_name(name: str) -> bool:
    return name.startswith("pg_lossless_")


def _queue(db, fields, where, source, warnings) -> QueueReading:
    strict = None
    sched_name = fields.get("scheduler")
    if sched_name:
        sched = _named(db, "SCHEDULER", sched_name, source, warnings)
        if sched is not None:
            strict = str(sched.get("type", "")).upper() == "STRICT"
    wred_name = fields.get("wred_profile")
    if not wred_name:
        return QueueReading(strict=strict, ecn=False)
    wred = _named(db, "WRED_PROFILE", wred_name, source, warnings)
    if wred is None:
        return QueueReading(strict=strict)
    ecn = str(wred.get("ecn", "ecn_none")) in _ECN_GREEN
    return QueueReading(strict=strict, ecn=ecn,
                        min_threshold=_number(wred.get("green_min_threshold"), f"{where} green_min_threshold", source),
                        max_threshold=_number(wred.get("green_max_threshold"), f"{where} green_max_threshold", source),
                        probability=_number(wred.get("green_drop_probability"), f"{where} green_drop_probability",
                                            source))


def _overlaps(table: Dict[str, Any], name: str) -> List[str]:
    """Keys of one port whose ranges overlap (`Ethernet0|3` beside the template's `Ethernet0|3-4`):
    which profile the ASIC ends with depends on the order orchagent applies them."""
    spans: Dict[str, List[Tuple[str, set]]] = {}
    for key in table:
        parts = str(key).split("|")
        if len(parts) < 2:
            continue
        lo, _, hi = parts[-1].partition("-")
        if not (lo.isdigit() and (hi or lo).isdigit()):
            continue
        covered = set(range(int(lo), int(hi or lo) + 1))
        for port in parts[-2].split(","):
            spans.setdefault(port, []).append((parts[-1], covered))
    out = []
    for port, keys in sorted(spans.items(), key=lambda kv: _natural(kv[0])):
        for i, (a, sa) in enumerate(keys):
            for b, sb in keys[i + 1:]:
                if sa & sb:
                    out.append(f"{name} {port}: keys {a} and {b} overlap (the profile that wins depends on the order "
                               "orchagent applies them)")
    return out


def _per_port(table: Dict[str, Any], name: str, source: str) -> Dict[str, Dict[int, Dict[str, Any]]]:
    """QUEUE / BUFFER_PG / BUFFER_QUEUE keys: `PORT|Q`, `PORT1,PORT2|Q`, `PORT|Q1-Q2`, or with a
    chassis prefix `HOST|ASIC|PORT|Q`: the port list and the index are the last two parts."""
    out: Dict[str, Dict[int, Dict[str, Any]]] = {}
    for key, fields in table.items():
        parts = str(key).split("|")
        if len(parts) < 2 or not isinstance(fields, dict):
            raise ParseError(source, f"{name} key {key!r}: expected PORT|INDEX with a mapping of fields")
        for q in _range(parts[-1], f"{name} key {key!r}", source):
            for port in parts[-2].split(","):
                out.setdefault(port, {}).setdefault(q, {}).update(fields)
    return out


def _table(db, name, source) -> Dict[str, Any]:
    table = db.get(name, {})
    if not isinstance(table, dict):
        raise ParseError(source, f"{name} is not a mapping")
    return table


def _named(db, table, name, source, warnings: List[str]) -> Optional[Dict[str, Any]]:
    """The entry a reference names; a warning (and None) when the output does not define it;
    ParseError when the reference is no name at all (a list, an object, a number)."""
    if not isinstance(name, str):
        raise ParseError(source, f"a reference to {table} is {str(name)[:60]!r}, not the name of an entry")
    entry = _table(db, table, source).get(name)
    if isinstance(entry, dict):
        return entry
    message = f"{table}|{name} is referenced but not defined"
    if message not in warnings:
        warnings.append(message)
    return None


def _map(ctx: _Ctx, table: str, name: str) -> Dict[int, int]:
    """A map a port binds, as numbers; one the output does not define is said in a warning and
    read as empty (what it maps is then not stated)."""
    entry = _named(ctx.db, table, name, ctx.source, ctx.warnings)
    return {} if entry is None else _int_map(entry, f"{table}|{name}", ctx.source)


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


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


# --- writing -----------------------------------------------------------------------------------

class _Render:
    """The CONFIG_DB tables for `config load`. `config load` merges: a field written replaces the
    switch's, a field not written stays, and an entry written as null is deleted (sonic-cfggen
    --write-to-db -> ConfigDBConnector.mod_config; swss-common common/configdb.h typed_to_raw).
    So every field SONiC's own template binds that the plan changes is written, and the template's
    buffer entries that would overlap rocetune's are deleted by key."""

    def __init__(self, os_: Sonic, intent: SwitchIntent, ports: List[str], chosen: Mapping[str, str],
                 host_ports: List[str]):
        self.os, self.intent, self.ports, self.chosen = os_, intent, ports, chosen
        self.host_ports = host_ports   # the ports whose cables the plan's cable length describes
        self.model = os_.choice(chosen, "buffer_model")
        self.platform = os_.choice(chosen, "platform")
        self.lossless = list(intent.lossless)
        self.assumes: List[str] = []
        self.warnings: List[str] = []

    def render(self) -> Rendered:
        self._refuse()
        i = self.intent
        doc: Dict[str, Any] = {
            "DSCP_TO_TC_MAP": {NAME: {str(d): str(p) for d, p in sorted(i.dscp_map().items())}},
            "TC_TO_QUEUE_MAP": {NAME: {str(tc): str(tc) for tc in TRAFFIC_CLASSES}},
            "TC_TO_PRIORITY_GROUP_MAP": {NAME: {str(tc): str(tc if tc in self.lossless else 0)
                                                for tc in TRAFFIC_CLASSES}},
            "MAP_PFC_PRIORITY_TO_QUEUE": {NAME: {str(p): str(p) for p in TRAFFIC_CLASSES}},
            "SCHEDULER": {f"{NAME}_STRICT": {"type": "STRICT"}, f"{NAME}_DWRR": {"type": "DWRR", "weight": "50"}},
            "WRED_PROFILE": {f"{NAME}_ECN": _wred(i)},
            "PORT_QOS_MAP": {},
        }
        if i.trust == "pcp":
            doc["DOT1P_TO_TC_MAP"] = {NAME: {str(p): str(p) for p in TRAFFIC_CLASSES}}
        else:
            doc["PORT_QOS_MAP"]["global"] = {"dscp_to_tc_map": NAME}
        pfc_to_pg = self._pfc_to_pg()
        if pfc_to_pg:
            doc["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"] = {NAME: {str(p): str(p) for p in self.lossless}}
        for port in self.ports:
            doc["PORT_QOS_MAP"][port] = self._port_map(pfc_to_pg)
        if self.ports:
            doc["QUEUE"] = {f"{port}|{q}": self._queue(q) for port in self.ports for q in TRAFFIC_CLASSES}
            buffers = self._buffers()
            for table, entries in buffers.items():
                doc[table] = entries
            if self.lossless:
                doc["PFC_WD"] = self._watchdog()
                if i.cable_length is not None and self.host_ports:
                    doc["CABLE_LENGTH"] = {CABLE_ENTRY: {port: f"{i.cable_length}m" for port in self.host_ports}}
        self._say_assumptions(pfc_to_pg)
        # `config load` skips an empty table (older releases drop it): none is written
        doc = {table: entries for table, entries in doc.items() if entries}
        text = json.dumps(doc, indent=4, sort_keys=True) + "\n"
        return Rendered(text=text, assumes=self.assumes, bound=self._bound(), warnings=self.warnings)

    # what cannot be made lossless is refused, naming what would make it so
    def _refuse(self) -> None:
        if 0 in self.lossless:
            raise refuse("SONiC: priority 0 is lossless in the plan, but every other traffic class shares "
                         "priority group 0 (TC_TO_PRIORITY_GROUP_MAP), which rocetune keeps lossy",
                         "make RoCE lossless on a priority other than 0")
        outside = [p for p in self.lossless if p not in TEMPLATE_LOSSLESS]
        if outside and self.ports:
            if self.model is None:
                raise refuse(f"SONiC: lossless priority {listed(outside)} is outside the 3-4 SONiC's buffer template "
                             "makes lossless, and its lossless PG depends on the buffer model",
                             "name it: --buffer-model dynamic|traditional (DEVICE_METADATA|localhost buffer_model; "
                             "`show runningconfiguration all | grep buffer_model`)")
            if self.platform is None:
                raise refuse(f"SONiC: lossless priority {listed(outside)} is outside the 3-4 of the PFC-priority-to-PG "
                             "map SONiC binds on mellanox and barefoot ASICs (AZURE: 3->3, 4->4)",
                             "name the ASIC: --platform mellanox|barefoot|broadcom|other (the asic_type of "
                             "`show version`)")

    def _pfc_to_pg(self) -> bool:
        return bool(self.lossless) and self.platform in PFC_TO_PG_ASICS

    def _port_map(self, pfc_to_pg: bool) -> Dict[str, str]:
        i = self.intent
        out = {("dscp_to_tc_map" if i.trust == "dscp" else "dot1p_to_tc_map"): NAME,
               "tc_to_queue_map": NAME, "tc_to_pg_map": NAME, "pfc_to_queue_map": NAME,
               "pfc_enable": listed(self.lossless), "pfcwd_sw_enable": listed(self.lossless)}
        if pfc_to_pg:
            out["pfc_to_pg_map"] = NAME
        return out

    def _queue(self, q: int) -> Dict[str, str]:
        i = self.intent
        out = {"scheduler": f"{NAME}_STRICT" if q == i.cnp.priority else f"{NAME}_DWRR"}
        if q == i.data.priority:
            out["wred_profile"] = f"{NAME}_ECN"
        return out

    def _buffers(self) -> Dict[str, Dict[str, Any]]:
        """BUFFER_PG and BUFFER_QUEUE for the bound ports. Lossless priorities within SONiC's 3-4:
        the template's own keys, restated. Others: one key per run of lossless and lossy queues,
        the template's keys that would overlap them deleted (null)."""
        if not self.lossless:
            return {}
        template_like = all(p in TEMPLATE_LOSSLESS for p in self.lossless)
        pg: Dict[str, Any] = {}
        queue: Dict[str, Any] = {}
        lossy = LOSSY_QUEUE_PROFILE.get(self.platform or "", EGRESS_LOSSY)
        for port in self.ports:
            if template_like:
                # the template's lossless key, restated; its lossy keys keep the switch's own profile
                queue[f"{port}|3-4"] = {"profile": EGRESS_LOSSLESS}
                if self.model == "dynamic":
                    pg[f"{port}|3-4"] = {"profile": "NULL"}
                continue
            ours_q = _layout(sorted(set(TEMPLATE_QUEUES) | set(self.lossless)), self.lossless)
            for key, lossless in ours_q.items():
                queue[f"{port}|{key}"] = {"profile": EGRESS_LOSSLESS if lossless else lossy}
            for key in TEMPLATE_QUEUE:
                if key not in ours_q:
                    queue[f"{port}|{key}"] = None
            pg_keys = [span(lo, hi) for lo, hi in runs(self.lossless)]
            if self.model == "dynamic":
                for key in pg_keys:
                    pg[f"{port}|{key}"] = {"profile": "NULL"}
            if "3-4" not in pg_keys:
                pg[f"{port}|3-4"] = None
        out = {"BUFFER_QUEUE": queue}
        if pg:
            out["BUFFER_PG"] = pg
        return out

    def _watchdog(self) -> Dict[str, Dict[str, str]]:
        """PFC_WD per port: the plan's pfc_watchdog, else `pfcwd start_default`'s settings; the poll
        interval no longer than either time (`pfcwd interval` refuses a longer one) nor 1000 ms."""
        w = self.intent.watchdog
        if w is not None:
            action, detect, restore = w.action, w.detection_time, w.restoration_time
        else:
            step = max(1, (len(self.ports) - 1) // PFCWD_PORTS_PER_STEP + 1)
            action, detect, restore = "drop", PFCWD_MS * step, PFCWD_MS * step
        out = {port: {"action": action, "detection_time": str(detect), "restoration_time": str(restore)}
               for port in self.ports}
        out["GLOBAL"] = {"POLL_INTERVAL": str(min(detect, restore, PFCWD_MAX_POLL_MS))}
        return out

    def _say_assumptions(self, pfc_to_pg: bool) -> None:
        a = self.assumes
        if not self.ports or not self.lossless:
            return
        template_like = all(p in TEMPLATE_LOSSLESS for p in self.lossless)
        lossy = LOSSY_QUEUE_PROFILE.get(self.platform or "", EGRESS_LOSSY)
        if template_like:
            a.append(f"buffer profile {EGRESS_LOSSLESS} as SONiC's buffer templates define it (buffers_defaults_*.j2); "
                     "the lossy queues keep the switch's own profile")
        else:
            a.append(f"buffer profiles {EGRESS_LOSSLESS} and {lossy} as SONiC's buffer templates define them for "
                     f"asic_type {self.platform} (buffers_defaults_*.j2)")
        fabric = [p for p in self.ports if p not in self.host_ports]
        if self.intent.cable_length is not None and self.host_ports:
            a.append(f"CABLE_LENGTH|{CABLE_ENTRY} {self.intent.cable_length}m on the host-facing ports (the plan's "
                     "buffer.cable_length): buffermgrd sizes their headroom from it")
        if fabric:
            a.append(f"the fabric ports ({', '.join(fabric)}) keep the switch's own CABLE_LENGTH: the plan's cable "
                     "length is the hosts'")
        else:
            a.append("the switch's own CABLE_LENGTH (the plan states no buffer.cable_length); buffermgrd creates no "
                     "lossless PG for a port without one, or with 0m")
        if self.model == "dynamic":
            a.append("dynamic buffer model: lossless PGs with profile NULL, their headroom computed by buffermgrd "
                     "from the port's speed, cable length and MTU")
        elif self.model == "traditional":
            a.append("traditional buffer model: buffermgrd creates the lossless PGs from pfc_enable and "
                     "pg_profile_lookup.ini (SONiC 202205 or later for priorities other than 3-4, sonic-swss #2171)")
        else:
            a.append("either buffer model: the lossless PGs 3-4 of SONiC's buffer template (dynamic: profile NULL; "
                     "traditional: buffermgrd's pg_lossless_<speed>_<cable>_profile) carry the plan's priorities")
        if not template_like:
            a.append("SONiC's buffer template keys per port (BUFFER_PG 3-4, BUFFER_QUEUE 0-2, 3-4, 5-6): the ones "
                     "that overlap rocetune's are deleted (null entries, which `config load` removes)")
        if pfc_to_pg:
            a.append(f"asic_type {self.platform}: PFC_PRIORITY_TO_PRIORITY_GROUP_MAP {NAME} bound as pfc_to_pg_map")
        elif self.platform is not None:
            a.append(f"asic_type {self.platform}: no PFC-priority-to-PG map (SONiC binds one on mellanox and barefoot)")
        w = self.intent.watchdog
        a.append(f"PFC watchdog: PFC_WD per port (action {w.action}, detection {w.detection_time} ms, restoration "
                 f"{w.restoration_time} ms: the plan's pfc_watchdog), pfcwd_sw_enable on the lossless priorities"
                 if w is not None else
                 "PFC watchdog: PFC_WD per port (action drop, sonic-utilities' default times), "
                 "pfcwd_sw_enable on the lossless priorities")

    def _bound(self) -> str:
        i = self.intent
        if self.ports:
            return (f"per port ({', '.join(self.ports)}): PORT_QOS_MAP maps, "
                    f"pfc_enable {listed(self.lossless) or 'none'}, "
                    "QUEUE schedulers and ECN, BUFFER_QUEUE and BUFFER_PG, PFC_WD"
                    + ("; switch-wide: PORT_QOS_MAP|global dscp_to_tc_map" if i.trust == "dscp" else ""))
        if i.trust == "dscp":
            return ("switch-wide only: PORT_QOS_MAP|global dscp_to_tc_map ROCETUNE classifies DSCP on every port "
                    "without its own dscp_to_tc_map; no port gets PFC, queue scheduling, ECN, buffers or the "
                    "watchdog (they are per port): nothing is lossless until --ports names the RoCE ports")
        return ("nothing: the maps, schedulers and WRED profile are defined but no port uses them; PCP trust, "
                "PFC, queues and buffers are per port: name the RoCE ports with --ports")


def _layout(queues: Sequence[int], lossless: Sequence[int]) -> Dict[str, bool]:
    """Queue ranges -> lossless, one key per run of queues of the same kind."""
    out: Dict[str, bool] = {}
    current: List[int] = []
    kind: Optional[bool] = None
    for q in queues:
        this = q in lossless
        if current and (this != kind or q != current[-1] + 1):
            out[span(current[0], current[-1])] = bool(kind)
            current = []
        current.append(q)
        kind = this
    if current:
        out[span(current[0], current[-1])] = bool(kind)
    return out


def _wred(i: SwitchIntent) -> Dict[str, str]:
    e = i.ecn
    out = {"ecn": "ecn_all", "wred_green_enable": "true", "wred_yellow_enable": "true", "wred_red_enable": "true"}
    for colour in ("green", "yellow", "red"):
        out[f"{colour}_min_threshold"] = str(e.min_threshold)
        out[f"{colour}_max_threshold"] = str(e.max_threshold)
        out[f"{colour}_drop_probability"] = str(e.probability)
    return out


OS = Sonic()
