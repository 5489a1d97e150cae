"""Kernel source: modules, peer memory, memlock, IOMMU/ACS, net sysctls, the NCCL library."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set

from ... import nics
from ...core.modules_builtin import parse_modules_builtin, sysfs_says_builtin
from ...hostfs.context import ProbeContext
from ...nccl.defaults import PEER_MEMORY_PATHS
from ..source import Source
from . import nccl_libs
from .nccl_libs import NCCL_LIB_DIRS

# The RDMA core, the GPU's, then each NIC driver's own (rocetune.nics: watched_modules).
MODULES = ("ib_core", "ib_uverbs", "rdma_ucm", "rdma_cm", "nvidia", "nvidia_peermem", "nv_peer_mem",
           *nics.watched_modules())
# Every path some NCCL release checks for a peer-memory module (which release checks which:
# nccl/defaults.py PEER_MEMORY_CHECKS); the rules decide which one counts for the NCCL found.
PEER_PATHS = PEER_MEMORY_PATHS
SYSCTLS = (
    "net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
    "net.core.netdev_max_backlog", "net.core.somaxconn", "net.core.optmem_max",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mtu_probing",
    "net.ipv4.conf.all.arp_ignore", "net.ipv4.conf.all.arp_announce", "net.ipv4.conf.all.rp_filter",
    "net.ipv4.ip_local_port_range",
)
CMDLINE_KEYS = ("iommu", "intel_iommu", "amd_iommu")
NVIDIA_VERSION = "/proc/driver/nvidia/version"
# Patterns of files most hosts do not have are compiled where they are read (re caches them).
_NVRM = r"^NVRM version:\s+NVIDIA UNIX (Open )?Kernel Module for \S+\s+(\S+)"
_NVRM_LEGACY = r"^NVRM version:.*Kernel Module\s+(\d[\d.]*)"
_IBVERBS_RE = re.compile(r"^libibverbs\.so\.1\.(\d+)\.(\d+)\.\d+\Z")
NET_CONF = "/proc/sys/net/ipv4/conf"
NET_CONF_KEYS = ("arp_ignore", "arp_announce", "rp_filter")


def _modules(ctx: ProbeContext) -> dict:
    """`modules`: whether each module is present, loaded (/proc/modules) or built into the
    kernel; `builtin_modules`: those of them built in (never in /proc/modules, never loaded)."""
    loaded = set()
    for line in (ctx.text("/proc/modules") or "").splitlines():
        if line.strip():
            loaded.add(line.split()[0])
    builtin = _builtin_modules(ctx, loaded)
    return {"modules": {m: m in loaded or m in builtin for m in MODULES}, "builtin_modules": builtin}


def _builtin_modules(ctx: ProbeContext, loaded: Set[str]) -> List[str]:
    """The modules of MODULES built into the kernel. The kernel's sysfs ABI
    (Documentation/ABI/testing/sysfs-module): /sys/module/<name> exists for a loaded module and
    for a built-in one with parameters, a version or drivers; `initstate` and `refcnt` exist for
    loadable modules only. modules.builtin (installed with the kernel) names the others."""
    found = set()
    for m in MODULES:
        base = f"/sys/module/{m}"
        # exists() first: a capture keeps what it saw (the directory, not its files)
        if m not in loaded and ctx.root.exists(base) and \
                sysfs_says_builtin(ctx.root.is_dir(base), ctx.root.exists(f"{base}/initstate")):
            found.add(m)
    release = ctx.attr("/proc/sys/kernel/osrelease")
    if release and "/" not in release:
        listed = parse_modules_builtin(ctx.text(f"/lib/modules/{release}/modules.builtin") or "")
        found.update(m for m in MODULES if m in listed and m not in loaded)
    return sorted(found)


def _limit(ctx: ProbeContext, name: str) -> Optional[str]:
    """The soft value of one /proc/self/limits row (`unlimited` or a number)."""
    for line in (ctx.text("/proc/self/limits") or "").splitlines():
        if line.startswith(name):
            cols = line[len(name):].split()
            return cols[0] if cols else None
    return None


def _memlock(ctx: ProbeContext) -> Optional[str]:
    return _limit(ctx, "Max locked memory")


def _cmdline(ctx: ProbeContext) -> dict:
    words = (ctx.text("/proc/cmdline") or "").split()
    out: Dict[str, object] = {k: None for k in CMDLINE_KEYS}
    acs = []
    for w in words:
        key, _, value = w.partition("=")
        if key in CMDLINE_KEYS:
            out[key] = value or "on"
        if "acs" in key.lower() or (key == "pci" and "acs" in value):
            acs.append(w)
    out["acs"] = sorted(acs)
    return out


def _sysctls(ctx: ProbeContext) -> Dict[str, str]:
    values = {}
    for name in SYSCTLS:
        text = ctx.attr("/proc/sys/" + name.replace(".", "/"))
        if text is not None:
            values[name] = " ".join(text.split())
    return values


def _nvidia_driver(ctx: ProbeContext) -> Optional[dict]:
    """The loaded GPU kernel driver: its version and whether it is the open kernel module
    ("NVIDIA UNIX Open Kernel Module" in /proc/driver/nvidia/version), which DMA-BUF needs."""
    text = ctx.text(NVIDIA_VERSION)
    if not text:
        return None
    m = re.search(_NVRM, text, re.M)
    if m:
        return {"version": m.group(2), "open": bool(m.group(1))}
    m = re.search(_NVRM_LEGACY, text, re.M)
    return {"version": m.group(1) if m else None, "open": False}


def _libibverbs(ctx: ProbeContext) -> Optional[dict]:
    """rdma-core's libibverbs: libibverbs.so.1.<provider ABI>.<rdma-core release>.0 (rdma-core
    >= 34 exports ibv_reg_dmabuf_mr, which NCCL's DMA-BUF path calls)."""
    best = None
    for d in NCCL_LIB_DIRS:
        for name in ctx.root.listdir(d):
            m = _IBVERBS_RE.match(name)
            if m:
                release = int(m.group(2))
                if best is None or release > best[0]:
                    best = (release, f"{d}/{name}")
    if best is None:
        return None
    ctx.root.exists(best[1])  # a capture keeps the name, not the library
    return {"rdma_core": best[0], "path": best[1]}


def _net_conf(ctx: ProbeContext) -> Dict[str, str]:
    """net.ipv4.conf.<if>.{arp_ignore,arp_announce,rp_filter} for every interface (and all,
    default): what decides which port answers ARP when several share one subnet."""
    values = {}
    for ifname in sorted(ctx.root.listdir(NET_CONF)):
        for key in NET_CONF_KEYS:
            text = ctx.attr(f"{NET_CONF}/{ifname}/{key}")
            if text is not None:
                values[f"net.ipv4.conf.{ifname}.{key}"] = text
    return values


def _iommu_groups(ctx: ProbeContext) -> int:
    base = "/sys/kernel/iommu_groups"
    groups = [n for n in ctx.root.listdir(base) if n.isdigit()]
    if ctx.root.recorder is None:
        return len(groups)  # listed is there: no lstat for each of a large host's 600 groups
    return sum(1 for n in groups if ctx.root.exists(f"{base}/{n}"))  # a capture keeps each one


def probe(ctx: ProbeContext) -> dict:
    return {
        **_modules(ctx),
        "peer_memory": {k: ctx.root.exists(p) for k, p in PEER_PATHS.items()},
        "memlock": _memlock(ctx),
        "stack_limit": _limit(ctx, "Max stack size"),
        "cmdline": _cmdline(ctx),
        "iommu_groups": _iommu_groups(ctx),
        "sysctl": {**_sysctls(ctx), **_net_conf(ctx)},
        "nccl": nccl_libs.probe(ctx),
        "nvidia_driver": _nvidia_driver(ctx),
        "libibverbs": _libibverbs(ctx),
    }


SOURCE = Source("kernel", reads="/proc/modules, /sys/module, modules.builtin, /proc/cmdline, IOMMU groups, "
                "/proc/self/limits, net sysctls, the NCCL library",
                order=70)
