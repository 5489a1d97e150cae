"""`lldpctl -f json0`: each interface's LLDP neighbours as lldpd received them.

lldpd's JSON writer (src/client/json_writer.c, lldpd 0.9 to 1.0.x) builds every element as an
array of objects. `-f json` then simplifies it -- an array of one member becomes that member, an
object whose only key is `value` becomes the value, and an object with a `name` string moves
under that name -- so in `-f json` a neighbour's system name is an object key, and lldpd writes
keys without escaping them (json_element_dump's `"\"%s\": "`, up to 1.0.21; 1.0.22 escapes them,
commit 883afdb6). A neighbour on any port, the management port included, can then write
structure: a SysName of `leaf0": {...}}}, "eth9": {"via": "LLDP", "chassis": {"leaf1` gives the
host a forged neighbour on another port (recorded: tests/fixtures/outputs/lldp/SOURCES.md).
`-f json0` keeps every array and never moves a value into a key, so only the `-f json0` form is
read; `-f json`'s (`"lldp": {...}`) is refused, naming json0.

Up to 1.0.21 json_string_dump writes byte 0x1F raw inside a string (`c < 0x1f`; 1.0.22 fixed it,
commit 6f55f7af): the document is read with control characters allowed inside strings, so one
such byte in a neighbour's name does not make the whole reading unusable.

What display.c puts there: per neighbour `via`, `rid`, `age`, `chassis` (`id` {type, value},
`name`, `descr`, `mgmt-ip`...), `port` (`id` {type, value}, `descr`, `ttl`, ...).
Each neighbour becomes {"chassis", "chassis_id", "chassis_id_type", "port", "port_id_type",
"port_descr", "mgmt_ip", "via"}: `chassis` is the SysName (or the chassis ID where the switch
sends none), `port` the port ID (a switch port name such as swp1 or Ethernet1/1 where the
switch's port ID subtype is ifname, else a MAC or local ID). Every one of them is the
neighbour's text: shown, never interpreted.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...errors import ParseError
from ...model.jsonread import load_json
from ._common import as_text, guarded

WHAT = "lldpctl -f json0 output"
MAX_NEIGHBOURS = 4096


@guarded(WHAT)
def parse_lldpctl_json(text: Any) -> Dict[str, List[dict]]:
    """{interface: [neighbour, ...]} in the order lldpctl printed them; ParseError when not
    `lldpctl -f json0` output."""
    text = as_text(text, WHAT)
    try:
        doc = load_json(text, strict=False)
    except ValueError as exc:
        raise ParseError(WHAT, f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise ParseError(WHAT, "no top-level 'lldp' key")
    if not isinstance(doc["lldp"], list):
        raise ParseError(WHAT, "the `lldpctl -f json` form, whose keys are the neighbours' names (unescaped "
                               "before lldpd 1.0.22): read `lldpctl -f json0`")
    out: Dict[str, List[dict]] = {}
    count = 0
    for top in doc["lldp"]:
        if not isinstance(top, dict):
            continue
        for entry in _members(top.get("interface")):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            out.setdefault(entry["name"], []).append(_neighbour(entry))
            count += 1
            if count > MAX_NEIGHBOURS:
                raise ParseError(WHAT, f"more than {MAX_NEIGHBOURS} neighbours")
    return out


def _members(x: Any) -> List[Any]:
    return x if isinstance(x, list) else []


def _value(x: Any) -> Optional[str]:
    """A leaf as text: json0's [{"value": "x"}] (or a plain "x": `name`, `via`, `rid`)."""
    while isinstance(x, list):
        if not x:
            return None
        x = x[0]
    if isinstance(x, dict):
        x = x.get("value")
    if x is None or isinstance(x, (dict, list)):
        return None
    if isinstance(x, bool):
        return "on" if x else "off"
    return str(x)


def _obj(x: Any) -> dict:
    while isinstance(x, list):
        if not x:
            return {}
        x = x[0]
    return x if isinstance(x, dict) else {}


def _neighbour(body: dict) -> dict:
    chassis = _obj(body.get("chassis"))
    cid = _obj(chassis.get("id"))
    port = _obj(body.get("port"))
    pid = _obj(port.get("id"))
    mgmt = [v for v in (_value(m) for m in _members(chassis.get("mgmt-ip"))) if v]
    name = _value(chassis.get("name"))
    chassis_id = _value(cid)
    return {"chassis": name or chassis_id, "chassis_id": chassis_id, "chassis_id_type": _value(cid.get("type")),
            "port": _value(pid), "port_id_type": _value(pid.get("type")), "port_descr": _value(port.get("descr")),
            "mgmt_ip": mgmt, "via": _value(body.get("via"))}
