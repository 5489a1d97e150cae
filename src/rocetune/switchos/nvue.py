"""NVIDIA Cumulus Linux (NVUE): `nv set` commands written from the plan, and three outputs read
back -- `nv show qos roce`, `nv show interface <if> qos roce status`, and `nv set` commands (what
rocetune writes, and what `nv config show -o commands` prints).

The shows are laid out as NVIDIA's "RDMA over Converged Ethernet - RoCE" pages print them, Cumulus
Linux 5.0 to 5.16: key/value lines (operational, applied, sometimes a description column), then
the "RoCE PCP/DSCP->SP mapping" table (DSCP -> switch priority; `-` where a switch priority has no
DSCP, as in lossy-multi-tc mode), the "RoCE SP->TC mapping and ETS" table (switch priority ->
traffic class, scheduler) and the pool table (which switch priorities and traffic classes the
RoCE lossless pools hold). Sizes are printed in binary units (146.48 KB is 150000 bytes). The
interface-level show prints the thresholds as the ASIC holds them: NVIDIA documents that they
differ from the configured ones (150,000 bytes programmed as 159,744 on Spectrum-4).

RoCE mode's defaults (the same pages' "Default RoCE Configuration"): trust PCP and DSCP, DSCP d ->
switch priority d/8, switch priority 3 -> traffic class 3 (RoCE) and 6 -> 6 (CNP, strict), every
other one -> 0; ECN on traffic classes 0 and 3 from 150,000 to 1,500,000 bytes; in the lossless
modes PFC on switch priority 3, its ingress buffer in the RoCE lossless pool (one shared ingress
pool in lossless-single-ipool) and traffic class 3 in the reserved egress pool.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import ParseError
from ..model.switch_qos import TRAFFIC_CLASSES, QueueReading, SwitchIntent, SwitchQos, SwitchReading, merged
from ..probe.parsers._common import as_text, clean, require_content
from .base import Choice, Rendered, SwitchOs, listed, refuse, template

WHAT = "nv show qos roce"
PROFILE = "default-global"
_UNITS = {"bytes": 1, "byte": 1, "b": 1, "kb": 1024, "mb": 1024 ** 2, "gb": 1024 ** 3}
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)?\Z")
_MAPPING = "RoCE PCP/DSCP->SP mapping"
_ETS = "RoCE SP->TC mapping"
_POOLS = ("RoCE pool config", "RoCE Pool Status")
_PROMPT_RE = re.compile(r"^\S+@\S+:\S*\$\s*(.*)\Z")
# RoCE mode: data and CNPs keep these traffic classes whatever their switch priority (NVIDIA's
# procedure for moving the lossless switch priority maps the new one to traffic class 3).
ROCE_TC, CNP_TC = 3, 6
DEFAULT_DATA: Tuple[int, int] = (26, 3)        # DSCP, switch priority
DEFAULT_CNP: Tuple[int, int] = (48, 6)
DEFAULT_ECN: Tuple[int, int, int] = (150000, 1500000, 100)   # bytes, bytes, percent
DEFAULT_ECN_TCS = (0, 3)
LOSSLESS_MODES = ("lossless", "lossless-single-ipool")
MODES = LOSSLESS_MODES + ("lossy", "lossy-multi-tc")
# NVIDIA documents the interface-level threshold as the ASIC programs it: 150,000 bytes configured
# read 159,744 (156 KB) on Spectrum-4 (+6.5%). Up to this much above the plan is the same setting.
PROGRAMMED_ABOVE = 0.10
# The RoCE shows do not print the PFC watchdog; `nv show interface IF qos pfc-watchdog` does.
# NVUE's PFC watchdog is on or off per interface; its action is the switch's (not configurable).
WATCHDOG_ACTION = "the watchdog's action is NVUE's own (not configurable per interface)"
# Without a cable-length command NVUE applies its own default, which its pages give as 10 m (the QoS
# page's PFC profiles) while Cumulus Linux 5.0's `nv show qos roce` prints 100 in RoCE mode.
CABLE_DEFAULT = "no cable-length command: NVUE's default applies (10 m or 100 m by the release's pages)"
def _unset_watchdog(intent: SwitchIntent) -> str:
    w = intent.watchdog
    return "" if w is None else (f" (the plan's pfc_watchdog, action {w.action}, detection {w.detection_time} ms, "
                                 f"restoration {w.restoration_time} ms, is not set on NVUE)")


WATCHDOG_NOT_SHOWN = "the RoCE shows do not print the PFC watchdog (`nv show interface IF qos pfc-watchdog`)"


class Nvue(SwitchOs):
    name = "nvue"
    title = "NVIDIA Cumulus Linux (NVUE)"
    suffix = ".nvue"
    order = 20
    port_example = "swp1,swp2"
    priority_word = "switch priority"
    reads = ("`nv show qos roce`, `nv show interface <if> qos roce status` (one or several interfaces), or "
             "`nv set` commands (`nv config show -o commands`)")
    choices = (
        Choice("roce_mode", ("lossless", "lossless-single-ipool"),
               "NVUE's RoCE mode: lossless (separate lossless and lossy ingress pools, NVUE's default) or "
               "lossless-single-ipool (one shared ingress pool); `nv set qos roce mode lossless` on a switch "
               "in lossless-single-ipool mode turns the shared pool off", default="lossless"),
    )

    def looks_like(self, text: str) -> bool:
        return (_MAPPING in text or ("congestion-control" in text and "trust-mode" in text) or _is_counters(text)
                or bool(re.search(r"^\s*(\S+@\S+\$\s*)?nv set (qos|interface \S+ qos) ", text, re.M)))

    def parse(self, text: Any, source: str = WHAT) -> SwitchQos:
        text = clean(as_text(text, WHAT))
        require_content(text, WHAT)
        if text.lstrip().startswith(("{", "[")):
            raise ParseError(source, "this is JSON: rocetune reads the text form of `nv show qos roce`",
                             hint="run `nv show qos roce` without -o json and give that output")
        if re.search(r"^\s*(\S+@\S+\$\s*)?nv set ", text, re.M) and _MAPPING not in text:
            return _read_commands(text, source)
        if not self.looks_like(text):
            raise ParseError(source, "no RoCE QoS lines (congestion-control, trust-mode, the PCP/DSCP->SP table)")
        return _read_show(text, source)

    def render(self, intent: SwitchIntent, ports: Sequence[str], chosen: Mapping[str, str],
               fabric: Sequence[str] = ()) -> Rendered:
        mode = self.choice(chosen, "roce_mode") or "lossless"
        # NVUE's cable length is switch-wide (the default-global PFC profile): written from the plan
        # only when no fabric port, whose cables the plan does not describe, shares it.
        lines = commands(intent, mode, list(ports) + list(fabric), cable=not fabric)
        ports = list(ports) + list(fabric)
        warnings = []
        if "roce_mode" not in chosen and intent.lossless:
            warnings.append("`nv set qos roce mode lossless` turns off lossless-single-ipool on a switch that runs "
                            "it: give --roce-mode lossless-single-ipool to keep one shared ingress pool")
        if intent.lossless:
            assumes = [f"RoCE mode {mode} and its buffer pools (NVUE sizes the lossless headroom and pools itself); "
                       "traffic class 3 stays RoCE's lossless class, 6 the strict CNP class"]
        else:
            assumes = ["RoCE mode lossy: no PFC and no lossless pool; traffic class 3 stays RoCE's (ECN marking), "
                       "6 the strict CNP class"]
        if ports:
            assumes.append("per-interface PFC watchdog (`qos pfc-watchdog state enable`, Cumulus Linux 5.6 or later); "
                           "its action and timers are NVUE's own"
                           + (_unset_watchdog(intent) if intent.watchdog is not None and intent.lossless else ""))
        if intent.lossless and intent.cable_length is None:
            assumes.append("NVUE's default cable length for the PFC headroom (the plan states no buffer.cable_length)")
        elif intent.lossless and fabric:
            assumes.append("the switch's cable length for the PFC headroom: NVUE's is switch-wide and the plan's "
                           "buffer.cable_length is the hosts' cables, not the fabric ports'")
        notes = [f"assumes: {a}" for a in assumes]
        bound = ("switch-wide: RoCE mode and the default-global mapping, PFC, scheduler and congestion-control "
                 "profiles apply to every port"
                 + (f"; PFC watchdog on {', '.join(ports)}" if ports and intent.lossless
                    else "; no PFC watchdog (no lossless priority)" if not intent.lossless
                    else "; no PFC watchdog (it is per interface: name the RoCE ports with --ports)"))
        notes.append(f"binds: {bound}")
        text = template("nvue.sh.j2").render(lines=lines, notes=notes, source=intent.source,
                                             lossless=bool(intent.lossless))
        return Rendered(text=text, assumes=assumes, bound=bound, warnings=warnings)


# --- writing -----------------------------------------------------------------------------------

def commands(intent: SwitchIntent, mode: str, ports: List[str], cable: bool = True) -> List[str]:
    """The `nv set` lines that move RoCE mode's defaults to the plan: NVIDIA's commands for remapping
    a DSCP and for moving the lossless switch priority (which keep RoCE on traffic class 3)."""
    _refuse(intent)
    g = PROFILE
    out = [f"nv set qos roce mode {mode if intent.lossless else 'lossy'}"]
    data, cnp = intent.data, intent.cnp
    if intent.trust == "pcp":
        out.append(f"nv set qos mapping {g} trust l2")
    elif any((c.dscp, c.priority) != _default_of(c.name) for c in intent.classes):
        out.append(f"nv set qos mapping {g} trust both")
    if intent.lossless and data.priority != DEFAULT_DATA[1]:
        out.append(f"nv set qos pfc {g} switch-priority {data.priority}")
        # the RoCE lossless ingress pool holds the moved switch priority (Cumulus Linux QoS, Traffic Pools)
        out.append(f"nv set qos traffic-pool roce-lossless switch-priority {data.priority}")
    if intent.lossless and intent.cable_length is not None and cable:
        out.append(f"nv set qos pfc {g} cable-length {intent.cable_length}")
    for c, tc, default_sp in ((data, ROCE_TC, DEFAULT_DATA[1]), (cnp, CNP_TC, DEFAULT_CNP[1])):
        if c.priority != default_sp:
            out.append(f"nv set qos egress-queue-mapping {g} switch-priority {c.priority} traffic-class {tc}")
            out.append(f"nv set qos egress-queue-mapping {g} switch-priority {default_sp} traffic-class 0")
    if intent.trust == "dscp":
        for c in intent.classes:
            if c.name == "cts" or (c.dscp, c.priority) != _default_of(c.name):
                out.append(f"nv set qos mapping {g} dscp {c.dscp} switch-priority {c.priority}")
    ecn = (intent.ecn.min_threshold, intent.ecn.max_threshold, intent.ecn.probability)
    if ecn != DEFAULT_ECN:
        cc = f"nv set qos congestion-control {g} traffic-class {ROCE_TC}"
        out += [f"{cc} min-threshold {ecn[0]}", f"{cc} max-threshold {ecn[1]}", f"{cc} probability {ecn[2]}"]
    if ports and intent.lossless:
        out.append(f"nv set interface {','.join(ports)} qos pfc-watchdog state enable")
    return out


def _default_of(name: str) -> Tuple[int, int]:
    return DEFAULT_CNP if name == "cnp" else DEFAULT_DATA


def _refuse(intent: SwitchIntent) -> None:
    lossless = list(intent.lossless)
    if lossless and lossless != [intent.data.priority]:
        raise refuse(f"NVUE: lossless priorities {listed(lossless)} with RoCE data on {intent.data.priority}: "
                     "RoCE mode "
                     "has one lossless switch priority (the one its traffic class 3 and lossless pool serve), and "
                     "NVIDIA's procedure moves that one",
                     "make the data priority the plan's only lossless priority for NVUE switches")
    if intent.cts is not None and intent.cts.priority not in (intent.data.priority, intent.cnp.priority):
        raise refuse(f"NVUE: cts.priority {intent.cts.priority} is neither the data priority {intent.data.priority} "
                     f"nor the CNP priority {intent.cnp.priority}: RoCE mode has no third RoCE traffic class",
                     "put the credit messages in the data class (lossless) or the CNP class (strict)")
    if intent.data.priority == intent.cnp.priority:
        raise refuse("NVUE: data and CNPs on one switch priority cannot be both lossless (traffic class 3) and "
                     "strict (traffic class 6)", "give cnp.priority its own value")


# --- reading: the shows ------------------------------------------------------------------------

def _read_show(text: str, source: str) -> SwitchQos:
    """One reading per show in the file: several `nv show interface IF qos roce status` saved one
    after another (each after its prompt line), NVIDIA's all-interfaces form (an `Interface: IF`
    line before each), or shows saved without either (told apart by their header line)."""
    blocks = _blocks(text)
    readings = []
    forms = set()
    unnamed = 0
    counters: Dict[str, Dict[str, int]] = {}
    for port, block in blocks:
        if port is None and len(blocks) > 1:
            unnamed += 1
        if _is_counters(block):
            counters[port or "switch"] = _counters(block, source)
            forms.add("nv show interface ... qos roce counters")
            continue
        reading, form = _read_block(block, port, source)
        readings.append(reading)
        forms.add(form)
    if not readings:
        raise ParseError(source, "RoCE counters without the RoCE configuration",
                         hint="save `nv show interface IF qos roce status` (or `nv show qos roce`) with them")
    warnings = []
    if unnamed:
        warnings.append(f"{unnamed} of the {len(blocks)} shows in the file name no interface (no prompt line "
                        "or `Interface:` line): their findings name the switch")
    return SwitchQos(kind="nvue", source=source, groups=merged(readings), priority_word="switch priority",
                     warnings=warnings, form="; ".join(sorted(forms)), counters=counters)


# The RoCE counters rocetune reads, by their place in the show: (section, key) -> name.
COUNTERS = {("rx-roce-stats", "no-buffer-discard"): "rx_roce_discards",
            ("tx-roce-stats", "unicast-no-buffer-discard"): "tx_roce_discards",
            ("rx-pfc-stats", "pause-packets"): "rx_pause",
            ("tx-pfc-stats", "pause-packets"): "tx_pause",
            ("tx-ecn-stats", "ecn-marked-packets"): "ecn_marked",
            ("tx-cnp-stats", "cnp-packets"): "tx_cnp"}


def _is_counters(block: str) -> bool:
    return bool(re.search(r"^\s*(rx|tx)-roce-stats\s*$", block, re.M))


def _counters(block: str, source: str) -> Dict[str, int]:
    """`nv show interface IF qos roce counters`: the counts under their section (rx-pfc-stats
    pause-packets is not tx-pfc-stats pause-packets)."""
    out: Dict[str, int] = {}
    section = ""
    for line in block.splitlines():
        m = re.match(r"^\s*([a-z][a-z0-9-]*)\s*\Z", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s*([a-z][a-z0-9-]*)\s{2,}(\d+)(?:\s{2,}.*)?\s*\Z", line)
        if m and (section, m.group(1)) in COUNTERS:
            out[COUNTERS[(section, m.group(1))]] = int(m.group(2))
    return out


_INTERFACE_RE = re.compile(r"^\s*Interface:\s*(\S+)\s*\Z")
_HEADER_RE = re.compile(r"^\s*operational\s+applied\b")


def _blocks(text: str) -> List[Tuple[Optional[str], str]]:
    """(interface or None, the show's lines) for each show the text holds."""
    out: List[Tuple[Optional[str], List[str]]] = []
    current: Optional[Tuple[Optional[str], List[str]]] = None
    content = False   # the current block has lines beyond its prompt, name or header
    for line in text.splitlines():
        prompt = _PROMPT_RE.match(line.strip())
        named = _INTERFACE_RE.match(line)
        if prompt or named:
            port = None
            if named:
                port = named.group(1)
            elif prompt:
                m = re.search(r"nv show interface (\S+) qos", prompt.group(1))
                port = m.group(1) if m else None
            if current is not None and not content and current[0] is None and named:
                current = (port, current[1])   # `Interface:` after the prompt line names that show
                out[-1] = current
            else:
                current = (port, [])
                out.append(current)
                content = False
            continue
        if _HEADER_RE.match(line) and content:
            current = (None, [])
            out.append(current)
            content = False
        if current is None:
            current = (None, [])
            out.append(current)
        current[1].append(line)
        content = content or (bool(line.strip()) and not _HEADER_RE.match(line)
                              and not set(line.strip()) <= set("- "))
    blocks = [(port, "\n".join(lines)) for port, lines in out if any(line.strip() for line in lines)]
    return blocks or [(None, text)]


def _read_block(text: str, port: Optional[str], source: str) -> Tuple[SwitchReading, str]:
    values = _key_values(text)
    interface_level = port is not None or any(r and r[0] in ("cnp", "roce") for r in _rows(text, _MAPPING))
    reading = SwitchReading(ports=[port] if port else [])
    trust = values.get("trust-mode")
    if trust is not None:
        reading.trust = _trust(trust)
    mode = values.get("mode", "")
    if "pfc-priority" in values:
        reading.pfc = tuple(sorted(_ints(values["pfc-priority"], "pfc-priority", source)))
    elif mode.startswith("lossy"):
        reading.pfc = ()
    full_table = False
    for row in _rows(text, _MAPPING):
        if len(row) < 4:
            continue
        sp = _int(row[-1], "switch-prio column", source)
        for d in _ints(row[2], "DSCP column", source):
            reading.dscp_to_priority[d] = sp
        if row[1] != "-":
            for p in _ints(row[1], "PCP column", source):
                reading.pcp_to_priority[p] = sp
        full_table = full_table or row[0].isdigit()
    if not full_table and reading.dscp_to_priority:
        reading.dscp_default = "not among the RoCE classes this interface-level show lists"
    strict: Dict[int, bool] = {}
    for row in _rows(text, _ETS):
        if len(row) < 4:
            continue
        sp, tc = _int(row[1], "switch-prio column", source), _int(row[2], "traffic-class column", source)
        reading.priority_to_tc[sp] = tc
        strict[tc] = " ".join(row[3:]).lower().startswith("strict")
    ecn_tcs = set(_ints(values["enabled-tc"], "enabled-tc", source)) if values.get("enabled-tc") else set()
    ecn_on = values.get("congestion-mode", "").upper().startswith("ECN")
    low = _size(values.get("min-threshold"), "min-threshold", source)
    high = _size(values.get("max-threshold"), "max-threshold", source)
    probability = _int_or_none(values.get("probability"), "probability", source)
    ingress_sps, egress_tcs = _pools(text, source)
    for tc in TRAFFIC_CLASSES:
        marked = ecn_on and tc in ecn_tcs
        reading.queues[tc] = QueueReading(
            strict=strict.get(tc), ecn=marked if "enabled-tc" in values else None,
            min_threshold=low if marked else None, max_threshold=high if marked else None,
            probability=probability if marked else None, programmed=interface_level,
            lossless=None if egress_tcs is None else tc in egress_tcs)
    reading.ingress_lossless, reading.buffer_note = _ingress(reading.pfc, mode, ingress_sps)
    reading.watchdog_note = WATCHDOG_NOT_SHOWN
    if values.get("cable-length"):
        reading.cable_length = _int(values["cable-length"], "cable-length", source)
    else:
        reading.cable_note = "this show does not print the cable length (`nv show qos pfc default-global`)"
    form = "nv show interface ... qos roce status" if interface_level else "nv show qos roce"
    return reading, f"{form} (mode {mode or 'not stated'})"


def _ingress(pfc, mode: str, ingress_sps: Optional[Set[int]]):
    if pfc is None:
        return None, ""
    if mode == "lossless-single-ipool":
        return {p: True for p in pfc}, "lossless-single-ipool: lossless and lossy traffic share one ingress pool"
    if ingress_sps is None:
        return None, "the output lists no RoCE lossless ingress pool"
    return {p: p in ingress_sps for p in pfc}, ""


def _pools(text: str, source: str) -> Tuple[Optional[Set[int]], Optional[Set[int]]]:
    """(switch priorities of the RoCE lossless ingress pool, traffic classes of the reserved egress
    pool), from the pool table; (None, None) when the output has none."""
    for title in _POOLS:
        header, rows = _table(text, title)
        if not header:
            continue
        try:
            sp_col, tc_col = header.index("switch-priorities") + 1, header.index("traffic-class") + 1
        except ValueError:
            continue
        ingress: Set[int] = set()
        egress: Set[int] = set()
        for row in rows:
            if len(row) <= max(sp_col, tc_col):
                continue
            name = row[1]
            if "ingress" in name and ("roce" in name or "lossless" in name):
                ingress.update(_ints(row[sp_col], "switch-priorities column", source))
            if "egress" in name and ("roce" in name or "lossless" in name):
                egress.update(_ints(row[tc_col], "traffic-class column", source))
        return ingress, egress
    return None, None


def _trust(text: str) -> str:
    modes = set(t.strip() for t in text.replace(" ", "").split(","))
    if {"pcp", "dscp"} <= modes or "both" in modes:
        return "both"
    return "dscp" if modes & {"dscp", "l3"} else "pcp"


def _key_values(text: str) -> Dict[str, str]:
    """`key   operational   applied [description]` lines of one show, before its first table:
    the operational value, else the applied one."""
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


def _table(text: str, title: str) -> Tuple[List[str], List[List[str]]]:
    """The header words and the rows of the table under `title`: the rows are the lines after the
    header's dashed rule, up to a blank line or an unindented line (the next title)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if title in line), None)
    if start is None:
        return [], []
    rows: List[List[str]] = []
    header: List[str] = []
    previous = ""
    in_rows = False
    for line in lines[start + 1:]:
        stripped = line.strip()
        if not in_rows:
            in_rows = bool(stripped) and "-" in stripped and set(stripped) <= set("- ")
            if in_rows:
                header = previous.split()
            elif stripped and not set(stripped) <= set("="):
                previous = stripped
            continue
        if not stripped or not line[:1].isspace():
            break
        rows.append(stripped.split())
    return header, rows


def _rows(text: str, title: str) -> List[List[str]]:
    return _table(text, title)[1]


def _size(value: Optional[str], what: str, source: str) -> Optional[float]:
    if value is None:
        return None
    m = _SIZE_RE.match(value.strip())
    unit = (m.group(2) or "bytes").lower() if m else None
    if not m or unit not in _UNITS:
        raise ParseError(source, f"{what}: {value!r} is not a size like 146.48 KB")
    return float(m.group(1)) * _UNITS[unit]


def _ints(text: str, what: str, source: str) -> List[int]:
    """`0,3`, `0-3,5-7`, or `-` (none)."""
    out: List[int] = []
    for part in text.replace(" ", "").split(","):
        if not part or part == "-":
            continue
        lo, sep, hi = part.partition("-")
        if sep and lo and hi:
            out += range(_int(lo, what, source), _int(hi, what, source) + 1)
        else:
            out.append(_int(part, what, source))
    return out


def _int(text: str, what: str, source: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ParseError(source, f"{what}: {text!r} is not a number") from None


def _int_or_none(text: Optional[str], what: str, source: str) -> Optional[int]:
    return None if text is None else _int(text, what, source)


# --- reading: `nv set` commands ------------------------------------------------------------------

_TABLES = ("mapping", "egress-queue-mapping", "pfc", "egress-scheduler", "congestion-control")


class _Config:
    """What a list of `nv set` commands configures: RoCE mode, the commands of each QoS profile
    (`nv set qos TABLE PROFILE ...`, default-global or named), and which named profile each
    interface binds (`nv set interface IFS qos TABLE profile NAME`)."""

    def __init__(self) -> None:
        self.roce: Optional[str] = None      # the RoCE mode, None when RoCE is not set
        self.lossless_pool: Optional[Set[int]] = None
        self.watchdog: Set[str] = set()
        self.profiles: Dict[Tuple[str, str], List[List[str]]] = {}
        self.bindings: Dict[str, Dict[str, str]] = {}   # interface -> table -> profile
        self.cable: Dict[str, int] = {}                  # pfc profile -> cable-length (metres)
        self.down: Set[str] = set()                      # `nv set interface IFS link state down`


class _State:
    """One set of profiles (a table -> profile choice) with RoCE mode's defaults filled in."""

    def __init__(self) -> None:
        self.trust: Optional[str] = None
        self.dscp: Dict[int, int] = {}
        self.pcp: Dict[int, int] = {}
        self.sp_tc: Dict[int, int] = {}
        self.pfc: Optional[Tuple[int, ...]] = None
        self.sched: Dict[int, bool] = {}
        self.ecn: Dict[int, Dict[str, Any]] = {}


def _read_commands(text: str, source: str) -> SwitchQos:
    c = _Config()
    for raw in text.splitlines():
        line = raw.strip()
        prompt = _PROMPT_RE.match(line)
        line = prompt.group(1).strip() if prompt else line
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[:2] == ["nv", "unset"] and words[2:4] == ["qos", "roce"]:
            c.roce = None if len(words) == 4 else ("lossless" if c.roce else None)
            continue
        if words[:2] != ["nv", "set"]:
            continue
        _command(c, words[2:], source)
    return _config_reading(c, source)


def _command(c: _Config, w: List[str], source: str) -> None:
    """One `nv set` command (the words after `nv set`) into the configuration."""
    if w[:2] == ["qos", "roce"]:
        if len(w) == 2:
            c.roce = c.roce or "lossless"
        elif w[2] == "mode" and len(w) == 4 and w[3] in MODES:
            c.roce = w[3]
        elif w[2] in ("enable", "state") and len(w) == 4:
            c.roce = (c.roce or "lossless") if w[3] in ("on", "enabled", "enable") else None
        return
    if w[:2] == ["qos", "traffic-pool"] and w[2:4] == ["roce-lossless", "switch-priority"] and len(w) == 5:
        c.lossless_pool = set(_ints(w[4], "switch-priority", source))
        return
    if w[:1] == ["interface"] and len(w) >= 4 and w[2] == "qos":
        _interface_command(c, interfaces(w[1], source), w[3:])
        return
    if w[:1] == ["interface"] and w[2:] in (["link", "state", "down"], ["link", "state", "up"]):
        ports = interfaces(w[1], source)
        if w[4] == "down":
            c.down.update(ports)
        else:
            c.down.difference_update(ports)
        return
    if len(w) < 4 or w[0] != "qos" or w[1] not in _TABLES:
        return
    if w[1] == "pfc" and w[3:4] == ["cable-length"] and len(w) == 5:
        c.cable[w[2]] = _int(w[4], "cable-length", source)
        return
    c.profiles.setdefault((w[1], w[2]), []).append(w[3:])


def _interface_command(c: _Config, ports: List[str], w: List[str]) -> None:
    """`nv set interface IFS qos ...`: the PFC watchdog, or a profile the interfaces bind (NVIDIA
    writes `qos TABLE profile NAME`, and `qos congestion-control NAME` in its QoS page's example)."""
    if w[:1] == ["pfc-watchdog"] and w[1:] in ([], ["state", "enable"], ["state", "enabled"]):
        c.watchdog.update(ports)
    elif w[:1] == ["pfc-watchdog"] and w[1:] in (["state", "disable"], ["state", "disabled"]):
        c.watchdog.difference_update(ports)
    elif w[0] in _TABLES and len(w) == 3 and w[1] == "profile":
        for port in ports:
            c.bindings.setdefault(port, {})[w[0]] = w[2]
    elif w[0] in _TABLES and len(w) == 2:
        for port in ports:
            c.bindings.setdefault(port, {})[w[0]] = w[1]


_RANGE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)(\d+)-(?:\1)?(\d+)\Z")


def interfaces(text: str, source: str) -> List[str]:
    """NVUE's interface lists: `swp1,swp2`, ranges `swp1-4` (and `swp1s0-3` over the last number)."""
    out: List[str] = []
    for part in text.split(","):
        m = _RANGE_RE.match(part)
        if not m:
            out.append(part)
            continue
        lo, hi = int(m.group(2)), int(m.group(3))
        if hi < lo or hi - lo > 1024:
            raise ParseError(source, f"interface range {part!r} is not an ascending range")
        out += [f"{m.group(1)}{n}" for n in range(lo, hi + 1)]
    return out


def _state(c: _Config, chosen: Dict[str, str], source: str) -> Tuple[_State, Dict[str, bool]]:
    """The settings of the profiles `chosen` names (default-global for the others), and per table
    whether that profile is default-global (whose unset values are RoCE mode's defaults)."""
    st = _State()
    default: Dict[str, bool] = {}
    for table in _TABLES:
        profile = chosen.get(table, PROFILE)
        default[table] = profile == PROFILE
        if (table, profile) not in c.profiles and not default[table]:
            raise ParseError(source, f"an interface binds the {table} profile {profile!r}, which the commands do not "
                                     "define", hint=f"give the `nv set qos {table} {profile} ...` lines too")
        for rest in c.profiles.get((table, profile), []):
            _profile_command(st, table, rest, source)
    return st, default


def _profile_command(st: _State, table: str, rest: List[str], source: str) -> None:
    """`nv set qos TABLE PROFILE REST...` into the settings."""
    if table == "mapping" and rest[:1] == ["trust"] and len(rest) == 2:
        st.trust = rest[1]
    elif table == "mapping" and len(rest) == 4 and rest[0] in ("dscp", "pcp") and rest[2] == "switch-priority":
        target = st.dscp if rest[0] == "dscp" else st.pcp
        for v in _ints(rest[1], rest[0], source):
            target[v] = _int(rest[3], "switch-priority", source)
    elif table == "egress-queue-mapping" and len(rest) == 4 and rest[0] == "switch-priority":
        for sp in _ints(rest[1], "switch-priority", source):
            st.sp_tc[sp] = _int(rest[3], "traffic-class", source)
    elif table == "pfc" and len(rest) == 2 and rest[0] == "switch-priority":
        st.pfc = tuple(sorted(_ints(rest[1], "switch-priority", source)))
    elif table == "egress-scheduler" and len(rest) >= 4 and rest[0] == "traffic-class" and rest[2] == "mode":
        for tc in _ints(rest[1], "traffic-class", source):
            st.sched[tc] = rest[3] == "strict"
    elif table == "congestion-control" and len(rest) == 4 and rest[0] == "traffic-class":
        key = {"min-threshold-bytes": "min-threshold", "max-threshold-bytes": "max-threshold"}.get(rest[2], rest[2])
        for tc in _ints(rest[1], "traffic-class", source):
            entry = st.ecn.setdefault(tc, {})
            if key == "ecn":
                entry["ecn"] = rest[3] in ("enable", "on", "enabled")
            elif key in ("min-threshold", "max-threshold", "probability"):
                entry[key] = _int(rest[3], key, source)


def _config_reading(c: _Config, source: str) -> SwitchQos:
    """One reading for the interfaces that bind no profile of their own (named by the interfaces
    the commands mention, else the switch), one per other set of bindings."""
    # One policy on every OS: an interface administratively down is not judged.
    mentioned = sorted((set(c.bindings) | c.watchdog) - c.down, key=_natural)
    rest = [p for p in mentioned if not c.bindings.get(p)]
    readings = [_reading_of(c, {}, rest, source)]
    readings += [_reading_of(c, c.bindings[p], [p], source) for p in mentioned if c.bindings.get(p)]
    groups = merged(readings)
    form = f"nv set commands (RoCE mode {c.roce or 'not set'})"
    if c.watchdog:
        form += f"; PFC watchdog on {','.join(sorted(c.watchdog, key=_natural))}"
    down = sorted(c.down, key=_natural)
    warnings = [f"not judged: {len(down)} interface(s) administratively down ({', '.join(down[:8])}"
                f"{' ...' if len(down) > 8 else ''})"] if down else []
    return SwitchQos(kind="nvue", source=source, groups=groups, priority_word="switch priority", form=form,
                     warnings=warnings, inactive_ports={p: "link state down" for p in down})


def _reading_of(c: _Config, chosen: Dict[str, str], ports: List[str], source: str) -> SwitchReading:
    st, default = _state(c, chosen, source)
    r = SwitchReading(ports=list(ports))
    roce = c.roce is not None
    lossless_mode = c.roce in LOSSLESS_MODES
    trust = st.trust or ("both" if roce else None)
    r.trust = {"l2": "pcp", "l3": "dscp", "both": "both", "port": "port"}.get(trust, trust) if trust else None
    r.dscp_to_priority = {d: d // 8 for d in range(64)} if roce or st.dscp else {}
    r.dscp_to_priority.update(st.dscp)
    r.pcp_to_priority = dict(st.pcp)
    sp_tc = {sp: (sp if sp in (ROCE_TC, CNP_TC) else 0) for sp in TRAFFIC_CLASSES} if roce else {}
    sp_tc.update(st.sp_tc)
    r.priority_to_tc = sp_tc
    if st.pfc is not None:
        r.pfc = st.pfc
    elif not default["pfc"]:
        r.pfc = ()   # a named PFC profile without switch-priority pauses none
    else:
        r.pfc = (3,) if lossless_mode else (() if roce else None)
    cc_defaults = roce and default["congestion-control"]
    ecn = {tc: {"ecn": True, "min-threshold": DEFAULT_ECN[0], "max-threshold": DEFAULT_ECN[1],
                "probability": DEFAULT_ECN[2]} for tc in DEFAULT_ECN_TCS} if cc_defaults else {}
    for tc, entry in st.ecn.items():
        ecn[tc] = dict(ecn.get(tc, {}), **entry)
    stated_cc = roce or bool(c.profiles.get(("congestion-control", chosen.get("congestion-control", PROFILE))))
    for tc in TRAFFIC_CLASSES:
        e: Dict[str, Any] = ecn.get(tc, {})
        marked: Optional[bool] = bool(e.get("ecn", bool(e))) if (stated_cc or tc in st.ecn) else None
        strict = st.sched.get(tc, tc == CNP_TC if roce and default["egress-scheduler"] else None)
        r.queues[tc] = QueueReading(
            strict=strict, ecn=marked,
            min_threshold=e.get("min-threshold") if marked else None,
            max_threshold=e.get("max-threshold") if marked else None,
            probability=e.get("probability") if marked else None,
            lossless=(tc == ROCE_TC) if lossless_mode else (False if roce else None))
    if r.pfc:
        if c.roce == "lossless-single-ipool":
            r.ingress_lossless = {p: True for p in r.pfc}
            r.buffer_note = "lossless-single-ipool: lossless and lossy traffic share one ingress pool"
        elif lossless_mode:
            moved = st.pfc is not None or not default["pfc"]
            pool = c.lossless_pool if c.lossless_pool is not None else (None if moved else {3})
            if pool is None:
                r.ingress_lossless = {p: (True if p == 3 else None) for p in r.pfc}
                r.buffer_note = ("the commands move PFC but not the RoCE lossless pool's switch priorities: "
                                 "`nv show qos roce` on the switch shows which it holds")
            else:
                r.ingress_lossless = {p: p in pool for p in r.pfc}
    _watchdog_of(c, r, ports)
    cable = c.cable.get(chosen.get("pfc", PROFILE))
    if cable is not None:
        r.cable_length = cable
    elif r.pfc:
        r.cable_note = CABLE_DEFAULT
    return r


def _watchdog_of(c: _Config, r: SwitchReading, ports: List[str]) -> None:
    if ports and all(p in c.watchdog for p in ports):
        r.watchdog = True
    elif ports and not any(p in c.watchdog for p in ports):
        r.watchdog = False
    elif not ports and c.watchdog:
        r.watchdog_note = (f"the commands enable it on {','.join(sorted(c.watchdog, key=_natural))} only; "
                           "the other interfaces are not named")
    else:
        r.watchdog = False if not ports and c.roce else None
    if r.watchdog is not None or c.watchdog:
        r.watchdog_action = None
        r.watchdog_note = r.watchdog_note or WATCHDOG_ACTION


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


OS = Nvue()
