"""NCCL topology XML (the NCCL_TOPO_FILE format, version 1), for hosts whose PCI tree lies.

In a VM or on a flattened host NCCL sees every GPU and NIC hanging off the CPU (or on synthetic
PCI domains) and concludes that no NIC is close to any GPU: no GPUDirect RDMA, poor rail
pairing. A topology file restores the pairing: NCCL loads it before detection and fuses what it
detects into it, so a GPU and its NIC(s) placed under one PCI bridge are PIX to each other.

What this writes, and why so little:

    <system version="1">
      <cpu numaid="0">                                  NUMA node of the group
        <pci busid="ffff:ff:01.0" class="0x060400" link_speed=... link_width=...>
          <pci busid="0001:00:00.0" class="0x030200" .../>       the GPU (NCCL adds <gpu>)
          <pci busid="0101:00:00.0" class="0x020000" ...>        its NIC
            <nic><net name="mlx5_0"/></nic>                      pins the RDMA device here
          </pci>
        </pci>
      </cpu>
    </system>

Detection fills every attribute the file leaves out (GPU index, SM, NVLinks, NIC speed, GUID,
GDR support, CPU affinity and model), and values present in the file win -- so the file states
only the layout, never a capability (writing gdr="1" where GPUDirect does not work would be a
lie NCCL believes). The bridges get synthetic bus ids `ffff:ff:NN.0`, which no real device has.
NCCL's own XML reader knows no entities: names with quotes, '<', '>' or '&' are refused.
"""

from __future__ import annotations

import re
from typing import List

from ..nccl.topo import BRIDGE_CLASS, Endpoint, Group, nccl_link_speed, validate

def render_topology(groups: List[Group], comment: str = "") -> str:
    """The XML text; deterministic for the same groups. TopologyError on unusable names."""
    validate(groups)
    lines = []
    if comment:
        safe = re.sub(r"[^A-Za-z0-9 _.,:;=/+()-]", "?", comment).replace("--", "- ")
        lines.append(f"<!-- {safe} -->")
    lines.append('<system version="1">')
    by_numa = {}
    for g in groups:
        by_numa.setdefault(g.numa, []).append(g)
    bridge = 0
    for numa in sorted(by_numa):
        lines.append(f'  <cpu numaid="{int(numa)}">')
        for g in by_numa[numa]:
            bridge += 1
            lines.append(f'    <pci busid="ffff:ff:{bridge:02x}.0" class="{BRIDGE_CLASS}" '
                         f'link_speed="{g.link_speed}" link_width="{int(g.link_width)}">')
            for ep in sorted(g.gpus + g.nics, key=lambda e: e.bdf):
                lines.extend(_endpoint(ep))
            lines.append("    </pci>")
        lines.append("  </cpu>")
    lines.append("</system>")
    return "\n".join(lines) + "\n"


def _endpoint(ep: Endpoint) -> List[str]:
    attrs = f'busid="{ep.bdf}" class="{ep.pci_class}"'
    speed = nccl_link_speed(ep.link_speed)
    if speed:
        attrs += f' link_speed="{speed}"'
    if ep.link_width:
        attrs += f' link_width="{int(ep.link_width)}"'
    if not ep.nets:
        return [f"      <pci {attrs}/>"]
    out = [f"      <pci {attrs}>", "        <nic>"]
    for name in ep.nets:
        out.append(f'          <net name="{name}"/>')
    out += ["        </nic>", "      </pci>"]
    return out
