"""Parse ``ibstat`` and ``ibstatus`` (infiniband-diags) output.

Both give the same shape, one entry per CA in the order printed::

    [{"name": "mlx5_0", "ca_type": "MT4127" | None, "fw_ver": str | None, "node_guid": str | None,
      "ports": [{"port": 1, "state": "Active", "phys_state": "LinkUp", "rate": "40",
                 "rate_gbps": 40, "link_layer": "Ethernet"}]}]

``ibstat`` prints ``CA 'mlx5_0'`` blocks with ``Port N:`` sub-blocks (``State: Active``,
``Rate: 100``); ``ibstatus`` prints one ``Infiniband device 'mlx5_0' port 1 status:`` block per
port (``state: 4: ACTIVE``, ``rate: 100 Gb/sec (4X EDR)``) and has no CA type, firmware or GUID.
Values are kept as printed except that ibstatus's numeric prefix (``4: ``) is dropped;
``rate_gbps`` is the leading number of the rate. Fields a tool did not print are None.

Lines that fit neither format are reported as warnings. ``No IB devices found``-style messages
with no CA give ``[]`` plus a warning; ParseError when nothing usable is there. Pass a list as
``warnings`` to collect the warnings.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from ...errors import ParseError
from ._common import (add_warning, as_text, clean, first_line, guarded, leading_number, require_content,
                      snippet)

WHAT_IBSTAT = "ibstat"
WHAT_IBSTATUS = "ibstatus"

_CA_RE = re.compile(r"^\s*CA\s+'([^']{1,64})'\s*\Z")
_PORT_RE = re.compile(r"^\s*Port\s+(\d{1,5})\s*:\s*\Z")
_KV_RE = re.compile(r"^\s*([A-Za-z][A-Za-z _]{0,40}?)\s*:\s*(.*?)\s*\Z")
_IBSTATUS_HEAD_RE = re.compile(r"^\s*Infiniband device\s+'([^']{1,64})'\s+port\s+(\d{1,5})\s+status\s*:\s*\Z")
_STATE_NUM_RE = re.compile(r"^\d{1,3}:\s*")
_NO_DEVICES_RE = re.compile(r"\bno (?:ib |infiniband |rdma )?(?:devices|cas?|hcas?)(?: were)? "
                            r"(?:found|present)|\bno (?:ib|infiniband|rdma) devices", re.IGNORECASE)

_IBSTAT_CA_KEYS = {"ca type": "ca_type", "firmware version": "fw_ver", "node guid": "node_guid",
                   "number of ports": "num_ports"}
_IBSTAT_PORT_KEYS = {"state": "state", "physical state": "phys_state", "rate": "rate",
                     "link layer": "link_layer"}
_IBSTATUS_KEYS = {"state": "state", "phys state": "phys_state", "rate": "rate", "link_layer": "link_layer"}


def _new_device(name: str) -> dict:
    return {"name": name, "ca_type": None, "fw_ver": None, "node_guid": None, "ports": []}


def _new_port(number: int) -> dict:
    return {"port": number, "state": None, "phys_state": None, "rate": None, "rate_gbps": None,
            "link_layer": None}


def _finish(devices: List[dict], text: str, what: str, warns: List[str], junk: List[str]) -> List[dict]:
    if devices:
        for d in devices:
            d["ports"].sort(key=lambda p: p["port"])
        return devices
    if any(_NO_DEVICES_RE.search(line) for line in junk):
        add_warning(warns, f"{what}: {first_line(text)[1:-1]}")
        return []
    kind = "CA" if what == WHAT_IBSTAT else "device"
    raise ParseError(what, f"no {kind} found; first line: {first_line(text)}")


@guarded(WHAT_IBSTAT)
def parse_ibstat(text: str, warnings: Optional[List[str]] = None) -> List[dict]:
    """Parse ``ibstat`` output; see the module docstring."""
    text = clean(as_text(text, WHAT_IBSTAT))
    require_content(text, WHAT_IBSTAT)
    warns: List[str] = [] if warnings is None else warnings
    devices: List[dict] = []
    declared: Dict[str, int] = {}
    dev: Optional[dict] = None
    port: Optional[dict] = None
    junk: List[str] = []
    skipping = False  # inside a repeated CA block
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _CA_RE.match(line)
        if m:
            name = m.group(1)
            if any(d["name"] == name for d in devices):
                add_warning(warns, f"CA {name} listed twice; kept the first")
                dev, port, skipping = None, None, True
                continue
            dev, port, skipping = _new_device(name), None, False
            devices.append(dev)
            continue
        if skipping:
            continue
        m = _PORT_RE.match(line)
        if m and dev is not None:
            number = int(m.group(1))
            if any(p["port"] == number for p in dev["ports"]):
                add_warning(warns, f"{dev['name']}: port {number} listed twice; kept the first")
                port = None
                continue  # its lines are then ignored: port fields need a port, CA fields need port None
            port = _new_port(number)
            dev["ports"].append(port)
            continue
        m = _KV_RE.match(line)
        if m and dev is not None:
            key, value = m.group(1).strip().lower(), m.group(2)
            if port is not None and key in _IBSTAT_PORT_KEYS:
                port[_IBSTAT_PORT_KEYS[key]] = value or None
                if key == "rate":
                    port["rate_gbps"] = leading_number(value)
            elif port is None and key in _IBSTAT_CA_KEYS:
                if key == "number of ports":
                    if value.isdigit() and len(value) < 6:
                        declared[dev["name"]] = int(value)
                else:
                    dev[_IBSTAT_CA_KEYS[key]] = value or None
            continue  # other fields (LIDs, GUIDs, capability mask) are not needed
        junk.append(line)
        add_warning(warns, f"ignored line {snippet(line)}")
    for d in devices:
        want = declared.get(d["name"])
        if want is not None and want != len(d["ports"]):
            add_warning(warns, f"{d['name']}: {want} port(s) declared, {len(d['ports'])} listed (cut off?)")
    return _finish(devices, text, WHAT_IBSTAT, warns, junk)


@guarded(WHAT_IBSTATUS)
def parse_ibstatus(text: str, warnings: Optional[List[str]] = None) -> List[dict]:
    """Parse ``ibstatus`` output into the same shape as :func:`parse_ibstat`."""
    text = clean(as_text(text, WHAT_IBSTATUS))
    require_content(text, WHAT_IBSTATUS)
    warns: List[str] = [] if warnings is None else warnings
    devices: List[dict] = []
    by_name: Dict[str, dict] = {}
    port: Optional[dict] = None
    junk: List[str] = []
    skipping = False  # inside a repeated port block
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _IBSTATUS_HEAD_RE.match(line)
        if m:
            name, number = m.group(1), int(m.group(2))
            dev = by_name.get(name)
            if dev is None:
                dev = by_name[name] = _new_device(name)
                devices.append(dev)
            if any(p["port"] == number for p in dev["ports"]):
                add_warning(warns, f"{name}: port {number} listed twice; kept the first")
                port, skipping = None, True
                continue
            port, skipping = _new_port(number), False
            dev["ports"].append(port)
            continue
        if skipping:
            continue
        m = _KV_RE.match(line)
        if m and port is not None:
            key, value = m.group(1).strip().lower(), m.group(2)
            if key in _IBSTATUS_KEYS:
                if key in ("state", "phys state"):
                    value = _STATE_NUM_RE.sub("", value)
                port[_IBSTATUS_KEYS[key]] = value or None
                if key == "rate":
                    port["rate_gbps"] = leading_number(value)
            continue  # default gid, base lid, sm lid
        junk.append(line)
        add_warning(warns, f"ignored line {snippet(line)}")
    return _finish(devices, text, WHAT_IBSTATUS, warns, junk)
