"""Compare what an NCCL log shows NCCL used with the environment rocetune planned.

    differences = compare_with_plan(read_log(text), plan_env)

Each LogDifference has a stable id from DIFFERENCES (kebab-case, one line of doc and a fix each),
a severity, the subject it is about (a device, a variable, a WARN's file:line), the log lines
that show it, and the processes (host:pid) it was seen in. One finding seen in many processes is
one LogDifference, so a 1000-rank log gives a short answer. The order is fixed: severity, id, subject.

What a log can and cannot show: NCCL prints the integer variables it reads ("set by environment
to N.", misc/param.cc) and a fixed set of string ones (ECHOED_STRINGS), and only when the ENV
subsystem is logged (NCCL_DEBUG_SUBSYS includes ENV; the default INIT,BOOTSTRAP,ENV does). It
reads many variables only when it needs them (NCCL_IB_* only over IB, NCCL_IB_GID_INDEX when it
connects), so a missing one is a warning, not an error. Other variables it reads silently; the
log cannot say whether the job got them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from . import log_lines as L
from . import releases
from .catalog import load_catalog
from .log_model import Evidence, NcclLogReport, ProcessLog
from .syntax import ib_hca_entries, ib_hca_selects, strtoll
from .topo_paths import path_name
from .versions import parse_version


class DifferenceKind(NamedTuple):
    severity: str   # the usual one; gdr-disabled is an error only when the plan asks for GDR
    doc: str
    fix: str


DIFFERENCES: Dict[str, DifferenceKind] = {
    "nccl-log-socket-fallback": DifferenceKind(
        "error", "the plan runs NCCL over RDMA (NCCL_IB_*), but NCCL used its Socket transport",
        "check that the job sees the RDMA devices (/dev/infiniband, NCCL_IB_HCA names) and that "
        "NCCL_IB_DISABLE/NCCL_NET are not set against the plan"),
    "nccl-log-network-differs": DifferenceKind(
        "error", "NCCL used another network than the plan's NCCL_NET names",
        "set NCCL_NET as planned, or remove the net plugin the job loads (NCCL_NET_PLUGIN)"),
    "nccl-log-network-unseen": DifferenceKind(
        "info", "the log has no 'Using network' line for a process: its network cannot be checked",
        "capture the log with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including INIT"),
    "nccl-log-device-excluded": DifferenceKind(
        "error", "NCCL used an RDMA device port that the plan's NCCL_IB_HCA does not select",
        "make the job use the planned NCCL_IB_HCA (a conflicting value from the job's environment "
        "or nccl.conf wins over a later one)"),
    "nccl-log-device-unused": DifferenceKind(
        "warning", "an RDMA device the plan's NCCL_IB_HCA names is not among those NCCL used",
        "check the port is ACTIVE and visible in the job (ibv_devinfo inside the container)"),
    "nccl-log-gdr-disabled": DifferenceKind(
        "warning", "NCCL runs without GPUDirect RDMA on a device: data is staged through host memory",
        "load nvidia_peermem (or use DMA-BUF: kernel >= 5.12 with the open GPU driver) and check "
        "NCCL_NET_GDR_LEVEL"),
    "nccl-log-gdr-path-disabled": DifferenceKind(
        "warning", "NCCL turned GPUDirect RDMA off for a GPU-NIC pair: their path is beyond the GDR level",
        "give each GPU a NIC on its own PCIe switch (PIX/PXB); raising NCCL_NET_GDR_LEVEL past the default is a "
        "choice to measure, not a fix (GDR through the CPU is slower on some platforms)"),
    "nccl-log-gid-index-differs": DifferenceKind(
        "error", "NCCL's queue pairs use another GID index than the plan's NCCL_IB_GID_INDEX",
        "make the job get the planned NCCL_IB_GID_INDEX, or re-plan on this host (GID tables differ "
        "per node and per container)"),
    "nccl-log-var-differs": DifferenceKind(
        "error", "NCCL read a variable with another value than the plan's",
        "find where the other value comes from: the job's environment, ~/.nccl.conf or NCCL_CONF_FILE, "
        "then /etc/nccl.conf (NCCL reads them in that order and never overwrites)"),
    "nccl-log-var-invalid": DifferenceKind(
        "error", "NCCL could not read a variable's value and used its default",
        "write the value as NCCL reads it (an integer, strtoll base 0)"),
    "nccl-log-var-not-read": DifferenceKind(
        "warning", "NCCL logs its variables, but not this planned one: the job did not get it, or "
        "NCCL had no use for it in this run", "export the plan's env file in the job's own environment"),
    "nccl-log-env-not-logged": DifferenceKind(
        "info", "the log has no ENV lines: which variables NCCL read cannot be checked",
        "capture the log with NCCL_DEBUG_SUBSYS including ENV (e.g. INIT,ENV,NET,GRAPH)"),
    "nccl-log-var-not-echoed": DifferenceKind(
        "info", "NCCL reads these planned variables without logging them: a log cannot confirm them",
        "check them in the job's environment (e.g. /proc/<pid>/environ)"),
    "nccl-log-var-unplanned": DifferenceKind(
        "info", "NCCL read a variable that the plan does not set (from the job's environment or a "
        "nccl.conf)", "keep it if it is meant; otherwise remove it where it is set"),
    "nccl-log-warn": DifferenceKind(
        "warning", "NCCL printed a WARN", "read the WARN line; NCCL's troubleshooting guide lists most"),
    "nccl-log-version-mixed": DifferenceKind(
        "warning", "the processes of one job loaded different NCCL releases",
        "make every node load the same libnccl (the plan is for one release)"),
    "nccl-log-version-differs": DifferenceKind(
        "warning", "the job ran another NCCL release than the one the plan was made for",
        "plan for the release the job loads (rocetune env --nccl-version X.Y.Z), or make the job load the "
        "library the plan was made for: release-gated settings and defaults differ between releases"),
    "nccl-log-gdr-off": DifferenceKind(
        "error", "NCCL's network connections ran without GPUDirect RDMA (no '/GDRDMA' on their lines)",
        "load nvidia_peermem (or use DMA-BUF: kernel >= 5.12 with the open GPU driver), keep each GPU's "
        "NIC at PIX/PXB, and check NCCL_NET_GDR_LEVEL; NCCL_DEBUG_SUBSYS=INIT,NET says why per NIC"),
    "nccl-log-net-mismatch": DifferenceKind(
        "error", "ranks saw different numbers of network devices and NCCL went on "
        "(NCCL_IGNORE_NET_MISMATCH=1, the default from 2.30.3)",
        "find the rank whose NIC did not open (permissions, /dev/infiniband in the container, a port "
        "down); run preflight with NCCL_IGNORE_NET_MISMATCH=0 so such a job stops at init instead of hanging"),
    "nccl-log-env-plugin": DifferenceKind(
        "warning", "NCCL loaded an env plugin: every variable NCCL read came through it, and it may "
        "answer other values than the environment rocetune wrote",
        "check what the env plugin (NCCL_ENV_PLUGIN) returns for the plan's variables, or unset "
        "NCCL_ENV_PLUGIN for jobs that must run with the plan"),
    "nccl-log-gid-changed": DifferenceKind(
        "error", "a port's GID table changed during the job and this NCCL keeps the GID it cached",
        "find what moved the port's address (a DHCP renewal, a netplan or NetworkManager reapply, a "
        "container's macvlan, a port flap) and keep it still; NCCL 2.31.2 refreshes the GID itself, older "
        "releases need the communicator or the job restarted"),
    "nccl-log-gid-refreshed": DifferenceKind(
        "warning", "a port's GID table changed during the job; NCCL refreshed the GID it uses",
        "find what moved the port's address: the job went on, but a pinned NCCL_IB_GID_INDEX or a peer "
        "that cached the old GID may not"),
    "nccl-log-gid-refresh-failed": DifferenceKind(
        "error", "a port's GID table changed and NCCL could not read it again: NCCL marked the device fatal",
        "take the node out of jobs and check the port (ibv_devinfo, show_gids, the kernel log)"),
    "nccl-log-port-down": DifferenceKind(
        "warning", "a port went down during the job (IB async event 'port error')",
        "check the link (cable, transceiver, switch port) and the kernel log; connections on the port break "
        "unless NCCL's port failover or recovery carries them"),
    "nccl-log-speed-change": DifferenceKind(
        "warning", "a port's link speed changed during the job", "check the link's lanes, cable and switch port"),
    "nccl-log-device-fatal": DifferenceKind(
        "error", "an RDMA device reported a fatal async event during the job",
        "take the node out of jobs and check the device (firmware, kernel log, mlxlink)"),
    "nccl-log-diag": DifferenceKind(
        "warning", "NCCL's diagnostics (NCCL_RUN_DIAGNOSTICS, RAS diagnostics) reported a condition to review",
        "read the DIAG line: it names the ranks, the check and what to inspect"),
    "nccl-log-attn": DifferenceKind(
        "info", "NCCL printed a notice (ATTN)", "read the ATTN line"),
    "nccl-log-net-plugin": DifferenceKind(
        "warning", "a net plugin carried the traffic the plan gave to NCCL's own IB transport",
        "set NCCL_NET_PLUGIN=none (or NCCL_NET=IB) where the plan's NCCL_IB_* settings must apply, "
        "or plan for the plugin"),
}

# String variables NCCL prints when it reads them (NCCL v2.28.9-1: "NCCL_X set by environment to"
# in bootstrap.cc, graph/{paths,search,topo,tuning}.cc, init.cc, misc/{socket,utils}.cc,
# plugin/*.cc, transport/net_ib.cc; "NCCL_X set to" in net_ib.cc, socket.cc, bootstrap.cc).
ECHOED_STRINGS = frozenset((
    "NCCL_ALGO", "NCCL_COMM_ID", "NCCL_ENV_PLUGIN", "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_FILE",
    "NCCL_HOSTID", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE", "NCCL_IB_HCA", "NCCL_LAUNCH_MODE",
    "NCCL_NETDEVS_POLICY", "NCCL_NET_GDR_LEVEL", "NCCL_NET_PLUGIN", "NCCL_OOB_NET_IFNAME",
    "NCCL_P2P_LEVEL", "NCCL_PROFILER_PLUGIN", "NCCL_PROTO", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_IFNAME",
    "NCCL_THREAD_THRESHOLDS", "NCCL_TOPO_DUMP_FILE", "NCCL_TOPO_FILE", "NCCL_TUNER_PLUGIN",
))
_LEVELS = ("NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL")
# graph/paths.cc ncclGetLevel (v2.18.3-1 .. v2.28.9-1): a number is an old-style level
_OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
_MAX_EVIDENCE = 3


@dataclass(frozen=True)
class LogDifference:
    id: str
    severity: str
    subject: str
    message: str
    evidence: Tuple[str, ...]
    fix: str
    processes: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        return {"id": self.id, "severity": self.severity, "subject": self.subject, "message": self.message,
                "evidence": list(self.evidence), "fix": self.fix, "processes": list(self.processes)}


@dataclass(frozen=True)
class PlanFacts:
    """What the plan knows beyond its env: the NCCL release it was made for (and from what), whether
    it expects GPUDirect RDMA (True, False, None: cannot tell), and the RDMA ports it left out, each
    with why (`name:port` or a bare device name)."""

    nccl_version: Optional[str] = None
    nccl_from: str = ""
    gdr_expected: Optional[bool] = None
    gdr_why: str = ""
    excluded: Tuple[Tuple[str, str], ...] = ()
    gpus: Optional[int] = None  # how many GPUs the host has; None: not known


def compare_with_plan(report: NcclLogReport, plan_env: Mapping[str, str],
                      facts: Optional[PlanFacts] = None) -> List[LogDifference]:
    c = _Collector(len(report.processes))
    plan = {k: str(v) for k, v in plan_env.items()}
    facts = facts or PlanFacts()
    for p in report.processes:
        _network(c, p, plan)
        _devices(c, p, plan, facts)
        _gdr(c, p, plan, facts)
        _gdr_connections(c, p, plan, facts)
        _gid(c, p, plan)
        _env(c, p, plan)
        _mismatch_and_plugins(c, p, plan)
    for p in report.processes:
        _port_events(c, p, plan)
    for w in report.warnings:
        if w.level == "ATTN":
            c.add("nccl-log-attn", w.where, w.process, [w.evidence], f"NCCL ATTN at {w.where}: {w.message}")
            continue
        c.add("nccl-log-warn", w.where, w.process, [w.evidence], f"NCCL {w.level} at {w.where}: {w.message}",
              severity="error" if w.level == "ERROR" else None)
    _diag(c, report)
    if len(report.versions) > 1:
        c.add("nccl-log-version-mixed", "NCCL version", "", [report.version_evidence[v] for v in report.versions
                                                              if v in report.version_evidence],
              f"the log shows NCCL {', '.join(report.versions)}")
    _version(c, report, facts)
    return c.result()


def _port_events(c: _Collector, p: ProcessLog, plan: Mapping[str, str]) -> None:
    """What NCCL's IB async thread said of the ports during the job (log_lines.port_event), graded by the
    process's release where the release decides what follows (releases: gid-change-refresh,
    roce-port-recovery)."""
    version = parse_version(p.version)
    vtext = f"NCCL {p.version}" if p.version else "this NCCL"
    recovery = p.env.get("NCCL_IB_RESILIENCY_PORT_RECOVERY")
    recovery_on = recovery is not None and strtoll(recovery.value)[0] != 0
    if recovery is None and "NCCL_IB_RESILIENCY_PORT_RECOVERY" in plan:
        recovery_on = strtoll(plan["NCCL_IB_RESILIENCY_PORT_RECOVERY"])[0] != 0
    roce = {(d.name, d.port) for d in p.ib_devices if d.link_layer == "RoCE"}
    for e, ev in p.port_events:
        subject = f"{e.device}:{e.port}"
        if e.kind == "gid-changed":
            keeps = releases.gate("gid-change-refresh", version) is not True
            if keeps:
                c.add("nccl-log-gid-changed", subject, p.key, [ev],
                      f"the GID table of {subject} changed during the job; {vtext} keeps the GID it cached, so "
                      "connections on this port that need the moved GID fail (NVIDIA/nccl#1333, #2157)")
        elif e.kind == "gid-refreshed":
            c.add("nccl-log-gid-refreshed", subject, p.key, [ev],
                  f"the GID table of {subject} changed during the job and NCCL refreshed its GID ({e.detail})")
        elif e.kind == "gid-refresh-failed":
            c.add("nccl-log-gid-refresh-failed", subject, p.key, [ev],
                  f"the GID table of {subject} changed and NCCL could not read it again: it marked the device "
                  "fatal, and the job's connections on it fail")
        elif e.kind == "port-error":
            severity, why = None, ""
            if recovery_on and (e.device, e.port) in roce:
                stuck = releases.gate("roce-port-recovery", version)
                if stuck:
                    severity = "error"
                    why = (f"; NCCL_IB_RESILIENCY_PORT_RECOVERY=1 on RoCE with {vtext}: when the flap moves the "
                           "port's GIDs, recovery keeps the cached one and does not complete (NVIDIA/nccl#2157)")
                elif stuck is False and releases.gate("gid-change-refresh", version):
                    why = (f"; {vtext} tries to recover the port up to 20 times and refreshes its GID on a "
                           "GID-change event")
            back = next((ev2 for e2, ev2 in p.port_events
                         if e2.kind == "port-active" and (e2.device, e2.port) == (e.device, e.port) and
                         ev2.line > ev.line), None)
            came = f" and came back up (line {back.line}): a flap" if back else ""
            c.add("nccl-log-port-down", subject, p.key, [ev, back], f"{subject} went down during the job{came}{why}",
                  severity=severity)
        elif e.kind == "speed-change":
            old, new = L.speed_change(e.detail)
            slower = old is not None and new is not None and new < old
            c.add("nccl-log-speed-change", subject, p.key, [ev],
                  f"{subject} changed link speed during the job: {e.detail}"
                  + ("; NCCL_IB_EVENT_BASED_LB weighs the port by its new speed" if
                     "NCCL_IB_EVENT_BASED_LB" in p.env else ""),
                  severity=None if slower or new is None else "info")
        elif e.kind == "device-fatal":
            c.add("nccl-log-device-fatal", subject, p.key, [ev], f"{subject} reported a fatal event: {e.detail}")


def _diag(c: _Collector, report: NcclLogReport) -> None:
    for d, ev in report.diag:
        if d.tag != "INFO":
            continue
        who = f"{d.host}:{d.pid}" if d.host else ""
        c.add("nccl-log-diag", d.check or "diagnostics", who, [ev], f"NCCL DIAG: {d.text}")


def _version(c: _Collector, report: NcclLogReport, facts: PlanFacts) -> None:
    want = parse_version(facts.nccl_version)
    if want is None:
        return
    for text in report.versions:
        got = parse_version(text)
        if got is None or got == want:
            continue
        who = sorted(p.key for p in report.processes if p.version_text == text)
        ev = report.version_evidence.get(text)
        came = f" ({facts.nccl_from})" if facts.nccl_from else ""
        c.add("nccl-log-version-differs", text, "", [ev] if ev else [],
              f"the job ran NCCL {text}; the plan was made for {facts.nccl_version}{came}"
              + (f" (in {len(who)} process(es): {', '.join(who[:3])}{' ...' if len(who) > 3 else ''})" if who else ""),
              severity="warning")


def _plan_wants_rdma(plan: Mapping[str, str]) -> bool:
    if strtoll(plan.get("NCCL_IB_DISABLE", "0"))[0] == 1:
        return False
    net = plan.get("NCCL_NET", "").lower()
    if net:
        return net == "ib"
    return any(k.startswith("NCCL_IB_") and k != "NCCL_IB_DISABLE" for k in plan)


def _network(c: _Collector, p: ProcessLog, plan: Mapping[str, str]) -> None:
    if p.network is None:
        c.add("nccl-log-network-unseen", "network", p.key, [],
              "no 'Using network' line: the log does not show which network NCCL used")
        return
    ev = [p.network_evidence] if p.network_evidence else []
    if p.transport == "socket" and _plan_wants_rdma(plan):
        more = [e for e in (p.ib_no_device, p.socket_evidence) if e is not None]
        why = " after 'NET/IB : No device found'" if p.ib_no_device else ""
        c.add("nccl-log-socket-fallback", "network", p.key, ev + more,
              f"NCCL used Socket{why}; the plan sets "
              f"{', '.join(sorted(k for k in plan if k.startswith('NCCL_IB_') or k == 'NCCL_NET'))}")
        return
    want = plan.get("NCCL_NET")
    if want and want.lower() != p.network.lower():
        c.add("nccl-log-network-differs", "network", p.key, ev,
              f"NCCL used network {p.network!r}; the plan sets NCCL_NET={want}")


def _devices(c: _Collector, p: ProcessLog, plan: Mapping[str, str], facts: PlanFacts) -> None:
    if not p.ib_devices or p.transport == "socket":
        return
    hca = plan.get("NCCL_IB_HCA")
    any_port = releases.gate("ib-hca-empty-port-any", parse_version(p.version)) is True
    why_out = {name: why for name, why in facts.excluded}
    for d in p.ib_devices:
        if d.port < 0:
            continue
        why = why_out.get(f"{d.name}:{d.port}") or why_out.get(d.name)
        if why:
            c.add("nccl-log-device-excluded", f"{d.name}:{d.port}", p.key, [d.evidence] if d.evidence else [],
                  f"NCCL used {d.name} port {d.port} ({d.link_layer}), which the plan left out: {why}")
        elif hca is not None and not ib_hca_selects(hca, d.name, d.port, any_port):
            c.add("nccl-log-device-excluded", f"{d.name}:{d.port}", p.key, [d.evidence] if d.evidence else [],
                  f"NCCL used {d.name} port {d.port} ({d.link_layer}), which NCCL_IB_HCA={hca} does not select")
    if hca is None:
        return
    exclude, exact, entries = ib_hca_entries(hca, any_port)
    if exclude:
        return
    for name, port in entries:
        used = any((d.name == name if exact else d.name.startswith(name)) and (port == -1 or d.port in (-1, port))
                   for d in p.ib_devices)
        if not used:
            what = f"{name}:{port}" if port != -1 else name
            ev = [p.ib_devices[0].evidence] if p.ib_devices[0].evidence else []
            c.add("nccl-log-device-unused", what, p.key, ev,
                  f"NCCL_IB_HCA={hca} names {what}, but NCCL used only "
                  f"{', '.join(f'{d.name}:{d.port}' for d in p.ib_devices)}")


def _gdr_level(plan: Mapping[str, str]) -> Optional[str]:
    return _level_name(plan["NCCL_NET_GDR_LEVEL"]) if "NCCL_NET_GDR_LEVEL" in plan else None


# A host without a GPU has no GPUDirect RDMA to turn on: the module to load is not the fix.
_NO_GPU_FIX = ("this host has no GPU, so there is no GPUDirect RDMA to enable here: read the log "
               "against the GPU node the job ran on (`rocetune doctor --nccl-log` there)")


def _gdr(c: _Collector, p: ProcessLog, plan: Mapping[str, str], facts: PlanFacts) -> None:
    if p.transport == "socket":
        return
    level = _gdr_level(plan)
    fix = _NO_GPU_FIX if facts.gpus == 0 else None
    for d in p.ib_devices:
        if d.gdr is False:
            severity = "error" if level is not None and level != "LOC" else None
            asked = f"; the plan sets NCCL_NET_GDR_LEVEL={plan['NCCL_NET_GDR_LEVEL']}" if level else ""
            why = " (no peer-memory module)" if d.gdr_reason == "no module" else ""
            c.add("nccl-log-gdr-disabled", d.name, p.key, [d.gdr_evidence] if d.gdr_evidence else [],
                  f"GPU Direct RDMA is disabled for {d.name}{why}{asked}", severity=severity, fix=fix)
    for g in p.gdr_paths:
        if g.enabled:
            continue
        asked = f" (the plan sets NCCL_NET_GDR_LEVEL={plan['NCCL_NET_GDR_LEVEL']})" if level else ""
        gpu = f"rank {g.rank} (GPU/{g.gpu})" if g.rank is not None else f"GPU {g.gpu}"
        version = parse_version(p.version)
        far, lim = path_name(g.distance, version), path_name(g.level, version)
        named = ""
        if far and lim:
            named = f" ({far} beyond {lim} in NCCL {p.version})"
        elif not p.version:
            named = " (numbers whose path types depend on the NCCL release, which the log does not show)"
        c.add("nccl-log-gdr-path-disabled", f"GPU {g.gpu} / HCA {g.hca}", p.key,
              [p.gdr_path_evidence[g[:3]]],
              f"GPU Direct RDMA is off for {gpu} and HCA {g.hca}: distance {g.distance} is above "
              f"level {g.level}{named}{asked}")


def _gdr_connections(c: _Collector, p: ProcessLog, plan: Mapping[str, str], facts: PlanFacts) -> None:
    """GDR off as the connection lines show it (INIT|NET: printed with NCCL's default subsystems),
    and "Connected all rings, use ring PXN %d GDR %d" (2.24.3+, INIT)."""
    if p.transport == "socket" or p.net_name == "Socket":
        return
    pairs = [x for x in p.net_pairs.values() if x.net != "Socket"]
    off = [x for x in pairs if x.state in ("off", "mixed")]
    rings_off = p.rings_gdr is not None and p.rings_gdr[1] == 0
    if not off and not rings_off:
        return
    level = _gdr_level(plan)
    if facts.gdr_expected is True or (level is not None and level != "LOC"):
        severity = "error"
        planned = f"; the plan expects it ({facts.gdr_why})" if facts.gdr_expected else \
            f"; the plan sets NCCL_NET_GDR_LEVEL={plan['NCCL_NET_GDR_LEVEL']}"
    elif facts.gdr_expected is False:
        return  # as the plan foresaw: the summary shows it per pair
    else:
        severity, planned = "info", ": whether the plan expected it is not known"
    shown = sorted(off, key=lambda x: (x.netdev, x.gpu))
    listed = ", ".join(f"GPU {x.gpu} / NET {x.netdev} ({x.connections - x.gdr} of {x.connections})"
                       for x in shown[:6]) + (" ..." if len(shown) > 6 else "")
    ev = [x.no_gdr_evidence for x in shown[:2]] + [p.rings_gdr_evidence if rings_off else None]
    total = sum(x.connections - x.gdr for x in off)
    what = (f"{total} of {p.net_connections} NET connection(s) without '/GDRDMA': {listed}" if off else
            "'Connected all rings ... GDR 0'")
    known = [d.gdr for d in p.ib_devices if d.gdr is not None]
    by_distance = [g for g in p.gdr_paths if not g.enabled and g.distance is not None]
    fix = None
    if known and all(known) and by_distance:
        # every HCA says "GPU Direct RDMA Enabled": peer memory is there; NCCL turned it off per pair, by path
        g = by_distance[0]
        far, lim = path_name(g.distance, parse_version(p.version)), path_name(g.level, parse_version(p.version))
        why = f" ({far} beyond {lim})" if far and lim else ""
        what += (f"; every HCA has GPU Direct RDMA enabled, and NCCL turned it off per GPU-NIC pair because "
                 f"the path is beyond the GDR level (distance {g.distance} > {g.level}{why})")
        fix = ("peer memory is loaded: the job saw its GPUs and NICs farther apart than the plan did (a container "
               "or VM view, another GPU-NIC pairing); compare the job's topology (NCCL_TOPO_DUMP_FILE) with the "
               "plan's rather than loading a module or raising NCCL_NET_GDR_LEVEL")
    c.add("nccl-log-gdr-off", "connections", p.key, ev,
          f"GPUDirect RDMA was off for the network: {what}{planned}", severity=severity, fix=fix)


def _mismatch_and_plugins(c: _Collector, p: ProcessLog, plan: Mapping[str, str]) -> None:
    if p.net_mismatch is not None:
        lo, hi, ignored = p.net_mismatch
        tail = ("NCCL went on (NCCL_IGNORE_NET_MISMATCH=1, the default from 2.30.3): ranks with more devices "
                "have peers missing on some, and the job may hang without an error (NVIDIA/nccl#2428)"
                if ignored else "NCCL stopped the job at init (NCCL_IGNORE_NET_MISMATCH=0)")
        short = sorted(f"rank {r} has {n} of {m}" for r, (n, m) in p.net_counts.items() if n < m)
        which = f" ({', '.join(short[:4])}{' ...' if len(short) > 4 else ''})" if short else ""
        c.add("nccl-log-net-mismatch", "NET devices", p.key, [p.net_mismatch_evidence],
              f"ranks saw between {lo} and {hi} network devices{which}; {tail}",
              severity="error" if ignored else "warning")
    if p.env_plugin:
        c.add("nccl-log-env-plugin", p.env_plugin, p.key, [p.env_plugin_evidence],
              f"NCCL loaded the env plugin {p.env_plugin!r}: the variables NCCL read came from it, not "
              "necessarily from the environment or nccl.conf rocetune wrote")
    if p.transport == "plugin" and _plan_wants_rdma(plan) and not plan.get("NCCL_NET"):
        c.add("nccl-log-net-plugin", p.net_name or "network", p.key,
              [p.network_evidence] if p.network_evidence else [],
              f"the net plugin {p.net_name!r} carried the network traffic; the plan's NCCL_IB_* settings are "
              "NCCL's own IB transport's, which this plugin reads, if at all, in its own way")


def _gid(c: _Collector, p: ProcessLog, plan: Mapping[str, str]) -> None:
    if "NCCL_IB_GID_INDEX" not in plan or p.transport == "socket":
        return
    want, _ = strtoll(plan["NCCL_IB_GID_INDEX"])
    seen = False
    for d in p.ib_devices:
        if d.link_layer == "IB" or not d.gid_indexes:
            continue
        seen = True
        other = sorted(g for g in d.gid_indexes if g != want)
        if other:
            c.add("nccl-log-gid-index-differs", d.name, p.key, [d.gid_evidence] if d.gid_evidence else [],
                  f"{d.name}'s queue pairs use GID index {', '.join(map(str, other))}; the plan sets "
                  f"NCCL_IB_GID_INDEX={plan['NCCL_IB_GID_INDEX']}")
    if not seen and p.qp_gid_indexes and any(g != want for g in p.qp_gid_indexes):
        other = sorted(g for g in p.qp_gid_indexes if g != want)
        c.add("nccl-log-gid-index-differs", "queue pairs", p.key, [p.qp_gid_evidence] if p.qp_gid_evidence else [],
              f"queue pairs use GID index {', '.join(map(str, other))}; the plan sets "
              f"NCCL_IB_GID_INDEX={plan['NCCL_IB_GID_INDEX']}")


def _env(c: _Collector, p: ProcessLog, plan: Mapping[str, str]) -> None:
    catalog = load_catalog()
    for name in sorted(plan):
        if not name.startswith("NCCL_"):
            continue
        want = plan[name]
        seen = p.env.get(name)
        if seen is not None:
            if not _same_value(name, want, seen.value):
                c.add("nccl-log-var-differs", name, p.key, [seen.evidence],
                      f"NCCL read {name}={seen.value}; the plan sets {name}={want}")
            continue
        if name in p.env_invalid:
            value, default, ev = p.env_invalid[name]
            c.add("nccl-log-var-invalid", name, p.key, [ev],
                  f"NCCL could not read {name}={value} and used {default}")
            continue
        info = catalog.info(name) or {}
        ib_var = name.startswith("NCCL_IB_")
        if info.get("kind") != "int" and name not in ECHOED_STRINGS:
            c.add("nccl-log-var-not-echoed", "variables", "", [], name, join=True)
        elif ib_var and p.transport == "socket":
            continue  # over sockets NCCL has no use for NCCL_IB_*: nccl-log-socket-fallback says why
        elif p.env_lines and ib_var and p.transport == "plugin":
            c.add("nccl-log-var-not-read", name, p.key, [],
                  f"the plan sets {name}={want}; NCCL never said it read it, and the net plugin "
                  f"{p.network!r} reads NCCL_IB_* itself, if at all, without NCCL's log", severity="info")
        elif p.env_lines:
            c.add("nccl-log-var-not-read", name, p.key, [],
                  f"the plan sets {name}={want}; NCCL logged other variables but never said it read this one")
        else:
            c.add("nccl-log-env-not-logged", "NCCL_DEBUG_SUBSYS", p.key, [],
                  "no 'set by environment' line: the log was taken without the ENV subsystem")
    for name, seen in sorted(p.env.items()):
        if name not in plan:
            c.add("nccl-log-var-unplanned", name, p.key, [seen.evidence],
                  f"NCCL read {name}={seen.value}, which the plan does not set")


def _level_name(value: str) -> str:
    v = value.strip()
    if v[:1].isdigit():
        n, _ = strtoll(v)
        return _OLD_LEVELS[min(max(n, 0), len(_OLD_LEVELS) - 1)]
    return v.upper()


def _same_value(name: str, planned: str, logged: str) -> bool:
    if name in _LEVELS:
        return _level_name(planned) == logged.strip().upper()
    kind = (load_catalog().info(name) or {}).get("kind")
    if kind == "int" and logged.lstrip("-").isdigit():
        return strtoll(planned)[0] == strtoll(logged)[0]
    return planned == logged


class _Collector:
    """Differences keyed by (id, subject): the processes and evidence of each, the first message."""

    def __init__(self, nprocesses: int):
        self.nprocesses = nprocesses
        self.items: Dict[Tuple[str, str], dict] = {}

    def add(self, diff_id: str, subject: str, process: str, evidence: Sequence[Optional[Evidence]],
            message: str, severity: Optional[str] = None, join: bool = False,
            fix: Optional[str] = None) -> None:
        severity = severity or DIFFERENCES[diff_id].severity
        item = self.items.get((diff_id, subject))
        if item is None:
            item = self.items[(diff_id, subject)] = {
                "severity": severity, "messages": [], "evidence": [], "processes": [], "join": join,
                "fix": fix or DIFFERENCES[diff_id].fix}
        elif _SEVERITY_ORDER[severity] < _SEVERITY_ORDER[item["severity"]]:
            item["severity"] = severity  # the worst case seen among the processes
        if message not in item["messages"] and (join or not item["messages"]):
            item["messages"].append(message)
        if process and process not in item["processes"]:
            item["processes"].append(process)
        for e in evidence:
            if e is not None and len(item["evidence"]) < _MAX_EVIDENCE and str(e) not in item["evidence"]:
                item["evidence"].append(str(e))

    def result(self) -> List[LogDifference]:
        out = []
        for (diff_id, subject), item in self.items.items():
            kind = DIFFERENCES[diff_id]
            if item["join"]:
                message = f"{kind.doc}: {', '.join(sorted(item['messages']))}"
            else:
                message = item["messages"][0] + self._where(item["processes"])
            out.append(LogDifference(diff_id, item["severity"], subject, message, tuple(item["evidence"]),
                                  item["fix"], tuple(sorted(item["processes"]))))
        return sorted(out, key=lambda d: (_SEVERITY_ORDER.get(d.severity, 3), d.id, d.subject))

    def _where(self, processes: List[str]) -> str:
        if not processes or self.nprocesses <= 1:
            return ""
        shown = ", ".join(sorted(processes)[:3]) + (" ..." if len(processes) > 3 else "")
        return f" (in {len(processes)} of {self.nprocesses} processes: {shown})"
