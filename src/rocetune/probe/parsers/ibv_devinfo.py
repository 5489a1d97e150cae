"""Parse ``ibv_devinfo`` output (plain, ``-v``, ``-d``/``-i``, and ``-l``).

Result of :func:`parse_ibv_devinfo` is ``(devices, warnings)``::

    [{"name": "mlx5_0", "transport": "InfiniBand (0)", "fw_ver": "28.39.1002",
      "node_guid": "a088:c203:005f:c296", "board_id": "MT_0000000838" | None,
      "ports": [{"port": 1, "state": "PORT_ACTIVE", "phys_state": "LINK_UP" | None,
                 "active_mtu": 4096, "max_mtu": 4096, "link_layer": "Ethernet",
                 "gids": [{"index": 3, "gid": "0000:...:ffff:0a00:0001", "type": "RoCE v2" | None}]}]}]

Each device starts at ``hca_id:``, each port at ``port:``; every other line is ``key: value``
padded with tabs (or spaces, in pasted copies). The state loses its ``(4)`` suffix, MTUs become
numbers; ``phys_state`` and ``gids`` are only printed with ``-v`` (None / [] otherwise). Old
libibverbs wrote ``IB`` for the InfiniBand link layer; it is reported as ``InfiniBand``.
The many other ``-v`` lines (capability flags, limits) are skipped.

``Failed to get IB devices list: ...`` and ``No IB devices found`` give ``([], [message])``;
other ``Failed to ...`` lines become warnings next to whatever devices were read. ParseError when
the text holds neither a device nor one of those messages.
"""

from __future__ import annotations

import re
from typing import List, Optional, Set, Tuple

from ...errors import ParseError
from ._common import add_warning, as_text, clean, first_line, guarded, require_content, snippet

WHAT = "ibv_devinfo"

_HCA_RE = re.compile(r"^\s*hca_id:\s*(\S{1,64})\s*\Z")
_PORT_RE = re.compile(r"^\s*port:\s*(\d{1,5})\s*\Z")
_GID_RE = re.compile(r"^\s*GID\[\s*(\d{1,6})\]:\s*([0-9A-Fa-f:]{2,64})\s*(?:,\s*(.*?))?\s*\Z")
_KV_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]{0,40}):\s*(.*?)\s*\Z")
_LIST_HEAD_RE = re.compile(r"^\s*(\d{1,5})\s+HCAs?\s+found:\s*\Z")
_LIST_NAME_RE = re.compile(r"^\s+(\S{1,64})\s*\Z")
_ERROR_RE = re.compile(r"^\s*(?:Failed to|Couldn't|Could not|Unable to|No IB devices found|"
                       r"IB device \S+ wasn't found|ibv_devinfo: )", re.IGNORECASE)
_SUFFIX_RE = re.compile(r"\s*\(\d{1,4}\)\s*\Z")
_INT_RE = re.compile(r"^(\d{1,7})\b")

_DEVICE_KEYS = ("transport", "fw_ver", "node_guid", "board_id")
_OWN_LINE_KEYS = ("hca_id", "port")  # "key: value" lines that _HCA_RE and _PORT_RE read


def _new_device(name: str) -> dict:
    return {"name": name, "transport": None, "fw_ver": None, "node_guid": None, "board_id": None,
            "ports": []}


def _new_port(number: int) -> dict:
    return {"port": number, "state": None, "phys_state": None, "active_mtu": None, "max_mtu": None,
            "link_layer": None, "gids": []}


def _mtu(value: str) -> Optional[int]:
    m = _INT_RE.match(value)
    return int(m.group(1)) if m else None


@guarded(WHAT)
def parse_ibv_devinfo(text: str) -> Tuple[List[dict], List[str]]:
    """Parse ``ibv_devinfo`` output; see the module docstring."""
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    warnings: List[str] = []
    devices: List[dict] = []
    names: Set[str] = set()  # of devices: a 522-device host would scan the list per line
    dev: Optional[dict] = None
    port: Optional[dict] = None
    declared = {}
    errors: List[str] = []
    listing = False
    skipping = False  # inside a repeated device block
    saw_port_key = False

    for line in text.splitlines():
        kv = _KV_RE.match(line)
        # A device's "key: value" line (nearly all of a 522-device output) is none of the other
        # kinds unless its key is hca_id or port, or it is ibv_devinfo's own message: only those,
        # and every line that is not "key: value", go through each check in turn.
        if kv is None or dev is None or listing or kv.group(1) in _OWN_LINE_KEYS \
                or kv.group(1).lower() == "ibv_devinfo":
            if not line.strip():
                continue
            if _ERROR_RE.match(line):
                errors.append(line.strip())
                add_warning(warnings, line.strip())
                continue
            m = _HCA_RE.match(line)
            if m:
                listing = False
                name = m.group(1)
                if name in names:
                    add_warning(warnings, f"{name} listed twice; kept the first")
                    dev, port, skipping = None, None, True
                    continue
                dev, port, skipping = _new_device(name), None, False
                devices.append(dev)
                names.add(name)
                continue
            m = _LIST_HEAD_RE.match(line)
            if m:
                listing, dev, port, skipping = True, None, None, False
                add_warning(warnings, "device list (-l) only: no port details")
                continue
            if listing:
                m = _LIST_NAME_RE.match(line)
                if m:
                    if m.group(1) not in names:
                        devices.append(_new_device(m.group(1)))
                        names.add(m.group(1))
                    continue
                listing = False
            if dev is None:
                if not skipping:
                    add_warning(warnings, f"ignored line {snippet(line)}")
                continue
            m = _PORT_RE.match(line)
            if m:
                number = int(m.group(1))
                if any(p["port"] == number for p in dev["ports"]):
                    add_warning(warnings, f"{dev['name']}: port {number} listed twice; kept the first")
                    port = None
                    continue
                port = _new_port(number)
                dev["ports"].append(port)
                continue
            if port is not None:
                m = _GID_RE.match(line)
                if m:
                    port["gids"].append({"index": int(m.group(1)), "gid": m.group(2).lower(),
                                         "type": m.group(3) or None})
                    continue
            if not kv:
                continue  # -v flag lists, "tag matching not supported", ...
        key, value = kv.group(1), kv.group(2)
        if port is None:
            if key in _DEVICE_KEYS:
                dev[key] = value or None
            elif key == "phys_port_cnt" and _INT_RE.match(value):
                declared[dev["name"]] = int(_INT_RE.match(value).group(1))
            continue
        saw_port_key = True
        if key in ("state", "phys_state"):
            port[key] = _SUFFIX_RE.sub("", value) or None
        elif key in ("active_mtu", "max_mtu"):
            port[key] = _mtu(value)
            if port[key] is None:
                add_warning(warnings, f"{dev['name']} port {port['port']}: unreadable {key} "
                                      f"{snippet(value, 20)}")
        elif key == "link_layer":
            port["link_layer"] = "InfiniBand" if value == "IB" else (value or None)

    if not devices:
        if errors:
            return [], warnings
        raise ParseError(WHAT, f"no hca_id found; first line: {first_line(text)}")
    for d in devices:
        d["ports"].sort(key=lambda p: p["port"])
        want = declared.get(d["name"])
        if want is not None and d["ports"] and want != len(d["ports"]):
            add_warning(warnings, f"{d['name']}: phys_port_cnt {want}, {len(d['ports'])} port(s) listed "
                                  "(-i used, or output cut off)")
        if want and not d["ports"]:
            add_warning(warnings, f"{d['name']}: no port listed (output cut off?)")
        for p in d["ports"]:
            if p["state"] is None:
                add_warning(warnings, f"{d['name']} port {p['port']}: no state (output cut off?)")
            elif p["link_layer"] is None and saw_port_key:
                add_warning(warnings, f"{d['name']} port {p['port']}: no link_layer "
                                      "(old libibverbs, or output cut off)")
    return devices, warnings
