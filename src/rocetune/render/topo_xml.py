"""NCCL topology XML (the NCCL_TOPO_FILE format, version 1), for hosts whose PCI tree lies.

In a VM or on a flattened host NCCL sees every GPU and NIC hanging off the CPU (or on synthetic
PCI domains) and concludes that no NIC is close to any GPU: no GPUDirect RDMA, poor rail
pairing. A topology file restores the pairing: NCCL loads it before detection and fuses what it
detects into it, so a GPU and its NIC(s) placed under one PCI bridge are PIX to each other.

What rocetune writes (rocetune.nccl.topo.build_system builds the tree):

    <system version="1">
      <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
        <pci busid="ffff:ff:01.0" class="0x060400" link_speed=... link_width=...>
          <pci busid="0001:00:00.0" class="0x030200" .../>       the GPU (NCCL adds <gpu>)
          <pci busid="0101:00:00.0" class="0x020000" ...>        its NIC
            <nic><net name="mlx5_0"/></nic>                      pins the RDMA device here
          </pci>
        </pci>
      </cpu>
    </system>

Every attribute NCCL's loader requires is there (rocetune.nccl.topo_requirements); everything
else (GPU index, SM, NVLinks, NIC speed, GUID, GDR support, CPU affinity) detection fills, and
values present in the file would win -- so no capability is written (gdr="1" where GPUDirect
does not work would be a lie NCCL believes). Bridges get synthetic bus ids `ffff:ff:NN.0`, which
no real device has. NCCL's own XML reader knows no entities, tabs or XML declaration: none are
written, and values that would need escaping are refused.
"""

from __future__ import annotations

import re
from typing import List

from ..nccl.topo import TopologyError, TopoNode

_VALUE = re.compile(r'^[^"<>&\t\n]{0,254}\Z')


def render_topology(tree: TopoNode, comment: str = "") -> str:
    """The XML text of `tree`; deterministic. TopologyError on a value NCCL could not read."""
    lines = []
    if comment:
        safe = re.sub(r"[^A-Za-z0-9 _.,:;=/+()-]", "?", comment).replace("--", "- ")
        lines.append(f"<!-- {safe} -->")
    lines.extend(_element(tree, 0))
    return "\n".join(lines) + "\n"


def _element(node: TopoNode, depth: int) -> List[str]:
    pad = "  " * depth
    attrs = ""
    for key, value in node.attrs.items():
        if not re.match(r"^[a-z_]{1,64}\Z", key) or not _VALUE.match(value):
            raise TopologyError(f"<{node.tag}> {key}={value!r} cannot be written in NCCL's XML")
        attrs += f' {key}="{value}"'
    if not node.children:
        return [f"{pad}<{node.tag}{attrs}/>"]
    out = [f"{pad}<{node.tag}{attrs}>"]
    for c in node.children:
        out.extend(_element(c, depth + 1))
    out.append(f"{pad}</{node.tag}>")
    return out
