"""Run every source through one root and merge them into the Features document."""

from __future__ import annotations

from typing import Dict, Optional

from .. import __version__
from ..hostfs.context import ProbeContext
from ..hostfs.recorder import Recorder
from ..hostfs.root import HostRoot
from ..hostfs.runners import close_runner, runner_for, start_commands
from ..model.features import SCHEMA_VERSION
from ..model.schema import empty, section_schema
from .sources import declared as declared_source
from .sources import gpu as gpu_source
from .sources import host as host_source
from .sources import kernel as kernel_source
from .sources import lldp as lldp_source
from .sources import net as net_source
from .sources import nic_firmware as nic_firmware_source
from .sources import nvlink as nvlink_source
from .sources import pci as pci_source
from .sources import phy as phy_source
from .sources import qos as qos_source
from .sources import rdma as rdma_source
from .sources import verbs as verbs_source
from .topology import derive_topology, rdma_evidence, virtualization


def _run(name: str, ctx: ProbeContext, statuses: dict, fn, *args):
    sctx = ctx.for_source()
    seen = len(ctx.root.warnings)
    try:
        data = fn(sctx, *args)
    except Exception as exc:  # a source fails alone; the rest of the probe goes on
        sctx.status.ok = False
        sctx.status.reason = f"{type(exc).__name__}: {str(exc)[:300]}"
        sctx.status.failed = type(exc).__name__  # said as such (doctor-reader-failed), never as nothing
        data = None
    # What the root could not read while this source ran (a directory it may not list, a
    # path of too many links): the source's warnings, so a partial root never passes unseen.
    sctx.status.warnings.extend(ctx.root.warnings[seen:])
    statuses[name] = sctx.status.to_dict()
    return data


def _empty(section: str) -> dict:
    """What the schema asks of a section whose source gave nothing: its required keys, empty."""
    return empty(section_schema(section))


def _no_sysfs(ctx: ProbeContext) -> None:
    """A root of recorded outputs alone (what a user pasted): say so once per source."""
    ctx.status.ok = False
    ctx.status.reason = "no /sys under the root (recorded outputs only)"
    return None


def collect_features(root: str = "/", recorder: Optional[Recorder] = None, runner=None) -> dict:
    host_root = HostRoot(root, recorder=recorder)
    ctx = ProbeContext(host_root, runner if runner is not None else runner_for(host_root, recorder))
    # The slow tools, each independent of the sysfs reads before it: started now, read by their
    # sources (a live runner; a recorded root replays each when asked).
    start_commands(ctx.runner, gpu_source.COMMANDS + (net_source.IP_ADDR_ARGV,))
    try:
        return _collect(host_root, ctx)
    finally:
        close_runner(ctx.runner)


def _collect(host_root: HostRoot, ctx: ProbeContext) -> dict:
    st: Dict[str, dict] = {}
    host = _run("host", ctx, st, host_source.probe) or _empty("host")
    sysfs = host_root.is_live or host_root.is_dir("/sys")
    pci = _run("pci", ctx, st, pci_source.probe if sysfs else _no_sysfs) or _empty("pci")
    # An unread address list is not an empty one (absent, addresses_known reads as true).
    net = _run("net", ctx, st, net_source.probe if sysfs else _no_sysfs) \
        or dict(_empty("net"), addresses_known=False)
    n_gpus = sum(1 for d in pci["devices"] if d["kind"] == "gpu")
    gpu = _run("gpu", ctx, st, gpu_source.probe, n_gpus) or _empty("gpu")
    # After the GPU source: a root of pasted outputs may name its RDMA devices only in topo -m's legend.
    rdma = _run("rdma", ctx, st, rdma_source.probe, net, pci, gpu) or _empty("rdma")
    verbs = _run("verbs", ctx, st, verbs_source.probe, rdma) or _empty("verbs")
    kernel = _run("kernel", ctx, st, kernel_source.probe) or _empty("kernel")
    declared = _run("declared", ctx, st, declared_source.probe) or _empty("declared")
    qos = _run("qos", ctx, st, qos_source.probe, rdma) or _empty("qos")
    # Only where lldpctl is installed: elsewhere neither the section nor its source status exist.
    lldp_status: Dict[str, dict] = {}
    lldp = _run("lldp", ctx, lldp_status, lldp_source.probe)
    if lldp is not None or lldp_status["lldp"].get("failed"):
        st["lldp"] = lldp_status["lldp"]
    # Each only where its tools answered (below the NCCL layer: firmware, PHY, NVLink fabric).
    below: Dict[str, Optional[dict]] = {}
    for name, fn, args in (("nic_firmware", nic_firmware_source.probe, (rdma, pci)),
                           ("phy", phy_source.probe, (rdma, pci)),
                           ("nvlink", nvlink_source.probe, (pci,))):
        status: Dict[str, dict] = {}
        below[name] = _run(name, ctx, status, fn, *args)
        if below[name] is not None or status[name].get("failed"):  # a crash is kept, never absent
            st[name] = status[name]
    gpus, topology, warnings = derive_topology(pci, rdma, gpu, host)
    st["gpu"]["warnings"] = sorted(set(st["gpu"]["warnings"]) | set(warnings))
    host["virtualization"] = virtualization(host, pci, gpus, topology)
    rdma["known"], rdma["unknown_reason"] = rdma_evidence(st["rdma"], rdma, gpu)
    features = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rocetune", "version": __version__},
        "host": host,
        "sources": st,
        "pci": pci,
        "net": net,
        "rdma": rdma,
        "verbs": verbs,
        "gpu": gpu,
        "gpus": gpus,
        "topology": topology,
        "kernel": kernel,
        "declared": declared,
        "qos": qos,
    }
    if lldp is not None:
        features["lldp"] = lldp
    features.update({name: doc for name, doc in below.items() if doc is not None})
    return features
