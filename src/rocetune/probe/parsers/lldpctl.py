"""`lldpctl -f json` (and `-f json0`): each interface's LLDP neighbours as lldpd received them.

lldpd's JSON writer (src/client/json_writer.c, lldpd 0.9 to 1.0.x) builds every element as an
array of objects, then, for `-f json` only, simplifies: an array of one member becomes that
member, an object whose only key is `value` becomes the value, and an object with a `name`
string moves under that name. So the shape of `-f json` changes with the number of interfaces
and neighbours (one interface: `"interface": {"eth0": {...}}`; several: a list of such
objects; a chassis with a SysName: `"chassis": {"leaf01": {...}}`, without: `{"id": ...}`),
while `-f json0` keeps every array (`"interface": [{"name": "eth0", ...}]`). Both are read.

What display.c puts there: per neighbour `via`, `rid`, `age`, `chassis` (`id` {type, value},
`name`, `descr`, `mgmt-ip`...), `port` (`id` {type, value}, `descr`, `ttl`, ...).
Each neighbour becomes {"chassis", "chassis_id", "chassis_id_type", "port", "port_id_type",
"port_descr", "mgmt_ip", "via"}: `chassis` is the SysName (or the chassis ID where the switch
sends none), `port` the port ID (a switch port name such as swp1 or Ethernet1/1 where the
switch's port ID subtype is ifname, else a MAC or local ID).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...errors import ParseError
from ...model.jsonread import load_json
from ._common import as_text, guarded

WHAT = "lldpctl -f json output"
MAX_NEIGHBOURS = 4096


@guarded(WHAT)
def parse_lldpctl_json(text: Any) -> Dict[str, List[dict]]:
    """{interface: [neighbour, ...]} in the order lldpctl printed them; ParseError when not lldpctl JSON."""
    text = as_text(text, WHAT)
    try:
        doc = load_json(text)
    except ValueError as exc:
        raise ParseError(WHAT, f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise ParseError(WHAT, "no top-level 'lldp' key")
    out: Dict[str, List[dict]] = {}
    count = 0
    for top in _members(doc["lldp"]):
        if not isinstance(top, dict):
            continue
        for name, body in _interfaces(top.get("interface")):
            out.setdefault(name, []).append(_neighbour(body))
            count += 1
            if count > MAX_NEIGHBOURS:
                raise ParseError(WHAT, f"more than {MAX_NEIGHBOURS} neighbours")
    return out


def _members(x: Any) -> List[Any]:
    if x is None:
        return []
    return list(x) if isinstance(x, list) else [x]


def _interfaces(raw: Any):
    """(interface name, its object) for each neighbour entry, whatever the form."""
    for entry in _members(raw):
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("name"), (str, list)) and ("chassis" in entry or "via" in entry):
            yield _value(entry["name"]) or "", entry  # json0
            continue
        for name, body in entry.items():  # json: {"eth0": {...}} (one or several keys)
            for one in _members(body):
                if isinstance(one, dict):
                    yield str(name), one


def _value(x: Any) -> Optional[str]:
    """A leaf as text: "x", {"value": "x"}, [{"value": "x"}] (json0)."""
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


def _named(raw: Any) -> tuple:
    """(SysName or None, the chassis object) from json's {"leaf01": {...}} or an unnamed one."""
    obj = _obj(raw)
    if "name" in obj or "id" in obj or "descr" in obj:
        return _value(obj.get("name")), obj
    if len(obj) == 1:
        name, body = next(iter(obj.items()))
        return str(name), _obj(body)
    return None, obj


def _neighbour(body: dict) -> dict:
    name, chassis = _named(body.get("chassis"))
    cid = _obj(chassis.get("id"))
    port = _obj(body.get("port"))
    pid = _obj(port.get("id"))
    mgmt = [v for v in (_value(m) for m in _members(chassis.get("mgmt-ip"))) if v]
    chassis_id = _value(cid) if cid else _value(chassis.get("id"))
    port_id = _value(pid) if pid else _value(port.get("id"))
    return {"chassis": name or chassis_id, "chassis_id": chassis_id, "chassis_id_type": _value(cid.get("type")),
            "port": port_id, "port_id_type": _value(pid.get("type")), "port_descr": _value(port.get("descr")),
            "mgmt_ip": mgmt, "via": _value(body.get("via"))}
