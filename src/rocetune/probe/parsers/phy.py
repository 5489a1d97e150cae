"""The PHY of a port as its tools print it: `mlxlink -d DEV -m -c` (NVIDIA MFT; `mstlink` in
mstflint prints the same), `ethtool --show-fec IF` and `ethtool -m IF` (--module-info).

mlxlink prints sections, a title over a line of dashes, then `Key<spaces>: value` rows; a
terminal gets the values coloured (ANSI escapes are removed). Values keep mlxlink's words: the
speed (`100GbE`, `200G`, `IB-EDR`), the FEC, the BER as `3E-12`, the module's readings with their
alarm range in brackets (`54 [-5..75]`). Recorded real outputs: tests/fixtures/outputs/mlxlink,
tests/fixtures/outputs/ethtool (SOURCES.md).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ...errors import ParseError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ROW = re.compile(r"^(?P<key>[^:]*?[^\s:])\s*:\s?(?P<value>.*)$")
_RANGE = re.compile(r"^(?P<values>.*?)\s*\[(?P<low>-?[\d.]+)\.\.(?P<high>-?[\d.]+)\]\s*$")
_NUM = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
# InfiniBand lane rates in Gb/s (IBTA): the port speed is the rate times the width.
IB_LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100,
                "XDR": 200}


def sections(text: str) -> Dict[str, Dict[str, str]]:
    """{section title: {key: value}} of mlxlink's text output (rows before any title go under "")."""
    out: Dict[str, Dict[str, str]] = {}
    lines = [_ANSI.sub("", ln).rstrip() for ln in text.splitlines()]
    title = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if set(stripped) == {"-"}:
            continue
        nxt = next((ln.strip() for ln in lines[i + 1:] if ln.strip()), "")
        if nxt and set(nxt) == {"-"} and ":" not in stripped:
            title = stripped
            out.setdefault(title, {})
            continue
        m = _ROW.match(stripped)
        if m:
            out.setdefault(title, {})[m.group("key").strip()] = m.group("value").strip()
    return out


def ber(value: Optional[str]) -> Optional[float]:
    """`3E-12` -> 3e-12; `15E-255` (mlxlink's zero) -> 1.5e-254; N/A -> None."""
    if not value:
        return None
    v = value.strip().split()[0]
    try:
        return float(v)
    except ValueError:
        return None


def ranged(value: Optional[str]) -> Tuple[List[float], Optional[Tuple[float, float]]]:
    """`1.886,1.989 [-10.41..6]` -> ([1.886, 1.989], (-10.41, 6.0)); lanes as mlxlink lists them."""
    if not value:
        return [], None
    m = _RANGE.match(value.strip())
    body, bounds = (m.group("values"), (float(m.group("low")), float(m.group("high")))) if m else (value, None)
    nums = []
    for part in re.split(r"[,\s]+", body.strip()):
        part = re.sub(r"[A-Za-z%]+$", "", part)
        if _NUM.match(part):
            nums.append(float(part))
    return nums, bounds


def speed_gbps(speed: Optional[str], width: Optional[str] = None) -> Optional[float]:
    """mlxlink's speed in Gb/s: `100GbE`/`200G`/`400G_4X` as said, `IB-EDR` times the width."""
    if not speed:
        return None
    s = speed.strip().upper()
    m = re.match(r"^(?:IB-)?(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)$", s)
    if m:
        lanes = int(re.sub(r"\D", "", width or "4") or 4)
        return IB_LANE_GBPS[m.group(1)] * lanes
    m = re.match(r"^(\d+(?:\.\d+)?)\s*G", s)
    return float(m.group(1)) if m else None


def speed_list(value: Optional[str]) -> List[str]:
    """`0xf8f1f0d3 (100G,50G,40G,25G,10G,1G)` / `0x000017d0(200G,100G_2X,...)` -> the names."""
    if not value or "(" not in value:
        return []
    inner = value[value.index("(") + 1:value.rindex(")")] if ")" in value else value[value.index("(") + 1:]
    return [w.strip() for w in inner.split(",") if w.strip()]


def parse_mlxlink(text: str) -> dict:
    """The readings doctor and fleet use, from `mlxlink -m -c` text (each None when not shown)."""
    secs = sections(text)
    if not any(k in secs for k in ("Operational Info", "Module Info", "Physical Counters and BER Info")):
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("mlxlink", f"no Operational Info in the output ({first[:120] or 'empty'})")
    op = secs.get("Operational Info", {})
    sup = secs.get("Supported Info", {})
    trouble = secs.get("Troubleshooting Info", {})
    cnt = secs.get("Physical Counters and BER Info", {})
    mod = secs.get("Module Info", {})
    temp, temp_range = ranged(mod.get("Temperature [C]"))
    rx, rx_range = ranged(mod.get("Rx Power Current [dBm]"))
    tx, tx_range = ranged(mod.get("Tx Power Current [dBm]"))
    enabled = speed_list(sup.get("Enabled Link Speed (Ext.)") or sup.get("Enabled Link Speed"))
    cable = speed_list(sup.get("Supported Cable Speed (Ext.)") or sup.get("Supported Cable Speed"))
    out: Dict[str, object] = {
        "state": op.get("State"),
        "physical_state": op.get("Physical state"),
        "speed": op.get("Speed"),
        "width": op.get("Width"),
        "speed_gbps": speed_gbps(op.get("Speed"), op.get("Width")),
        "fec": op.get("FEC"),
        "enabled_speeds": enabled,
        "cable_speeds": cable,
        "status_opcode": trouble.get("Status Opcode"),
        "recommendation": (trouble.get("Recommendation") or None),
        "effective_errors": _int(cnt.get("Effective Physical Errors")),
        "effective_ber": ber(cnt.get("Effective Physical BER")),
        "raw_ber": ber(cnt.get("Raw Physical BER")),
        "raw_errors_per_lane": [int(x) for x in re.findall(r"\d+", cnt.get("Raw Physical Errors Per Lane") or "")],
        "link_down": _int(cnt.get("Link Down Counter")),
        "link_error_recovery": _int(cnt.get("Link Error Recovery Counter")),
        "module": None,
    }
    if mod:
        out["module"] = {
            "identifier": mod.get("Identifier"),
            "vendor": mod.get("Vendor Name"),
            "part": mod.get("Vendor Part Number"),
            "serial": mod.get("Vendor Serial Number"),
            "temperature_c": temp[0] if temp else None,
            "temperature_range": list(temp_range) if temp_range else None,
            "rx_power_dbm": rx,
            "rx_power_range": list(rx_range) if rx_range else None,
            "tx_power_dbm": tx,
            "tx_power_range": list(tx_range) if tx_range else None,
            "alarms": [],
        }
    return out


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    m = re.match(r"^\s*(\d+)", value)
    return int(m.group(1)) if m else None


def parse_show_fec(text: str) -> dict:
    """`ethtool --show-fec IF`: {"configured": [...], "active": "RS"|None}. Older ethtool says
    `Configured FEC encodings:`, newer `Supported/Configured FEC encodings:`."""
    configured, active = None, None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key.endswith("configured fec encodings"):
            configured = value.split()
        elif key == "active fec encoding":
            active = value.strip() or None
    if configured is None and active is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("ethtool --show-fec", f"no FEC encodings in the output ({first[:120] or 'empty'})")
    return {"configured": configured or [], "active": active}


def parse_module_info(text: str) -> dict:
    """`ethtool -m IF` (SFF-8472/8636/CMIS decoded): identifier, vendor, temperature, per-lane
    receive and transmit power in dBm, and every alarm or warning flag that is On."""
    rows: List[Tuple[str, str]] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            rows.append((key.strip(), value.strip()))
    if not rows:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("ethtool -m", f"no module fields in the output ({first[:120] or 'empty'})")
    get = dict(rows)
    temp = None
    m = re.match(r"^(-?[\d.]+)\s*degrees C", get.get("Module temperature", ""))
    if m:
        temp = float(m.group(1))
    rx, tx = [], []
    for key, value in rows:
        dbm = re.search(r"/\s*(-?[\d.]+|-inf)\s*dBm", value)
        if not dbm or "threshold" in key.lower():
            continue
        v = float("-inf") if dbm.group(1) == "-inf" else float(dbm.group(1))
        k = key.lower()
        if "receiver signal" in k or "rcvr signal" in k or "rx power" in k:
            rx.append(v)
        elif "output power" in k or "transmit avg optical power" in k or "tx power" in k:
            tx.append(v)
    alarms = [key for key, value in rows
              if value == "On" and re.search(r"(alarm|warning)$", key, re.I)]
    return {
        "identifier": get.get("Identifier"),
        "vendor": get.get("Vendor name"),
        "part": get.get("Vendor PN"),
        "serial": get.get("Vendor SN"),
        "temperature_c": temp,
        "temperature_range": None,
        "rx_power_dbm": [x for x in rx if x != float("-inf")],
        "rx_power_range": None,
        "tx_power_dbm": [x for x in tx if x != float("-inf")],
        "tx_power_range": None,
        "alarms": alarms,
    }
