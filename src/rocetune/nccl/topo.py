"""NCCL's topology file (NCCL_TOPO_FILE, `<system version="1">`): the layout it describes and
what NCCL's own XML reader accepts (src/graph/xml.cc: no entities, PCI link speeds from a fixed
table). rocetune.render.topo_xml writes the text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional

BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
GPU_CLASS = "0x030200"
NIC_CLASS = "0x020000"
BRIDGE_CLASS = "0x060400"
_NCCL_SPEEDS = {2.5: "2.5 GT/s PCIe", 5.0: "5.0 GT/s PCIe", 8.0: "8.0 GT/s PCIe",
                16.0: "16.0 GT/s PCIe", 32.0: "32.0 GT/s PCIe", 64.0: "64.0 GT/s PCIe"}


@dataclass
class Endpoint:
    bdf: str
    pci_class: str
    link_speed: Optional[str] = None
    link_width: Optional[int] = None
    nets: List[str] = field(default_factory=list)


@dataclass
class Group:
    numa: int
    gpus: List[Endpoint]
    nics: List[Endpoint]
    link_speed: str = "16.0 GT/s PCIe"
    link_width: int = 16


class TopologyError(ValueError):
    pass


def nccl_link_speed(text: Optional[str]) -> Optional[str]:
    """`32.0 GT/s PCIe` / `32 GT/s` -> the spelling NCCL's table knows, or None."""
    if not text:
        return None
    m = re.match(r"^\s*([\d.]+)\s*GT/s", text)
    if not m:
        return None
    try:
        return _NCCL_SPEEDS.get(float(m.group(1)))
    except ValueError:
        return None


MAX_GROUPS = 0xff  # synthetic bridges ffff:ff:01.0 .. ffff:ff:ff.0


def validate(groups: List[Group]) -> None:
    """TopologyError when the layout cannot be written in NCCL's XML."""
    if len(groups) > MAX_GROUPS:
        raise TopologyError(f"more than {MAX_GROUPS} GPU-NIC groups")
    for g in groups:
        for ep in g.gpus + g.nics:
            if not BDF_RE.match(ep.bdf):
                raise TopologyError(f"not a PCI address: {ep.bdf!r}")
            for name in ep.nets:
                if not NAME_RE.match(name):
                    raise TopologyError(f"RDMA device name {name!r} cannot be written in NCCL's XML")
