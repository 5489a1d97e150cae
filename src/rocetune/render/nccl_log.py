"""What NCCL used, as a person reads it: the lines `doctor --nccl-log` prints before the
differences. Built from the NCCL log report alone (rocetune.nccl.log), never from the plan: it
says what the job's own log shows, one line per fact, a value shared by many processes once with
their count."""

from __future__ import annotations

from typing import Dict, List, Sequence

from ..nccl.log_model import NcclLogReport, ProcessLog
from ..text import printable

_MAX_ITEMS = 8


def summary_lines(report: NcclLogReport) -> List[str]:
    procs = report.processes
    hosts = sorted({p.host for p in procs})
    versions = ", ".join(report.versions) or "release not in the log"
    out = [f"NCCL used ({printable(report.source)}: {len(procs)} process(es) on {len(hosts)} host(s), "
           f"NCCL {printable(versions)}; this reader reads {report.reads}):"]
    out += _row("network", procs, _network)
    out += _row("devices", procs, _devices)
    out += _row("GDR per NIC", procs, _gdr_nic)
    out += _row("GDR per pair", procs, _gdr_pairs)
    out += _row("queue pairs", procs, _queue_pairs)
    out += _row("transports", procs, _transports)
    out += _row("plugins", procs, _plugins)
    warns = report.warn_count
    if warns:
        where = sorted({w.where for w in report.warnings})
        out.append(f"  {'WARN lines':13}{warns}: {printable(_few(where))}")
    for text in report.cannot_tell:
        out.append(f"  {'cannot tell':13}{printable(text)}")
    return out


def _row(label: str, procs: Sequence[ProcessLog], fact) -> List[str]:
    """One line per distinct value of `fact` among the processes (none when no process shows it)."""
    seen: Dict[str, List[str]] = {}
    for p in procs:
        value = fact(p)
        if value:
            seen.setdefault(value, []).append(p.key)
    rows = []
    for i, (value, who) in enumerate(sorted(seen.items(), key=lambda kv: (-len(kv[1]), kv[0]))):
        scope = f" ({len(who)} of {len(procs)} processes)" if len(seen) > 1 or len(who) < len(procs) else ""
        rows.append(f"  {label if i == 0 else '':13}{printable(value)}{scope}")
    return rows


def _network(p: ProcessLog) -> str:
    name = p.net_name
    if name is None:
        return ""
    kinds = {"ib": "NCCL's IB/RoCE transport", "socket": "TCP sockets", "plugin": "a net plugin"}
    kind = kinds[p.transport or "plugin"]
    came = "" if p.network else " (from its connection lines)"
    plugin = f", plugin {p.net_plugin}" if p.net_plugin else ""
    return f"{name}: {kind}{came}{plugin}"


def _devices(p: ProcessLog) -> str:
    if p.ib_no_device and not p.ib_devices:
        return "no RDMA device ('NET/IB : No device found')"
    if p.ib_devices:
        items = []
        for d in sorted(p.ib_devices, key=lambda d: d.index):
            if d.port < 0:
                items.append(d.name)
                continue
            ids = "".join(f" {k} {v}" for k, v in (("rail", d.rail), ("plane", d.plane)) if v is not None)
            tag = f"/{d.tag}" if d.tag else ""
            items.append(f"{d.name}:{d.port}/{d.link_layer}{tag}{ids}")
        ro = " [RO]" if p.ib_relaxed_ordering else ""
        return _few(items) + ro
    if p.socket_interfaces:
        return _few([f"{n} {a}" for _, n, a in sorted(p.socket_interfaces)])
    return ""


def _gdr_nic(p: ProcessLog) -> str:
    items = [f"{d.name} {'on' if d.gdr else 'off'}" + (f" ({d.gdr_reason})" if d.gdr_reason else "")
             for d in sorted(p.ib_devices, key=lambda d: d.index) if d.gdr is not None]
    if p.dmabuf_gpus:
        items.append("DMA-BUF on GPU " + ",".join(str(g) for g in sorted(p.dmabuf_gpus)))
    return _few(items)


def _gdr_pairs(p: ProcessLog) -> str:
    items = []
    for pair in sorted(p.net_pairs.values(), key=lambda x: (x.netdev, x.gpu)):
        state = {"on": "on", "pci": "on over PCIe (C2C)", "off": "off",
                 "mixed": f"on for {pair.gdr} of {pair.connections}"}[pair.state]
        items.append(f"GPU {pair.gpu}/NET {pair.netdev} {state}")
    for g in sorted(p.gdr_paths, key=repr):
        gpu = f"rank {g.rank}" if g.rank is not None else f"GPU {g.gpu}"
        mode = f" mode {g.mode}" if g.mode and g.mode != "Default" else ""
        items.append(f"{gpu}/HCA {g.hca} {'on' if g.enabled else 'off'} (distance {g.distance} "
                     f"{'<=' if g.enabled else '>'} {g.level}){mode}")
    if p.rings_gdr is not None and not items:
        items.append(f"rings GDR {p.rings_gdr[1]}")
    return _few(items)


def _queue_pairs(p: ProcessLog) -> str:
    parts = []
    if p.qp_gid_indexes:
        parts.append("GID index " + ",".join(str(g) for g in sorted(p.qp_gid_indexes)))
    if p.qp_mtus:
        parts.append("MTU " + ",".join(str(m) for m in sorted(p.qp_mtus)))
    return ", ".join(parts)


def _transports(p: ProcessLog) -> str:
    return _few([f"{k} x{n}" for k, n in sorted(p.transports.items())])


def _plugins(p: ProcessLog) -> str:
    items = [f"env {p.env_plugin}"] if p.env_plugin else []
    items += [f"{k} {v}" for k, v in sorted(p.plugins.items())]
    return _few(items)


def _few(items: Sequence[str]) -> str:
    return ", ".join(items[:_MAX_ITEMS]) + (f" ... ({len(items)} in all)" if len(items) > _MAX_ITEMS else "")
