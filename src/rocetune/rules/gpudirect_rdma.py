"""gpudirect-rdma: can the NICs read and write GPU memory directly, and on which GPU-NIC paths?

A report, not a setting. NCCL turns GPUDirect RDMA (GDR) on for a NIC when the NIC can register
GPU memory by either route, and then uses it for a GPU-NIC pair close enough:

* peer memory: ncclIbGdrSupport() checks with access(F_OK), by release (nccl/defaults.py
  PEER_MEMORY_CHECKS): `/sys/kernel/mm/memory_peers/nv_mem/version` in every release (v2.3.5
  src/transport/net_ib.cu:190); `memory_peers/nvidia-peermem/version` too from 2.9.8 to 2.21.5
  (v2.9.8 src/transport/net_ib.cc:224-226, v2.19.3 net_ib.cc:285-287, v2.21.5 net_ib.cc:562-564);
  `memory_peers/nv_mem_nc/version` instead from 2.22.3 (v2.22.3 net_ib.cc:614-616); and
  `/sys/module/nvidia_peermem/version` too from 2.23.4 (v2.23.4 net_ib.cc:694-696; v2.28.9
  net_ib.cc:872-874; 2.30.7 src/transport/net_ib/gdr.cc:18-20). A path the release does not
  check does not count: an older NCCL with only nvidia-peermem's /sys/module entry disables GDR
  (NCCL #1676: 180 -> 10 GB/s all-reduce). With several NCCLs on the host the release is the
  one rule nccl-version plans for (the lowest);
* DMA-BUF: NCCL_DMABUF_ENABLE (default 1, since 2.13.4: v2.13.4 src/init.cc:272), a CUDA driver
  >= 11.7 reporting CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, and an ibv_reg_dmabuf_mr() that works
  (2.30.7 src/init.cc:402-420, gdr.cc:46-70). What makes those succeed, and what the probe can
  see: the open GPU kernel module ("Open Kernel Module" in /proc/driver/nvidia/version; a 515+
  driver, CUDA 11.7), a kernel >= 5.12 (dma-buf RDMA memory registration) and rdma-core >= 34
  (libibverbs exports ibv_reg_dmabuf_mr) -- NVIDIA's GPU Operator docs recommend DMA-BUF over
  nvidia-peermem.

GDR is used for a pair only up to NCCL_NET_GDR_LEVEL, by default PXB (PIX or PXB: PCIe switches, no
CPU in between), and P2C where NCCL_NET_GDR_C2C is on (default from 2.27.3; 2.30.7
src/graph/paths.cc:510): on a C2C superchip (GB200, GB300, GH200) a NIC on the GPU's own CPU -- PHB
or NODE to nvidia-smi -- is P2C to NCCL (v2.27.3-1 paths.cc:670-680), and its pairs count as
default-level (`nccl_path: P2C` in the report). So "GDR unavailable" is a warning only where some
GPU-NIC pair is at the default level -- those pairs lose it; on a host with no such pair NCCL would
not use GDR at its default level anyway, and the finding is info. rocetune never raises
NCCL_NET_GDR_LEVEL on its own: a PHB/SYS pair is slower with GDR on some platforms and faster on
others, which only a measurement can tell. `plan.reports["gpudirect-rdma"]` lists the routes and the
pairs. A plan from recorded tool outputs without sysfs (`rdma.from_tools`) checks nothing: the peer-
memory paths are sysfs.

The pairs' paths are the ones NCCL will see: when a topology file is planned (the owner's
declared NCCL_TOPO_FILE, a vendor's file, or the one nccl-topo-file generates), NCCL places the
devices where the file puts them, so the paths come from the file (rocetune.analysis.topofile,
classified as 2.28.9 src/graph/paths.cc:91-101 does), not from the flattened view nvidia-smi
gives inside a VM; the report's `paths_from` names the file.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..model.vocab import C2C_GPU, GPU_LOCAL
from ..nccl import releases
from ..nccl.defaults import DMABUF, PEER_MEMORY_PATHS, peer_memory_checks, peer_memory_releases
from .base import DEFAULT_TOPO_PATH

ID = "gpudirect-rdma"


_GDR_SOURCE = ("NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:872-874 and v2.30.7-1 "
               "src/transport/net_ib/gdr.cc:18-20 (the peer-memory paths each release checks); "
               "NCCL #1676 (GDR off: 180 -> 10 GB/s all-reduce)")

declare(
    id="gdr-unavailable", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when no GPU-NIC pair is PIX/PXB: NCCL would not use GPUDirect RDMA there "
                  "at its default level anyway",
    by=("gpudirect-rdma",),
    title="GPUDirect RDMA is unavailable",
    checks="Whether NCCL can register GPU memory with the NICs: a peer-memory path the planned "
           "release checks, or every DMA-BUF condition (open GPU kernel module, kernel >= 5.12, "
           "rdma-core >= 34, NCCL >= 2.13.4).",
    reads="/sys/kernel/mm/memory_peers/*/version, /sys/module/nvidia_peermem/version, "
          "/proc/driver/nvidia/version, the kernel release, the libibverbs file name, the NCCL "
          "release planned for, and the GPU-NIC path types.",
    why="Without GPUDirect RDMA every transfer is staged through host memory: NCCL #1676 measured "
        "all-reduce falling from 180 to 10 GB/s.",
    fix="load nvidia-peermem and persist it in /etc/modules-load.d/ (the rdma_core role), or use "
        "the open GPU kernel modules with DMA-BUF",
    source=_GDR_SOURCE + "; v2.30.7-1 src/init.cc (NCCL_DMABUF_ENABLE).",
)

declare(
    id="gdr-not-detected", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when no GPU-NIC pair is PIX/PXB",
    by=("gpudirect-rdma",),
    title="Peer memory is registered where this NCCL does not look",
    checks="Whether the peer-memory module registers at a path the planned NCCL release checks "
           "(releases up to 2.22.3 do not check /sys/module/nvidia_peermem/version).",
    reads="/sys/kernel/mm/memory_peers/*/version, /sys/module/nvidia_peermem/version and the NCCL "
          "release planned for.",
    why="NCCL then disables GPUDirect RDMA although the module is loaded: NCCL #1676 measured "
        "all-reduce falling from 180 to 10 GB/s.",
    fix="use an NCCL release that checks the path (2.23.4 or later), or DMA-BUF",
    source=_GDR_SOURCE + "; NCCL #1537, #1939.",
)

declare(
    id="gdr-peermem-unregistered", kind="rule", severity="warning",
    by=("gpudirect-rdma",),
    title="nvidia_peermem is loaded but registered nowhere",
    checks="Whether a loaded (or built-in) nvidia_peermem module left any of the peer-memory "
           "paths NCCL checks.",
    reads="/proc/modules, modules.builtin, /sys/kernel/mm/memory_peers/*/version and "
          "/sys/module/nvidia_peermem/version.",
    why="A module built against another OFED or driver than the one running registers no peer "
        "memory client: NCCL finds none of its paths and disables GPUDirect RDMA.",
    fix="rebuild the NVIDIA driver (or its DKMS nvidia-peermem) after installing OFED, or use DMA-BUF",
    source=_GDR_SOURCE + ".",
)
PEER_PATHS = PEER_MEMORY_PATHS
DMABUF_KERNEL = (5, 12)
DMABUF_RDMA_CORE = 34
DMABUF_DRIVER = 515  # first driver branch with CUDA 11.7 (and the open kernel modules)


def _kernel_version(release: Optional[str]):
    m = re.match(r"^(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def dmabuf_support(features: dict, version) -> Dict[str, Any]:
    """Each DMA-BUF condition the probe can see: True, False or None (unknown); `usable` is True
    only when all are True, False when one is False."""
    kernel = features.get("kernel") or {}
    krel = (features.get("host") or {}).get("kernel_release")
    kv = _kernel_version(krel)
    drv = kernel.get("nvidia_driver")
    verbs = kernel.get("libibverbs")
    drv_major = None
    if drv and drv.get("version"):
        m = re.match(r"^(\d+)", drv["version"])
        drv_major = int(m.group(1)) if m else None
    conds = {
        "kernel_5_12": None if kv is None else kv >= DMABUF_KERNEL,
        "open_gpu_module": None if not drv else bool(drv.get("open")),
        "driver_cuda_11_7": None if drv_major is None else drv_major >= DMABUF_DRIVER,
        "rdma_core_34": None if not verbs else int(verbs.get("rdma_core") or 0) >= DMABUF_RDMA_CORE,
        "nccl_2_13_4": None if version is None else version >= DMABUF,
    }
    values = set(conds.values())
    usable = False if False in values else (True if values == {True} else None)
    return {"usable": usable, "conditions": conds, "kernel_release": krel,
            "nvidia_driver": drv, "rdma_core": verbs.get("rdma_core") if verbs else None}


@emits("gdr-peermem-unregistered", "gdr-not-detected", "gdr-unavailable")
def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    sel = host.selection()
    kernel = features.get("kernel") or {}
    peer = kernel.get("peer_memory") or {}
    modules = kernel.get("modules") or {}
    version = host.nccl_version()
    vtext = host.nccl_version_text()

    checked = peer_memory_checks(version)
    present = [k for k in PEER_PATHS if peer.get(k)]
    counted = [k for k in present if k in checked]
    unchecked = [k for k in present if k not in checked]
    peer_ok = bool(counted)
    dmabuf = dmabuf_support(features, version)

    pairs: List[Dict[str, Any]] = []
    paths, topo = host.nccl_gpu_paths()
    paths_from = topo.label(ctx.topo_path or DEFAULT_TOPO_PATH) if topo is not None else None
    c2c_gdr = _c2c_gdr(version, {k: v["value"] for k, v in ctx.declared.items()})
    for g in host.gpus:
        idx = int(g["index"])
        c2c = bool(C2C_GPU.search(g.get("name") or ""))
        for p in sel.chosen:
            path = paths.get(p.device, {}).get(idx)
            if path is None:
                continue
            pair = {"gpu": idx, "port": p.name, "path": path, "default_level": path in GPU_LOCAL}
            if c2c and path in ("PHB", "NODE"):
                # NCCL's P2C: a NIC on the superchip's own CPU; GDR at the default level when C2C GDR is on
                pair.update(nccl_path="P2C", default_level=c2c_gdr)
            pairs.append(pair)
    usable = [x for x in pairs if x["default_level"]]
    available = peer_ok or dmabuf["usable"] is True
    route = ("peer memory (" + ", ".join(PEER_PATHS[k] for k in counted) + ")" if peer_ok
             else "DMA-BUF" if dmabuf["usable"] else None)
    tools = (features.get("rdma") or {}).get("from_tools")
    expected, expected_why = _expected(host, sel, tools, available, route, dmabuf, usable, vtext)
    ctx.report({"available": available, "route": route, "expected": expected, "expected_why": expected_why,
                "peer_memory": {PEER_PATHS[k]: bool(peer.get(k)) for k in PEER_PATHS},
                "checked_by_nccl": [PEER_PATHS[k] for k in checked],
                "nvidia_peermem_counts": "nvidia_peermem" in counted, "dmabuf": dmabuf,
                "nccl": host.nccl_evidence(), "pairs": pairs, "paths_from": paths_from})

    if not host.gpus or not sel.chosen:
        return []
    if tools:
        ctx.note(f"planned from recorded '{tools}' output without sysfs, where the peer-memory "
                 "module and DMA-BUF support would show: GPUDirect RDMA not checked")
        return []
    if version is None and counted and "nv_mem" not in counted:
        ctx.note("the NCCL release is unknown: peer memory at " + "; ".join(
            f"{PEER_PATHS[k]} counts only for NCCL {peer_memory_releases(k)}" for k in counted))
    if modules.get("nvidia_peermem") and not present:
        how = "built into the kernel" if "nvidia_peermem" in (kernel.get("builtin_modules") or []) else "loaded"
        ctx.finding("gdr-peermem-unregistered", "warning", "nvidia_peermem",
                    f"nvidia_peermem is {how} but {PEER_PATHS['nvidia_peermem']} and "
                    f"{PEER_PATHS['nv_mem']} are absent: rebuild the driver after OFED, or use DMA-BUF",
                    peer_memory={PEER_PATHS[k]: False for k in PEER_PATHS})
    severity = "warning" if usable else "info"
    local = "PIX/PXB/P2C" if any(x.get("nccl_path") == "P2C" for x in usable) else "PIX/PXB"
    eligible = (f"{len(usable)} GPU-NIC pair(s) are {local} and lose GPUDirect RDMA" if usable else
                "no GPU-NIC pair is PIX/PXB, so NCCL would not use GPUDirect RDMA at its default level "
                "(NCCL_NET_GDR_LEVEL=PXB) anyway")
    if unchecked and not counted and version is not None and not dmabuf["usable"]:
        there = "; ".join(f"{PEER_PATHS[k]} (checked by NCCL {peer_memory_releases(k)})" for k in unchecked)
        if dmabuf["usable"] is None:
            unknown = ", ".join(k for k, v in dmabuf["conditions"].items() if v is None)
            if usable:
                eligible = f"{len(usable)} GPU-NIC pair(s) are {local}, where it matters"
            outcome = ("NCCL does not count this peer memory, so GPUDirect RDMA rests on DMA-BUF, which this "
                       f"probe cannot confirm ({unknown} unknown): 'GPU Direct RDMA Enabled' or '/GDRDMA' in "
                       "the job's NCCL_DEBUG=INFO log tells")
        else:
            outcome = "NCCL disables GPUDirect RDMA (NCCL #1676, 180 -> 10 GB/s)"
        ctx.finding("gdr-not-detected", severity, "nccl",
                    f"peer memory is registered only at {there}, and NCCL {vtext}{_library(host)} checks "
                    f"only {' and '.join(PEER_PATHS[k] for k in checked)}: {outcome}; {eligible}. Use an "
                    "NCCL that checks it",
                    peer_memory={PEER_PATHS[k]: k in present for k in PEER_PATHS},
                    checked_by_nccl=[PEER_PATHS[k] for k in checked], nccl=host.nccl_evidence())
    elif not available:
        if dmabuf["usable"] is False:
            unmet = [k for k, v in dmabuf["conditions"].items() if v is False]
            dm = "DMA-BUF is not available either (" + ", ".join(unmet) + " not met)"
        else:
            unsure = [k for k, v in dmabuf["conditions"].items() if v is None]
            dm = ("DMA-BUF may work but cannot be confirmed (" + ", ".join(unsure) + " unknown): look for "
                  "'GPU Direct RDMA Enabled' with NCCL_DEBUG=INFO")
        ctx.finding("gdr-unavailable", severity, "host",
                    f"GPUDirect RDMA unavailable: none of {', '.join(PEER_PATHS[k] for k in checked)} "
                    f"exists (the paths NCCL {vtext or 'of some release'} checks for a peer-memory module) "
                    f"and {dm}; {eligible}. Without it "
                    "every transfer is staged through host memory (NCCL #1676: 180 -> 10 GB/s). Load "
                    "nvidia-peermem (persist it in /etc/modules-load.d/) or use the open GPU kernel "
                    "modules with DMA-BUF",
                    peer_memory={PEER_PATHS[k]: k in present for k in PEER_PATHS},
                    checked_by_nccl=[PEER_PATHS[k] for k in checked], dmabuf=dmabuf["conditions"],
                    pairs_pix_pxb=len(usable))
    if route == "DMA-BUF":
        ctx.note("GPUDirect RDMA through DMA-BUF: open GPU kernel module "
                 f"{(dmabuf['nvidia_driver'] or {}).get('version')}, kernel {dmabuf['kernel_release']}, "
                 f"rdma-core {dmabuf['rdma_core']}, NCCL {vtext} (no peer-memory module needed)")
    via = f" (paths from the {paths_from})" if paths_from else ""
    if not usable:
        ctx.note("no GPU-NIC pair is PIX/PXB" + via + ": NCCL will not use GPUDirect RDMA at its "
                 "default level (NCCL_NET_GDR_LEVEL); data is staged through host memory")
    else:
        gpus = sorted({x["gpu"] for x in usable})
        cover = f"{len(usable)} GPU-NIC pair(s) covering {len(gpus)} of {len(host.gpus)} GPU(s){via}"
        if available:
            ctx.note(f"GPUDirect RDMA at NCCL's default level on {cover}")
        elif dmabuf["usable"] is None:
            ctx.note(f"{cover} are PIX/PXB: GPUDirect RDMA at NCCL's default level if DMA-BUF works, which "
                     "this probe cannot confirm")
        else:
            ctx.note(f"{cover} are PIX/PXB, but without a peer-memory module NCCL counts or DMA-BUF NCCL "
                     "runs them without GPUDirect RDMA")
    return []


def _expected(host, sel, tools, available, route, dmabuf, usable, vtext):
    """(whether a job should show GPUDirect RDMA on the network, and why): True, False, or None
    when the probe cannot tell. `doctor --nccl-log` holds the log's connection lines to it."""
    if not host.gpus or not sel.chosen or tools:
        return None, ""
    if not usable:
        return False, "no GPU-NIC pair is PIX/PXB, NCCL's default GDR level"
    if available:
        return True, f"{len(usable)} GPU-NIC pair(s) at PIX/PXB, {route}"
    if dmabuf["usable"] is None:
        return None, ""
    return False, (f"no peer-memory module NCCL {vtext or ''} counts, and DMA-BUF is unavailable").replace("  ", " ")


def _c2c_gdr(version, declared: Dict[str, str]) -> bool:
    """Whether NCCL `version` uses GDR on a P2C path at its default level: 2.27.3 turns NCCL_NET_GDR_C2C on
    (release table `c2c-gdr-off-by-default`); from 2.26.2 an owner's NCCL_NET_GDR_C2C=1 does."""
    if releases.gate("c2c-gdr-off-by-default", version) is False:
        return declared.get("NCCL_NET_GDR_C2C", "1").strip() != "0"
    return declared.get("NCCL_NET_GDR_C2C", "").strip() == "1" and releases.reads("NCCL_NET_GDR_C2C", version) is True


def _library(host) -> str:
    path = host.nccl_evidence().get("library")
    return f" ({path})" if path else ""
