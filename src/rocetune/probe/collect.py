"""Run the sources (rocetune.probe.sources: each after the sources it needs) through one root,
derive the GPUs' topology from their sections, and merge all into the Features document."""

from __future__ import annotations

from typing import Any, Dict, Optional

from .. import __version__
from ..hostfs.context import ProbeContext
from ..hostfs.recorder import Recorder
from ..hostfs.root import HostRoot
from ..hostfs.runners import close_runner, runner_for, start_commands
from ..model.features import SCHEMA_VERSION
from ..model.schema import empty, features_schema, section_schema
from .sources import registry
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
    """What the schema asks of a section whose source gave nothing: its required keys, empty (a
    section the schema does not describe yet: an empty map)."""
    return empty(section_schema(section)) if section in features_schema()["properties"] else {}


def _no_sysfs(ctx: ProbeContext, *sections) -> None:
    """A root of recorded outputs alone (what a user pasted): say so once per source."""
    ctx.status.ok = False
    ctx.status.reason = "no /sys under the root (recorded outputs only)"
    return None


def collect_features(root: str = "/", recorder: Optional[Recorder] = None, runner=None) -> dict:
    host_root = HostRoot(root, recorder=recorder)
    ctx = ProbeContext(host_root, runner if runner is not None else runner_for(host_root, recorder))
    # The slow tools, each independent of the sysfs reads before it: started now, read by their
    # sources (a live runner; a recorded root replays each when asked).
    start_commands(ctx.runner, [argv for source, _ in registry() for argv in source.starts])
    try:
        return _collect(host_root, ctx)
    finally:
        close_runner(ctx.runner)


def _collect(host_root: HostRoot, ctx: ProbeContext) -> dict:
    st: Dict[str, dict] = {}
    doc: Dict[str, Any] = {}
    sysfs = host_root.is_live or host_root.is_dir("/sys")
    for source, module in registry():
        status: Dict[str, dict] = {}
        probe = module.probe if sysfs or not source.sysfs else _no_sysfs
        data = _run(source.name, ctx, status, probe, *(doc[n] for n in source.needs))
        if source.optional:  # absent where it gave nothing; a crash is kept, never absent
            if data is None and not status[source.name].get("failed"):
                doc[source.name] = None
                continue
        elif not data:
            data = dict(_empty(source.name), **dict(source.unread))
        st[source.name] = status[source.name]
        doc[source.name] = data
    host, pci, rdma, gpu = doc["host"], doc["pci"], doc["rdma"], doc["gpu"]
    gpus, topology, warnings = derive_topology(pci, rdma, gpu, host)
    st["gpu"]["warnings"] = sorted(set(st["gpu"]["warnings"]) | set(warnings))
    host["virtualization"] = virtualization(host, pci, gpus, topology)
    rdma["known"], rdma["unknown_reason"] = rdma_evidence(st["rdma"], rdma, gpu)
    features = {"schema_version": SCHEMA_VERSION, "tool": {"name": "rocetune", "version": __version__},
                "sources": st, "gpus": gpus, "topology": topology}
    features.update((name, section) for name, section in doc.items() if section is not None)
    return features
