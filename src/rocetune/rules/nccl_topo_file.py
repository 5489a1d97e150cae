"""nccl-topo-file: on a virtualised or flattened host, give NCCL the GPU-NIC layout it cannot see.

When the Features say the PCI tree is flattened (synthetic PCI domains, every GPU-NIC path SYS on
one NUMA node, GPUs on a hypervisor's root bus), NCCL would treat every NIC as remote from every
GPU. Where /var/run/nvidia-topologyd/virtualTopology.xml exists, NCCL loads it itself while
NCCL_TOPO_FILE is unset (2.30.7 src/graph/topo.cc:1774-1781, already in 2.10.3): nothing is set, on
any host. Otherwise rocetune points NCCL_TOPO_FILE at a topology file: the vendor's when the node has one
(Azure HPC images ship /opt/microsoft/<shape>/topo.xml), else one it writes next to the env file,
grouping each GPU with its compute NIC(s) under one synthetic PCI bridge on its NUMA node:

* from locality when the Features have it (ports PIX/PXB to the GPU; GPUs sharing a NIC share a
  group);
* otherwise by PCI order when the counts divide evenly (GPU k with NIC k, as cloud VMs number
  them) -- an assumption, so it is warned about and should be checked against the vendor's file;
* otherwise no file: a wrong pairing is worse than none.

The written file carries every attribute NCCL's loader requires (rocetune.nccl.topo_requirements,
NCCL 2.18.1 to 2.30.7): each `<cpu>` its numaid and the host's CPU identity (arch; on x86 vendor,
familyid, modelid as NCCL computes them from CPUID), each `<pci>` class, busid, link_speed and
link_width. NCCL fills a `<cpu>`'s identity only for a CPU it reaches from a device it detects
itself (2.28.9 src/graph/xml.cc ncclTopoGetXmlFromCpu); any other `<cpu>` without it stops
ncclTopoAddCpu (2.28.9 src/graph/topo.cc:525-542) -- a container given some of the GPUs, a file
made for another VM size. A host whose CPU identity is unknown gets no file and a warning.

An NCCL_TOPO_FILE the owner declared is carried by declared-settings. Only an existing file is
named: NCCL ignores a missing one with an INFO line (2.30.7 src/graph/topo.cc:1774-1781,
src/graph/xml.cc:411-416). The choice itself lives in rocetune.analysis.topofile, which
gpudirect-rdma and `rocetune explain`/`topo` read too.
"""

from __future__ import annotations

import os
from typing import List

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from .base import DEFAULT_TOPO_PATH, TOPO_FILE_NAME

ID = "nccl-topo-file"


declare(
    id="topo-file-uncertain", kind="rule", severity="warning",
    by=("nccl-topo-file",),
    title="The NCCL topology file could not be planned cleanly",
    checks="On a host whose PCI tree is flattened (a VM): whether one topology file can be "
           "chosen or generated that NCCL loads and that pairs each GPU with its NIC.",
    reads="The topology files found or declared (the Features `declared.topology_files`), the "
          "PCI addresses of GPUs and NICs.",
    why="Without the file NCCL sees every GPU-NIC pair as far apart and does not use GPUDirect "
        "RDMA at its default level.",
    fix="install the cloud image's topology file, or set NCCL_TOPO_FILE to the one of this VM's shape",
    source="NVIDIA/nccl v2.28.9-1 src/graph/xml.cc (NCCL_TOPO_FILE)",
)


@emits("topo-file-uncertain")
def rule(features: dict, ctx) -> List[Decision]:
    outcome = ctx.host.topology()
    for w in outcome.warnings:
        ctx.finding("topo-file-uncertain", "warning", "NCCL_TOPO_FILE", w,
                    virtualization=(features.get("host") or {}).get("virtualization"),
                    topology_files=[t.get("path")
                                    for t in (features.get("declared") or {}).get("topology_files") or []])
    for n in outcome.notes:
        ctx.note(n)
    plan = outcome.plan
    if plan is None or plan.kind == "declared":
        return []  # declared-settings carries the owner's NCCL_TOPO_FILE
    if plan.kind == "nccl-default":
        ctx.note(f"NCCL loads {plan.path} itself while NCCL_TOPO_FILE is unset (2.30.7 src/graph/topo.cc:"
                 "1774-1781, already in 2.10.3): NCCL_TOPO_FILE is left unset so that file keeps deciding")
        return []
    virt = (features.get("host") or {}).get("virtualization") or {}
    reasons = "; ".join(virt.get("reasons") or []) or "flattened PCI topology"
    if plan.kind == "vendor":
        return [ctx.decision("NCCL_TOPO_FILE", plan.path,
                             f"PCI topology is flattened ({reasons}) and the platform vendor ships "
                             f"{plan.path}: NCCL reads the vendor's layout instead of a generated one",
                             vendor=plan.vendor, reasons=virt.get("reasons") or [])]
    path = ctx.topo_path or DEFAULT_TOPO_PATH
    ctx.add_file(os.path.basename(path) or TOPO_FILE_NAME, "nccl-topo-xml",
                 {"tree": plan.tree, "comment": plan.comment}, "NCCL_TOPO_FILE")
    return [ctx.decision(
        "NCCL_TOPO_FILE", path,
        f"PCI topology is flattened ({reasons}): the file groups each GPU with its NIC(s) ({plan.how})",
        groups=plan.groups, reasons=virt.get("reasons") or [],
        cpu={k: v for k, v in plan.tree.children[0].attrs.items() if k != "numaid"} if plan.tree.children else {})]
