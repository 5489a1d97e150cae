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
the warnings. The reading itself is core.ip_addr_json (copied to plugins/module_utils/rocetune_ip_addr.py),
the one the collection's modules use too.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ...core.ip_addr_json import parse_entries  # the one reader, shared with the collection's modules
from ...errors import ParseError
from ...model.jsonread import load_json
from ._common import add_warning, as_text, guarded, require_content

WHAT = "ip -j addr show"


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

    try:
        links = parse_entries(data, lambda message: add_warning(warns, message))
    except ValueError as exc:
        raise ParseError(WHAT, str(exc)) from None
    return {name: [{"family": a["family"], "address": a["address"], "prefixlen": a["prefixlen"]}
                   for a in link["addresses"]] for name, link in links.items()}
