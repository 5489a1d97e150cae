"""Parse ``ip -j addr show`` (iproute2 JSON) into addresses per interface.

Result::

    {"eth0": [{"family": "inet", "address": "10.0.0.1", "prefixlen": 24},
              {"family": "inet6", "address": "fe80::1", "prefixlen": 64}],
     "lo": [...]}

Every interface in the output is a key, with ``[]`` when it has no IPv4/IPv6 address;
addresses keep iproute2's order. Other families and entries that are not well-formed (address
that is not an IP address, prefix length out of range) are skipped with a warning. Some iproute2
versions emit ``{}`` for filtered entries: those are skipped silently.

ParseError when the text is not JSON or not a JSON list. Pass a list as ``warnings`` to collect
the warnings.
"""

from __future__ import annotations

import ipaddress
from typing import Dict, List, Optional

from ...errors import ParseError
from ...model.jsonread import load_json
from ._common import add_warning, as_text, guarded, require_content, snippet

WHAT = "ip -j addr show"

_MAX_PREFIX = {"inet": 32, "inet6": 128}


@guarded(WHAT)
def parse_ip_addr(text: str, warnings: Optional[List[str]] = None) -> Dict[str, List[dict]]:
    """Parse ``ip -j addr show`` output; see the module docstring."""
    text = as_text(text, WHAT)
    require_content(text, WHAT)
    warns: List[str] = [] if warnings is None else warnings
    try:
        data = load_json(text)
    except ValueError as exc:
        raise ParseError(WHAT, f"not JSON ({exc})", hint="record the output of 'ip -j addr show'") from None
    if not isinstance(data, list):
        raise ParseError(WHAT, f"expected a JSON list of interfaces, got {type(data).__name__}")

    out: Dict[str, List[dict]] = {}
    for entry in data:
        if not isinstance(entry, dict):
            add_warning(warns, f"skipped a non-object entry ({type(entry).__name__})")
            continue
        if not entry:
            continue
        name = entry.get("ifname")
        if not isinstance(name, str) or not name:
            add_warning(warns, "skipped an entry without ifname")
            continue
        addrs = out.setdefault(name, [])
        infos = entry.get("addr_info", [])
        if not isinstance(infos, list):
            add_warning(warns, f"{name}: addr_info is not a list")
            continue
        for info in infos:
            if not isinstance(info, dict) or not info:
                continue
            family = info.get("family")
            if family not in _MAX_PREFIX:
                continue  # e.g. link-layer or MPLS entries
            local, prefixlen = info.get("local"), info.get("prefixlen")
            if not isinstance(local, str) or isinstance(prefixlen, bool) or not isinstance(prefixlen, int):
                add_warning(warns, f"{name}: skipped a malformed {family} entry")
                continue
            try:
                parsed = ipaddress.ip_address(local.split("%", 1)[0])
            except ValueError:
                add_warning(warns, f"{name}: skipped {family} address {snippet(local, 40)}")
                continue
            if (parsed.version == 4) != (family == "inet") or not 0 <= prefixlen <= _MAX_PREFIX[family]:
                add_warning(warns, f"{name}: skipped {family} {local}/{prefixlen}")
                continue
            entry_out = {"family": family, "address": str(parsed), "prefixlen": prefixlen}
            if entry_out not in addrs:
                addrs.append(entry_out)
    return out
