"""NCCL's topology file (NCCL_TOPO_FILE, `<system version="1">`): the element tree, the layout
rocetune writes into it, and the CPU attributes NCCL's loader requires.

rocetune.nccl.topo_read parses such a file, rocetune.nccl.topo_requirements checks one against
what each NCCL release's loader needs, rocetune.nccl.topo_paths classifies GPU-NIC paths over it
and rocetune.render.topo_xml writes the text.
"""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Tuple

from ..model.record import Record

BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")
NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,200}\Z")
GPU_CLASS = "0x030200"
NIC_CLASS = "0x020000"
BRIDGE_CLASS = "0x060400"
DEFAULT_LINK_SPEED = "16.0 GT/s PCIe"
DEFAULT_LINK_WIDTH = 16
_NCCL_SPEEDS = {2.5: "2.5 GT/s PCIe", 5.0: "5.0 GT/s PCIe", 8.0: "8.0 GT/s PCIe",
                16.0: "16.0 GT/s PCIe", 32.0: "32.0 GT/s PCIe", 64.0: "64.0 GT/s PCIe"}

class TopoNode(Record):
    """One element of the file: its tag, its attributes in writing order, its children."""

    tag: str
    attrs: Dict[str, str]
    children: List[TopoNode]
    _fields = ("tag", "attrs", "children")

    def __init__(self, tag: str, attrs: Optional[Dict[str, str]] = None,
                 children: Optional[List[TopoNode]] = None) -> None:
        self.tag = tag
        self.attrs = {} if attrs is None else attrs
        self.children = [] if children is None else children

    def walk(self, parents: Tuple[TopoNode, ...] = ()) -> Iterator[Tuple[TopoNode, Tuple[TopoNode, ...]]]:
        """Every node with its ancestors (nearest last), this one first."""
        yield self, parents
        for c in self.children:
            yield from c.walk(parents + (self,))

    def find(self, tag: str) -> List[TopoNode]:
        return [c for c in self.children if c.tag == tag]


class Endpoint(Record):
    bdf: str
    pci_class: str
    link_speed: Optional[str]
    link_width: Optional[int]
    nets: List[str]
    _fields = ("bdf", "pci_class", "link_speed", "link_width", "nets")

    def __init__(self, bdf: str, pci_class: str, link_speed: Optional[str] = None,
                 link_width: Optional[int] = None, nets: Optional[List[str]] = None) -> None:
        self.bdf = bdf
        self.pci_class = pci_class
        self.link_speed = link_speed
        self.link_width = link_width
        self.nets = [] if nets is None else nets


class Group(Record):
    numa: int
    gpus: List[Endpoint]
    nics: List[Endpoint]
    link_speed: str
    link_width: int
    _fields = ("numa", "gpus", "nics", "link_speed", "link_width")

    def __init__(self, numa: int, gpus: List[Endpoint], nics: List[Endpoint],
                 link_speed: str = DEFAULT_LINK_SPEED, link_width: int = DEFAULT_LINK_WIDTH) -> None:
        self.numa = numa
        self.gpus = gpus
        self.nics = nics
        self.link_speed = link_speed
        self.link_width = link_width


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


def build_system(groups: List[Group], cpu: Dict[str, str]) -> TopoNode:
    """The `<system>` tree of a generated file: one `<cpu>` per NUMA node carrying `cpu`'s
    attributes, one synthetic bridge per group, its GPUs and NICs below it. Every `<pci>` carries
    class, busid, link_speed and link_width (NCCL 2.30.7 reads them for every `<pci>`)."""
    validate(groups)
    system = TopoNode("system", {"version": "1"})
    by_numa: Dict[int, List[Group]] = {}
    for g in groups:
        by_numa.setdefault(int(g.numa), []).append(g)
    bridge = 0
    for numa in sorted(by_numa):
        node = TopoNode("cpu", {"numaid": str(numa), **cpu})
        system.children.append(node)
        for g in by_numa[numa]:
            bridge += 1
            speed = nccl_link_speed(g.link_speed) or DEFAULT_LINK_SPEED
            pci = TopoNode("pci", {"busid": f"ffff:ff:{bridge:02x}.0", "class": BRIDGE_CLASS,
                                   "link_speed": speed, "link_width": str(int(g.link_width or DEFAULT_LINK_WIDTH))})
            node.children.append(pci)
            for ep in sorted(g.gpus + g.nics, key=lambda e: e.bdf):
                pci.children.append(_endpoint(ep, speed, int(g.link_width or DEFAULT_LINK_WIDTH)))
    return system


def _endpoint(ep: Endpoint, speed: str, width: int) -> TopoNode:
    node = TopoNode("pci", {"busid": ep.bdf, "class": ep.pci_class,
                            "link_speed": nccl_link_speed(ep.link_speed) or speed,
                            "link_width": str(int(ep.link_width or width))})
    if ep.nets:
        nic = TopoNode("nic")
        nic.children = [TopoNode("net", {"name": n}) for n in ep.nets]
        node.children.append(nic)
    return node


def busid_key(text: Optional[str]) -> Optional[Tuple[int, int, int, int]]:
    """`0001:00:00.0`, `00000001:00:00.0` (NVML), upper or lower case -> comparable numbers."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*\Z", text or "")
    if not m:
        return None
    return tuple(int(x, 16) for x in m.groups())  # type: ignore[return-value]
