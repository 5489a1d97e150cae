"""nccl-topo-file: on a virtualised or flattened host, give NCCL the GPU-NIC layout it cannot see.

When the Features say the PCI tree is flattened (synthetic PCI domains, every GPU-NIC path SYS on
one NUMA node, GPUs on a hypervisor's root bus), NCCL would treat every NIC as remote from every
GPU. rocetune then plans an NCCL topology file next to the env file (its layout here; the XML
text is rendered by rocetune.render.topo_xml) and points NCCL_TOPO_FILE at it. Each GPU is grouped with its compute NIC(s) under one synthetic PCI
bridge on its NUMA node:

* from locality when the Features have it (ports PIX/PXB to the GPU; GPUs sharing a NIC share a
  group);
* otherwise by PCI order when the counts divide evenly (GPU k with NIC k, as cloud VMs number
  them) -- an assumption, so it is warned about and should be checked against the vendor's file;
* otherwise no file: a wrong pairing is worse than none.

Only the layout is written; NCCL detects everything else (see topo_xml).

A vendor's topology file wins over a generated one (the probe's `declared` source): an
NCCL_TOPO_FILE the owner declared is carried by declared-settings, and a vendor file present on
the node without a declaration (Azure HPC images ship /opt/microsoft/<shape>/topo.xml) is pointed
at as it is. Only an existing file is named: NCCL ignores a missing one with an INFO line
(2.30.7 src/graph/topo.cc:1774-1781, src/graph/xml.cc:411-416).
"""

from __future__ import annotations

import os
from typing import Dict, List

from .. import __version__
from ..model.plan import Decision
from ..model.vocab import GPU_LOCAL, natural_key
from ..nccl.topo import (GPU_CLASS, NIC_CLASS, Endpoint, Group, TopologyError, nccl_link_speed,
                         validate)
from .base import DEFAULT_TOPO_PATH, TOPO_FILE_NAME

ID = "nccl-topo-file"


def rule(features: dict, ctx) -> List[Decision]:
    virt = (features.get("host") or {}).get("virtualization") or {}
    if not virt.get("flattened"):
        return []
    host = ctx.host
    reasons = "; ".join(virt.get("reasons") or []) or "flattened PCI topology"
    topo = (features.get("declared") or {}).get("topology_files") or []
    if any(t.get("declared_by") for t in topo):
        return []  # declared-settings carries the owner's NCCL_TOPO_FILE
    vendor = [t for t in topo if t.get("vendor") and t.get("exists")]
    if len(vendor) == 1:
        t = vendor[0]
        return [ctx.decision("NCCL_TOPO_FILE", t["path"],
                             f"PCI topology is flattened ({reasons}) and the platform vendor ships "
                             f"{t['path']}: NCCL reads the vendor's layout instead of a generated one",
                             vendor=t["vendor"], reasons=virt.get("reasons") or [])]
    if len(vendor) > 1:
        ctx.warn("several vendor topology files (" + ", ".join(t["path"] for t in vendor) + "): none "
                 "chosen and none generated; set NCCL_TOPO_FILE to the one of this VM's shape")
        return []
    gpus = [g for g in host.gpus if g.get("bdf")]
    if len(gpus) < len(host.gpus):
        ctx.warn("some GPUs have no PCI address in the Features: no topology file written")
        return []
    sel = host.selection()
    devices: Dict[str, str] = {}
    for p in sel.chosen:
        if p.pci:
            devices.setdefault(p.device, p.pci)
    if not gpus or not devices:
        ctx.note(f"host looks flattened ({reasons}) but has no GPU/compute-NIC pairs to describe")
        return []

    groups, how = _locality_groups(host, gpus, devices)
    if groups is None:
        groups, how = _order_groups(gpus, devices)
        if groups is None:
            ctx.warn(f"host looks flattened ({reasons}) and the GPU-NIC pairing cannot be derived "
                     f"({len(gpus)} GPUs, {len(devices)} NICs, no locality): no topology file; "
                     "use the platform vendor's NCCL topology file")
            return []
        ctx.warn("GPU-NIC pairing in the topology file follows PCI order (GPU k with NIC k), "
                 "which cloud VMs usually mirror but nothing here proves: compare with the vendor's "
                 "topology file")
    pci = host.pci
    xml_groups = []
    for numa, g_bdfs, nic_devs in groups:
        eps_g = [_endpoint(pci, b, GPU_CLASS, []) for b in g_bdfs]
        nics_by_bdf: Dict[str, List[str]] = {}
        for d in nic_devs:
            nics_by_bdf.setdefault(devices[d], []).append(d)
        eps_n = [_endpoint(pci, b, NIC_CLASS, sorted(names, key=natural_key))
                 for b, names in sorted(nics_by_bdf.items())]
        speed, width = _bridge_link(pci, g_bdfs + list(nics_by_bdf))
        xml_groups.append(Group(numa, eps_g, eps_n, speed, width))
    comment = f"rocetune {__version__}: GPU-NIC layout of a flattened host ({how})"
    try:
        validate(xml_groups)
    except TopologyError as exc:
        ctx.warn(f"cannot write the topology file: {exc}")
        return []
    path = ctx.topo_path or DEFAULT_TOPO_PATH
    ctx.add_file(os.path.basename(path) or TOPO_FILE_NAME, "nccl-topo-xml",
                 {"groups": xml_groups, "comment": comment}, "NCCL_TOPO_FILE")
    return [ctx.decision(
        "NCCL_TOPO_FILE", path,
        f"PCI topology is flattened ({reasons}): the file groups each GPU with its NIC(s) ({how})",
        groups=[{"numa": n, "gpus": gb, "nics": sorted(nd, key=natural_key)} for n, gb, nd in groups],
        reasons=virt.get("reasons") or [])]


def _numa_of(gpu: dict, pci: dict) -> int:
    if gpu.get("numa_node") is not None:
        return int(gpu["numa_node"])
    dev = pci.get(gpu.get("bdf") or "") or {}
    return int(dev["numa_node"]) if dev.get("numa_node") is not None else 0


def _locality_groups(host, gpus, devices):
    paths = host.gpu_paths()
    edges = {}
    for g in gpus:
        idx = int(g["index"])
        local = [d for d in devices if paths.get(d, {}).get(idx) in GPU_LOCAL]
        if not local:
            return None, ""
        edges[g["bdf"]] = local
    # union GPUs that share a NIC
    parent = {b: b for b in edges}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: Dict[str, str] = {}
    for b, devs in sorted(edges.items()):
        for d in devs:
            if d in owner:
                parent[find(b)] = find(owner[d])
            else:
                owner[d] = b
    clusters: Dict[str, List[str]] = {}
    for b in sorted(edges):
        clusters.setdefault(find(b), []).append(b)
    numa = {g["bdf"]: _numa_of(g, host.pci) for g in gpus}
    out = []
    for members in sorted(clusters.values()):
        nics = sorted({d for b in members for d in edges[b]}, key=natural_key)
        out.append((numa[members[0]], members, nics))
    return out, "from PCI locality"


def _order_groups(gpus, devices):
    g_sorted = sorted(gpus, key=lambda g: g["bdf"])
    d_sorted = sorted(devices, key=lambda d: (devices[d], natural_key(d)))
    ng, nd = len(g_sorted), len(d_sorted)
    if nd >= ng and nd % ng == 0:
        per = nd // ng
        pairs = [([g_sorted[i]], d_sorted[i * per:(i + 1) * per]) for i in range(ng)]
    elif ng > nd and ng % nd == 0:
        per = ng // nd
        pairs = [(g_sorted[i * per:(i + 1) * per], [d_sorted[i]]) for i in range(nd)]
    else:
        return None, ""
    out = []
    for gs, ds in pairs:
        numa = gs[0].get("numa_node")
        out.append((int(numa) if numa is not None else 0, [g["bdf"] for g in gs], ds))
    return out, "by PCI order"


def _endpoint(pci: dict, bdf: str, cls: str, nets: List[str]) -> Endpoint:
    dev = pci.get(bdf) or {}
    link = dev.get("link") or {}
    real = str(dev.get("class") or "")
    if real.startswith(cls[:4]) and len(real) == 8:
        cls = real  # e.g. 0x020700 for an InfiniBand function
    return Endpoint(bdf, cls, link.get("speed") or link.get("max_speed"),
                    link.get("width") or link.get("max_width"), nets)


def _bridge_link(pci: dict, bdfs: List[str]):
    speeds, widths = [], []
    for b in bdfs:
        link = (pci.get(b) or {}).get("link") or {}
        s = nccl_link_speed(link.get("max_speed") or link.get("speed"))
        if s:
            speeds.append(s)
        w = link.get("max_width") or link.get("width")
        if w:
            widths.append(int(w))
    if not speeds:
        for d in pci.values():
            s = nccl_link_speed(((d.get("link") or {}).get("max_speed")))
            if s and d.get("kind") in ("gpu", "nic"):
                speeds.append(s)
    speed = max(speeds, key=lambda s: float(s.split()[0])) if speeds else "16.0 GT/s PCIe"
    width = max(widths) if widths else 16
    return speed, width
