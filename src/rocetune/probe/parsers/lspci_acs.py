"""`lspci -vvv` -> the ACS control bits of each PCI function that has the capability.

    0000:02:08.0 PCI bridge: PLX Technology, Inc. PEX 8725 ...
            Capabilities: [f24 v1] Access Control Services
                    ACSCap: SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
                    ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

A device line starts at column 0 with its address (with or without the PCI domain; `lspci -D`
prints it); a capability line belongs to the device above it. Lines lspci prints without
root ("Capabilities: <access denied>") give nothing for that device.
"""

from __future__ import annotations

import re
from typing import Dict

_DEVICE_RE = re.compile(r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s")
_FLAG_RE = re.compile(r"([A-Za-z]+)([+-])")


def parse_acs(text: str) -> Dict[str, Dict[str, bool]]:
    """{bdf (with domain): {"SrcValid": True, "ReqRedir": False, ...}} from ACSCtl lines."""
    out: Dict[str, Dict[str, bool]] = {}
    device = None
    for raw in (text or "").splitlines():
        m = _DEVICE_RE.match(raw)
        if m:
            bdf = m.group(1).lower()
            device = bdf if bdf.count(":") == 2 else "0000:" + bdf
            continue
        line = raw.strip()
        if device and line.startswith("ACSCtl:"):
            out[device] = {name: sign == "+" for name, sign in _FLAG_RE.findall(line[len("ACSCtl:"):])}
    return out
