"""gpudirect-rdma: can the NICs read and write GPU memory directly, and on which GPU-NIC paths?

A report, not a setting. NCCL enables GPUDirect RDMA (GDR) for a GPU-NIC pair when the NIC
driver can register GPU memory -- a peer-memory module (nv_peer_mem, or nvidia-peermem, which NCCL
only recognises since 2.23.4) or DMA-BUF -- and the pair is close enough: at the default level
only PIX/PXB paths (one or more PCIe switches, no CPU in between). Without GDR every transfer
bounces through host memory; one public report measured 180 -> 10 GB/s two-node all-reduce
after an upgrade swapped the peer-memory module (NCCL issue #1676). A GPU host with compute RDMA
ports and no GDR therefore gets a loud warning; `plan.reports["gpudirect-rdma"]` lists the pairs.
rocetune never raises NCCL_NET_GDR_LEVEL on its own: a PHB/SYS pair is slower with GDR on some
platforms and faster on others, which only a measurement can tell.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..model.plan import Decision
from ..model.vocab import GPU_LOCAL

ID = "gpudirect-rdma"
PEERMEM_SYSFS = (2, 23, 4)


def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    sel = host.selection()
    kernel = features.get("kernel") or {}
    peer = kernel.get("peer_memory") or {}
    modules = kernel.get("modules") or {}
    version = host.nccl_version()
    vtext = host.nccl_version_text()
    dmabuf = kernel.get("dmabuf")  # optional: not every probe knows

    legacy = bool(peer.get("nv_mem") or peer.get("nv_mem_nc"))
    peermem = bool(peer.get("nvidia_peermem"))
    if legacy:
        module, seen = "nv_peer_mem (memory_peers)", True
    elif peermem:
        module = "nvidia-peermem"
        seen = version is None or version >= PEERMEM_SYSFS
    else:
        module, seen = None, False

    pairs: List[Dict[str, Any]] = []
    paths = host.gpu_paths()
    for g in host.gpus:
        idx = int(g["index"])
        for p in sel.chosen:
            path = paths.get(p.device, {}).get(idx)
            if path is None:
                continue
            pairs.append({"gpu": idx, "port": p.name, "path": path,
                          "default_level": path in GPU_LOCAL})
    usable = [x for x in pairs if x["default_level"]]
    available = bool(module and seen) or dmabuf is True
    ctx.report({"available": available, "module": module, "recognised_by_nccl": seen,
                "dmabuf": dmabuf, "nccl": vtext, "pairs": pairs})

    if not host.gpus or not sel.chosen:
        return []
    if modules.get("nvidia_peermem") and not peermem and not legacy:
        ctx.finding("gdr-peermem-unregistered", "warning", "nvidia_peermem",
                    "nvidia_peermem is loaded but not registered (no /sys/module/nvidia_peermem/version "
                    "or memory_peers entry): rebuild the driver after OFED, or use DMA-BUF")
    if peermem and not legacy and version is not None and version < PEERMEM_SYSFS:
        ctx.finding("gdr-not-detected", "warning", "nccl",
                    f"only nvidia-peermem is loaded and NCCL {vtext} looks for nv_peer_mem: NCCL will "
                    "disable GPUDirect RDMA (issue #1676, 180 -> 10 GB/s); use NCCL >= 2.23.4")
    elif not available:
        hint = ("unless DMA-BUF works (open GPU kernel modules, kernel >= 5.12): look for 'GPU Direct "
                "RDMA Enabled' with NCCL_DEBUG=INFO") if dmabuf is None else "DMA-BUF is not available either"
        ctx.finding("gdr-unavailable", "warning", "host",
                    "GPUDIRECT RDMA UNAVAILABLE on a GPU host with compute RDMA ports: no nvidia-peermem "
                    f"or nv_peer_mem ({hint}). Every transfer will bounce through host memory; a public "
                    "report measured 180 -> 10 GB/s all-reduce (NCCL #1676). Load nvidia-peermem and "
                    "persist it in /etc/modules-load.d/")
    if not usable:
        ctx.note("no GPU-NIC pair is PIX/PXB: NCCL will not use GPUDirect RDMA at its default level "
                 "(NCCL_NET_GDR_LEVEL); data is staged through host memory")
    else:
        gpus = sorted({x["gpu"] for x in usable})
        ctx.note(f"GPUDirect RDMA at NCCL's default level on {len(usable)} GPU-NIC pair(s) "
                 f"covering {len(gpus)} of {len(host.gpus)} GPU(s)")
    return []
