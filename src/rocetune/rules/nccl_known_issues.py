"""nccl-known-issues: what the planned NCCL release is known to get wrong on this host, each a
finding with its source.

A report, not a setting: every item is gated by the release table (rocetune.nccl.releases, the one
gate `rocetune explain` cites), and needs the host condition that makes it bite:

* `nccl-ece-roce` -- ECE on RoCE compute ports, releases 2.19.1 up to 2.26.3 (fixed in 2.26.3's
  release notes); NCCL_IB_ECE_ENABLE=0 turns it off from 2.23.4. Not raised where the owner
  declared NCCL_IB_ECE_ENABLE=0.
* `nccl-roce-port-recovery` -- NCCL_IB_RESILIENCY_PORT_RECOVERY=1 declared on RoCE ports: a warning
  from 2.30.3 up to 2.31.2, which keep the cached GID (NVIDIA/nccl#2157); from 2.31.2, which refreshes
  it, info, or a warning where one HCA has several chosen ports (NVIDIA/nccl#1819).
* `nccl-mnnvl-stack` -- a stack limit of `unlimited` (the probing process's soft `Max stack size`)
  on a multi-node NVLink GPU (GB200, GB300, GH200: Grace superchips of NVL racks), every release
  with MNNVL (2.27.6 release notes).
* `nccl-c2c-gdr-off` -- a Grace superchip (GPU and CPU joined by NVLink-C2C) with RDMA ports and an
  NCCL before 2.27.3, which keeps GPUDirect RDMA off for the NICs behind the CPU unless
  NCCL_NET_GDR_C2C=1 (2.26.2+) or NCCL_NET_GDR_LEVEL says otherwise (NVIDIA/nccl#1579: +20%).
* `nccl-gin-peer-memory` -- 2.28.7+ with GPUs and RDMA ports whose only GPU-memory registration
  is the legacy nv_peer_mem (`memory_peers/nv_mem`), without DMA-BUF on a kernel >= 6.1: GIN's
  GDAKI transport cannot register GPU memory (2.28.7 release notes). Info: only jobs using
  NCCL's device API (GIN) need it.
* `nccl-ignore-net-mismatch` -- 2.30.3+ with RDMA ports: NCCL_IGNORE_NET_MISMATCH defaults to 1,
  so a rank that cannot open one NIC lets the job run on and hang (NVIDIA/nccl#2428). Info, with
  what to do: preflight (`fleet validate --tests nccl`) runs NCCL with NCCL_IGNORE_NET_MISMATCH=0.

The version is the one the plan is made for (rule nccl-version: the lowest library found, or
`--nccl-version`); an unknown release raises nothing here, the other rules say it is unknown.
"""

from __future__ import annotations

import re
from typing import List

from ..checks import declare
from ..checks.binding import emits
from ..model.plan import Decision
from ..nccl import releases
from ..nccl.syntax import strtoll

ID = "nccl-known-issues"


_KNOWN = ("The NCCL release planned for (rule nccl-version) against the release table "
          "(rocetune.nccl.releases, which `rocetune explain` cites), and the host facts named.")

for _id, _sev, _title, _checks, _why, _fix, _fact in (
    ("nccl-ece-roce", "warning", "This NCCL's ECE exchange can slow RoCE down",
     "RoCE compute ports with an NCCL from 2.19.1 up to 2.26.3.",
     "NCCL 2.26.3's release notes fix 'the exchange of enhanced connection establishment (ECE) options to "
     "address potential slowdowns on networks utilizing RoCE'; NVIDIA/nccl#1403 saw unstable bandwidth.",
     "NCCL_IB_ECE_ENABLE=0 (2.23.4 and later), or NCCL 2.26.3 or later", "ece-roce-slowdown"),
    ("nccl-roce-port-recovery", "warning", "Port recovery on RoCE may not complete",
     "A declared NCCL_IB_RESILIENCY_PORT_RECOVERY=1 on RoCE ports with NCCL 2.30.3 or later: a warning up to "
     "2.31.2; from 2.31.2 info, or a warning where one HCA has several chosen ports.",
     "After a port flap the kernel may register the port's GIDs at other indexes; up to 2.31.2 NCCL reuses "
     "the index it cached at connect time, so the recovery's queue pairs do not come up and bandwidth stays "
     "degraded. 2.31.2 reads the GID again on a GID-change event, but on an HCA with several ports the event "
     "may be taken by another port's thread (NVIDIA/nccl#1819).",
     "NCCL 2.31.2 or later; before it, leave port recovery off on RoCE or pin NCCL_IB_GID_INDEX on a GID "
     "table that does not move", "roce-port-recovery"),
    ("nccl-mnnvl-stack", "warning", "Unlimited stack size on a multi-node NVLink system",
     "The probing process's soft stack limit on hosts with GB200, GB300 or GH200 GPUs.",
     "With 'ulimit -s unlimited' glibc gives new threads 2 MiB stacks, less than NCCL's background threads "
     "need on MNNVL systems: crashes (NCCL 2.27.6 release notes).",
     "ulimit -s 8192 in the job's launcher, propagated to every node", "mnnvl-stack-unlimited"),
    ("nccl-c2c-gdr-off", "warning", "GPUDirect RDMA off by default on a C2C superchip",
     "Grace superchips (GB200, GB300, GH200) with RDMA ports and an NCCL before 2.27.3.",
     "Before 2.27.3 NCCL disables GPUDirect RDMA for NICs reached through the Grace CPU; "
     "NVIDIA/nccl#1579 measured all-reduce 79.7 -> 96.1 GB/s with it on.",
     "NCCL_NET_GDR_C2C=1 (2.26.2 and later) or NCCL_NET_GDR_LEVEL=SYS, or NCCL 2.27.3 or later",
     "c2c-gdr-off-by-default"),
    ("nccl-gin-peer-memory", "info", "GPU-Initiated Networking cannot register GPU memory here",
     "Hosts whose only peer-memory module is the legacy nv_peer_mem, with NCCL 2.28.7 or later.",
     "GIN's GDAKI transport needs nvidia-peermem or DMA-BUF (kernel >= 6.1); jobs using NCCL's device API "
     "fail to register memory.",
     "load nvidia-peermem (the GPU driver's module) instead of nv_peer_mem, or use DMA-BUF on a kernel "
     ">= 6.1 with the open GPU module", "gin-needs-peermem-or-dmabuf"),
    ("nccl-ignore-net-mismatch", "info", "NCCL runs on when ranks see different numbers of NICs",
     "RDMA hosts with NCCL 2.30.3 or later and NCCL_IGNORE_NET_MISMATCH not declared 0.",
     "A rank that cannot open one NIC (permissions, a container without the device, a port down) no longer "
     "fails init: the job runs and can hang without an error (NVIDIA/nccl#2428).",
     "run preflight ('rocetune fleet validate --tests nccl' sets NCCL_IGNORE_NET_MISMATCH=0); jobs that "
     "must fail fast can set it too", "ignore-net-mismatch-default-on"),
):
    from ..nccl.releases import fact as _release_fact

    _also = ("info",) if _id == "nccl-roce-port-recovery" else ()
    _note = ("info from 2.31.2 (which refreshes a port's GID on a GID-change event), unless one HCA has "
             "several chosen ports" if _also else "")
    declare(
        id=_id, kind="rule", severity=_sev,
        also=_also,
        severity_note=_note,
        by=("nccl-known-issues",),
        title=_title,
        checks=_checks,
        reads=_KNOWN,
        why=_why,
        fix=_fix,
        source=f"{_release_fact(_fact).source} (release table entry `{_fact}`: "
               f"{_release_fact(_fact).span()})",
    )
# GPUs of multi-node NVLink systems and of NVLink-C2C superchips (NVIDIA's product names)
_MNNVL_GPU = re.compile(r"\bG[BH]\d{3}\b")
_C2C_GPU = re.compile(r"\bG[BH]\d{3}\b")
GIN_DMABUF_KERNEL = (6, 1)


@emits("nccl-ece-roce",
       "nccl-roce-port-recovery",
       "nccl-mnnvl-stack",
       "nccl-c2c-gdr-off",
       "nccl-ignore-net-mismatch")
def rule(features: dict, ctx) -> List[Decision]:
    host = ctx.host
    version = host.nccl_version()
    if version is None:
        return []
    vtext = host.nccl_version_text()
    sel = host.selection()
    roce = [p for p in sel.chosen if p.is_roce]
    declared = {k: v["value"] for k, v in ctx.declared.items()}
    names = [g.get("name") or "" for g in host.gpus]

    def src(fact_id: str) -> str:
        return releases.fact(fact_id).source

    ece = declared.get("NCCL_IB_ECE_ENABLE", ctx.overridden.get("NCCL_IB_ECE_ENABLE"))
    if roce and releases.gate("ece-roce-slowdown", version) and ece != "0":
        fix = ("set NCCL_IB_ECE_ENABLE=0" if releases.reads("NCCL_IB_ECE_ENABLE", version)
               else f"upgrade: NCCL {vtext} has no NCCL_IB_ECE_ENABLE (2.23.4 added it)")
        ctx.finding("nccl-ece-roce", "warning", "NCCL_IB_ECE_ENABLE",
                    f"NCCL {vtext} exchanges ECE options on {len(roce)} RoCE port(s) in a way that can slow "
                    f"RoCE down (fixed in 2.26.3): {fix}, or use NCCL 2.26.3 or later",
                    nccl=host.nccl_evidence(), ports=[p.name for p in roce], source=src("ece-roce-slowdown"))
    recovery = declared.get("NCCL_IB_RESILIENCY_PORT_RECOVERY")
    if roce and recovery is not None and strtoll(recovery)[0] != 0 and releases.gate("roce-port-recovery", version):
        ctx.finding("nccl-roce-port-recovery", "warning", "NCCL_IB_RESILIENCY_PORT_RECOVERY",
                    f"NCCL_IB_RESILIENCY_PORT_RECOVERY={recovery} on RoCE ports with NCCL {vtext}: after a port "
                    "flap the kernel may register the port's GIDs at other indexes while NCCL keeps the one it "
                    "cached, and the recovery does not complete (NVIDIA/nccl#2157); NCCL 2.31.2 refreshes the GID "
                    "on a GID-change event", nccl=host.nccl_evidence(), source=src("roce-port-recovery"))
    elif roce and recovery is not None and strtoll(recovery)[0] != 0 and releases.gate("gid-change-refresh", version):
        multi = sorted({p.device for p in roce if sum(1 for q in roce if q.device == p.device) > 1})
        ctx.finding("nccl-roce-port-recovery", "warning" if multi else "info", "NCCL_IB_RESILIENCY_PORT_RECOVERY",
                    f"NCCL_IB_RESILIENCY_PORT_RECOVERY={recovery} on RoCE ports with NCCL {vtext}: it refreshes a "
                    "port's GID on a GID-change event and tries recovery up to 20 times"
                    + (f"; on {', '.join(multi)} (several ports of one HCA) the event may be taken by another "
                       "port's thread and the moved GID missed (NVIDIA/nccl#1819)" if multi else ""),
                    nccl=host.nccl_evidence(), source=src("gid-change-refresh"))
    stack = (features.get("kernel") or {}).get("stack_limit")
    mnnvl = sorted({n for n in names if _MNNVL_GPU.search(n)})
    if mnnvl and stack == "unlimited" and releases.gate("mnnvl-stack-unlimited", version):
        ctx.finding("nccl-mnnvl-stack", "warning", "stack limit",
                    f"the stack limit is 'unlimited' on a multi-node NVLink GPU ({', '.join(mnnvl)}): glibc then "
                    f"gives NCCL's threads 2 MiB stacks and NCCL {vtext} can crash; set 'ulimit -s 8192' in the "
                    "job's launcher on every node (NCCL 2.27.6 release notes)",
                    stack_limit=stack, gpus=mnnvl, source=src("mnnvl-stack-unlimited"))
    c2c = sorted({n for n in names if _C2C_GPU.search(n)})
    gdr_set = any(k in declared for k in ("NCCL_NET_GDR_C2C", "NCCL_NET_GDR_LEVEL"))
    if c2c and sel.chosen and releases.gate("c2c-gdr-off-by-default", version) and not gdr_set:
        fix = ("set NCCL_NET_GDR_C2C=1" if releases.reads("NCCL_NET_GDR_C2C", version)
               else "set NCCL_NET_GDR_LEVEL=SYS")
        ctx.finding("nccl-c2c-gdr-off", "warning", "GPUDirect RDMA",
                    f"NCCL {vtext} keeps GPUDirect RDMA off for NICs behind the Grace CPU of a C2C superchip "
                    f"({', '.join(c2c)}); 2.27.3 turns it on by default: {fix}, or use NCCL 2.27.3 or later "
                    "(NVIDIA/nccl#1579 measured +20% all-reduce with it)",
                    nccl=host.nccl_evidence(), gpus=c2c, source=src("c2c-gdr-off-by-default"))
    if host.gpus and sel.chosen and releases.gate("gin-needs-peermem-or-dmabuf", version):
        _gin(features, ctx, vtext, src("gin-needs-peermem-or-dmabuf"))
    if sel.chosen and releases.gate("ignore-net-mismatch-default-on", version) and \
            declared.get("NCCL_IGNORE_NET_MISMATCH") != "0":
        ctx.finding("nccl-ignore-net-mismatch", "info", "NCCL_IGNORE_NET_MISMATCH",
                    f"NCCL {vtext} defaults NCCL_IGNORE_NET_MISMATCH to 1: when one rank cannot open a NIC the "
                    "others use, the job runs on and can hang without an error (NVIDIA/nccl#2428). "
                    "'rocetune fleet validate --tests nccl' runs NCCL with NCCL_IGNORE_NET_MISMATCH=0, so such a "
                    "node fails there; a job can set it too, to fail at init instead of hanging",
                    nccl=host.nccl_evidence(), source=src("ignore-net-mismatch-default-on"))
    return []


@emits("nccl-gin-peer-memory")
def _gin(features: dict, ctx, vtext: str, source: str) -> None:
    kernel = features.get("kernel") or {}
    peer = kernel.get("peer_memory") or {}
    modern = peer.get("nvidia_peermem") or peer.get("nv_mem_nc") or peer.get("nvidia-peermem")
    if modern or not peer.get("nv_mem"):
        return  # nvidia-peermem is there, or no peer memory at all (gpudirect-rdma says so)
    from .gpudirect_rdma import dmabuf_support

    dmabuf = dmabuf_support(features, ctx.host.nccl_version())
    m = re.match(r"^(\d+)\.(\d+)", (features.get("host") or {}).get("kernel_release") or "")
    kernel_ok = m is not None and (int(m.group(1)), int(m.group(2))) >= GIN_DMABUF_KERNEL
    if dmabuf["usable"] is True and kernel_ok:
        return
    ctx.finding("nccl-gin-peer-memory", "info", "GIN",
                f"GPU memory registers only through the legacy nv_peer_mem module here: GPU-Initiated "
                f"Networking (NCCL {vtext}'s device API, its GDAKI transport) needs nvidia-peermem or DMA-BUF on "
                "a kernel >= 6.1; jobs using it fail to register memory (NCCL 2.28.7 release notes)",
                peer_memory=peer, dmabuf=dmabuf["conditions"], source=source)
