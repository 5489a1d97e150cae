"""NIC counters source: one snapshot of the error, drop, pause and congestion counters per RDMA
port and per netdev, for the doctor to turn into rates (rocetune.doctor.nic_health).

Per RDMA port, ports/N/counters/* and ports/N/hw_counters/* (each directory listed once, then
only the counters the checks judge are read: a host with hundreds of SR-IOV ports pays for no
more). Per netdev backing a port (and any named by the caller): carrier_changes /
carrier_down_count, statistics/{rx,tx}_{bytes,errors,dropped} -- from psutil when it is there
and the root is this machine, one read for all NICs -- and `ethtool -S IF` for pause frames
and the physical-port counters. ethtool runs for physical functions only: a VF's statistics
hold no physical-port counter.

Missing files are silent (drivers differ); files that cannot be read and values that are not
numbers give a warning. The shape is documented in rocetune.model.nic_counters.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from ...errors import HostReadError, ParseError
from ...hostfs.context import ProbeContext
from ...hostfs.root import HostRoot
from ...hostfs.runners import close_runner, runner_for, start_commands
from ...model.nic_counters import (
    HW_COUNTERS,
    NETDEV_CARRIER,
    NETDEV_STATISTICS,
    PORT_COUNTERS,
    SNAPSHOT_KIND,
    SNAPSHOT_VERSION,
    wanted_ethtool,
)
from ...model.vocab import natural_key
from ..parsers._common import leading_number
from ..parsers.ethtool_stats import parse_ethtool_stats

IB = "/sys/class/infiniband"
NET = "/sys/class/net"
# What some drivers print in place of a counter they do not keep (i40iw: no PMA behind counters/).
_NOT_KEPT = ("N/A",)

# name -> (bytes_recv, bytes_sent, errin, errout, dropin, dropout), as psutil.net_io_counters gives
IoCounters = Callable[[], Dict[str, Tuple[int, int, int, int, int, int]]]


def ethtool_argv(ifname: str) -> List[str]:
    return ["ethtool", "-S", ifname]


def probe(ctx: ProbeContext, netdevs: Iterable[str] = (), io_counters: Optional[IoCounters] = None,
          clock: Callable[[], float] = time.time) -> dict:
    """The snapshot of this host (see the module doc); `netdevs` adds interfaces to the ones
    backing RDMA ports. `io_counters` replaces psutil (tests); `clock` gives the wall time."""
    now = clock()
    ports = _ports(ctx)
    names = sorted({p["netdev"] for p in ports.values() if p.get("netdev")} | set(netdevs), key=natural_key)
    return {
        "kind": SNAPSHOT_KIND,
        "version": SNAPSHOT_VERSION,
        "taken_at": {"wall": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "epoch_s": round(now, 3),
                     "uptime_s": _uptime(ctx)},
        "boot_id": ctx.attr("/proc/sys/kernel/random/boot_id"),
        "ports": ports,
        "netdevs": _netdevs(ctx, names, io_counters),
    }


def take_snapshot(root: str = "/", runner=None, netdevs: Iterable[str] = (),
                  io_counters: Optional[IoCounters] = None, clock: Callable[[], float] = time.time) -> dict:
    """A snapshot of the host under `root`, with the warnings met on the way."""
    host = HostRoot(root)
    ctx = ProbeContext(host, runner if runner is not None else runner_for(host))
    try:
        snapshot = probe(ctx, netdevs, io_counters, clock)
    finally:
        close_runner(ctx.runner)
    snapshot["warnings"] = sorted(set(ctx.status.warnings))
    return snapshot


def _uptime(ctx: ProbeContext) -> Optional[float]:
    text = ctx.text("/proc/uptime")
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        ctx.warn(f"/proc/uptime: expected seconds, got {text[:40]!r}")
        return None


def _counter_dir(ctx: ProbeContext, directory: str, names: Iterable[str], into: Dict[str, int]) -> None:
    """Read the wanted counters present in `directory` (one listing, one read each) into `into`;
    a counter already there is kept (counters/ before hw_counters/)."""
    present = set(ctx.root.listdir(directory))
    for name in names:
        if name in present and name not in into:
            value = _number(ctx, f"{directory}/{name}")
            if value is not None:
                into[name] = value


def _number(ctx: ProbeContext, path: str) -> Optional[int]:
    text = ctx.attr(path)
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    if text and not text.startswith(_NOT_KEPT):
        ctx.warn(f"{path}: expected a counter, got {text[:40]!r}")
    return None


def _ports(ctx: ProbeContext) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for dev in sorted(ctx.root.listdir(IB), key=natural_key):
        for port in sorted(ctx.root.listdir(f"{IB}/{dev}/ports"), key=natural_key):
            if not port.isdigit():
                continue
            base = f"{IB}/{dev}/ports/{port}"
            counters: Dict[str, int] = {}
            _counter_dir(ctx, f"{base}/counters", PORT_COUNTERS, counters)
            _counter_dir(ctx, f"{base}/hw_counters", HW_COUNTERS, counters)
            link_layer = ctx.attr(f"{base}/link_layer")
            out[f"{dev}/{port}"] = {
                "device": dev,
                "port": int(port),
                "netdev": _port_netdev(ctx, dev, base) if link_layer == "Ethernet" else None,
                "link_layer": link_layer,
                "rate_gbps": leading_number(ctx.attr(f"{base}/rate")),
                "counters": dict(sorted(counters.items())),
            }
    return out


def _port_netdev(ctx: ProbeContext, dev: str, base: str) -> Optional[str]:
    """The netdev of a RoCE port (its first GID's), else the parent netdev of a Soft-RoCE device.
    An unreadable GID attribute (a container hiding GIDs) is no warning: the rdma source has it."""
    try:
        ndev = ctx.root.read_text(f"{base}/gid_attrs/ndevs/0")
    except HostReadError:
        ndev = None
    if ndev and ndev.strip():
        return ndev.strip()
    return ctx.attr(f"{IB}/{dev}/parent")


def _netdevs(ctx: ProbeContext, names: List[str], io_counters: Optional[IoCounters]) -> Dict[str, dict]:
    io = _io_counters(ctx, io_counters)
    vf = {n: ctx.root.exists(f"{NET}/{n}/device/physfn") for n in names}
    physical = [n for n in names if not vf[n] and ctx.root.exists(f"{NET}/{n}")]
    start_commands(ctx.runner, [ethtool_argv(n) for n in physical])  # side by side, live
    out: Dict[str, dict] = {}
    missing_tool = False
    for name in names:
        if not ctx.root.exists(f"{NET}/{name}"):
            ctx.warn(f"{name}: no such interface under {NET}")
            continue
        sysfs: Dict[str, int] = {}
        _counter_dir(ctx, f"{NET}/{name}", NETDEV_CARRIER, sysfs)
        if name in io:
            sysfs.update(zip(NETDEV_STATISTICS, io[name]))
        else:
            _counter_dir(ctx, f"{NET}/{name}/statistics", NETDEV_STATISTICS, sysfs)
        entry = {"vf": vf[name], "sysfs": dict(sorted(sysfs.items())), "ethtool": {}}
        if not vf[name]:
            stats, found = _ethtool(ctx, name)
            entry["ethtool"] = stats
            missing_tool = missing_tool or not found
        out[name] = entry
    if missing_tool:
        ctx.warn("no ethtool output (not installed, or not recorded): pause frames and physical-port "
                 "counters were not read")
    return out


def _ethtool(ctx: ProbeContext, name: str) -> Tuple[Dict[str, int], bool]:
    res = ctx.runner.run(ethtool_argv(name))
    if not res.found:
        return {}, False
    if not res.ok:
        reason = (res.stderr or res.reason or "").strip().splitlines()
        ctx.warn(f"ethtool -S {name} failed (exit {res.returncode})" + (f": {reason[0][:120]}" if reason else ""))
        return {}, True
    try:
        parsed = parse_ethtool_stats(res.stdout)
    except ParseError as exc:
        ctx.warn(f"{name}: {exc.message}")
        return {}, True
    for warning in parsed["warnings"]:
        ctx.warn(f"{name}: {warning}")
    return {k: v for k, v in sorted(parsed["counters"].items()) if wanted_ethtool(k)}, True


def _io_counters(ctx: ProbeContext, io_counters: Optional[IoCounters]) -> Dict[str, tuple]:
    """Per-NIC byte, error and drop counters in one read (psutil reads /proc/net/dev) -- only
    for this machine's own root; {} sends every netdev to sysfs."""
    if io_counters is not None:
        return dict(io_counters())
    if not ctx.root.is_live:
        return {}
    try:
        import psutil  # optional: the distribution's, when installed
    except ImportError:
        return {}
    try:
        stats = psutil.net_io_counters(pernic=True)
    except Exception as exc:  # psutil raises its own errors on odd /proc contents
        ctx.warn(f"psutil.net_io_counters failed ({type(exc).__name__}): reading sysfs instead")
        return {}
    return {name: (s.bytes_recv, s.bytes_sent, s.errin, s.errout, s.dropin, s.dropout)
            for name, s in stats.items()}
