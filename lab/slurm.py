#!/usr/bin/env python3
"""A real Slurm on the lab: Debian's slurmctld on a controller of its own and one slurmd per
lab host, authenticated by munge, all in the lab's namespaces.

Layout (docs/lab.md, "Slurm on the lab")::

    netns rtlab-slurmctl  198.18.0.2  hostname "slurmctl": munged + slurmctld (port 26817)
    netns rtlab-nodeNN    198.18.0.1N hostname "nodeNN":   munged + slurmd    (port 26818)

Nothing uses the machine's own Slurm or munge files or its default ports: the controller's
configuration, state, logs and munge socket live in ``/run/rocetune-lab/slurm`` (inside the
lab's state directory, so ``netns.down()`` removes them), and every daemon runs in a lab network
namespace, so ``netns.down()`` also ends every one of them even when a test dies. Each lab host gets
the same ``slurm.conf`` and munge key (``/etc/slurm/slurm.conf`` in its own private ``/etc``,
the key under its own ``/run``): inside a host ``sinfo``, ``srun`` and ``scontrol`` work as on a
cluster node. On the machine, commands go through ``Cluster.run`` (``SLURM_CONF`` set).

As a module::

    from lab import netns, slurm
    info = netns.up(4)
    with slurm.cluster(info) as c:                      # slurmctld + node01..node04, all idle
        print(c.run(["srun", "-N4", "hostname"]).stdout)  # from the machine (the submit host)
        netns.run_on("node01", "srun -N2 -l hostname")       # or from a node
        c.node("node02")                                   # {'state': 'idle', 'reason': ''}

    slurm.start(info, health_check="/etc/x/hc", health_check_interval=3, prolog="/etc/x/prolog")

Command line (what scripts/demo.sh uses)::

    python3 -m lab.slurm start [--health-check PATH --interval S] [--prolog PATH]
    python3 -m lab.slurm run sinfo -R
    python3 -m lab.slurm stop

Measured facts this rests on (Slurm 22.05, src/slurmd/slurmd/slurmd.c and req.c at
slurm-22-05-8-1): slurmd runs HealthCheckProgram when it starts, before it registers, and again
whenever slurmctld asks (every HealthCheckInterval seconds); it passes no argument, only
SLURMD_NODENAME in an otherwise empty environment (no PATH), kills it after 60 s, and only logs
its exit status. A Prolog that exits non-zero drains the node ("Prolog error").
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Union

from lab import netns

CTL_NS = netns.NS_PREFIX + "slurmctl"
CTL_NAME = "slurmctl"
CTL_IP = "198.18.0.2"
CTL_LINK = "rtl-sctl"  # its bridge port in the fabric namespace
CTLD_PORT = 26817  # off Slurm's defaults (6817, 6818): a Slurm on the machine is never reached
SLURMD_PORT = 26818
SLURM_DIR = netns.STATE_DIR / "slurm"
MUNGE_SOCKET = SLURM_DIR / "munge.socket"  # the same path inside each host, under its own /run
HOST_CONF = "/etc/slurm/slurm.conf"
HOST_CGROUP_CONF = "/etc/slurm/cgroup.conf"  # slurmd reads it from slurm.conf's directory
HOST_TOPOLOGY_CONF = "/etc/slurm/topology.conf"  # with TopologyPlugin=topology/tree, so does slurmd
HOST_KEY = str(SLURM_DIR / "munge.key")  # as on the controller; a host's /run is its own
HOST_LOG = "/var/log/slurm/slurmd.log"
HOST_PID = "/run/slurmd.pid"
PROGRAMS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "srun": "slurm-client",
            "sinfo": "slurm-client", "scontrol": "slurm-client", "munged": "munge"}
START_TIMEOUT = 60.0
PARTITION = "lab"


class SlurmError(netns.LabError):
    """Slurm on the lab could not do what was asked; one line, with the log tail that says why."""


@dataclasses.dataclass
class Cluster:
    """What `start` built: the controller's configuration and the nodes (lab host names)."""

    nodes: List[str]
    conf: Path = SLURM_DIR / "slurm.conf"
    health_check: Optional[str] = None
    health_check_interval: int = 0
    prolog: Optional[str] = None
    topology: bool = False  # TopologyPlugin=topology/tree, reading SLURM_DIR/topology.conf
    return_to_service: int = 2

    @property
    def env(self) -> Dict[str, str]:
        """The environment of a Slurm command on the machine (the controller's slurm.conf)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    @property
    def controller_log(self) -> Path:
        return SLURM_DIR / "slurmctld.log"

    def run(self, argv: Sequence[str], check: bool = True, timeout: float = 60,
            input: Optional[str] = None) -> subprocess.CompletedProcess:
        """A Slurm client command (sinfo, scontrol, srun, sbatch ...) on the machine, the submit
        host; with ``check`` a non-zero exit raises SlurmError with its last line."""
        proc = subprocess.run(list(argv), env=self.env, input=input, capture_output=True,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise SlurmError(f"`{shlex.join(argv)}` exited {proc.returncode}: "
                             f"{netns._last_line(proc.stderr) or netns._last_line(proc.stdout)}")
        return proc

    def nodes_state(self) -> Dict[str, Dict[str, str]]:
        """{node: {'state': long state in lower case ('idle', 'drained', 'idle+drain' ...),
        'reason': the reason as `sinfo -R` shows it, '' when none}}."""
        out = self.run(["sinfo", "--noheader", "--Node", "--format", "%N|%T|%E"]).stdout
        found: Dict[str, Dict[str, str]] = {}
        for line in out.splitlines():
            name, state, reason = (line.split("|", 2) + ["", ""])[:3]
            reason = "" if reason.strip() == "none" else reason.strip()
            found[name.strip()] = {"state": state.strip().lower(), "reason": reason}
        return found

    def node(self, name: str) -> Dict[str, str]:
        return self.nodes_state().get(name, {"state": "unknown", "reason": ""})

    def wait(self, what: str, ready: Callable[[Dict[str, Dict[str, str]]], bool],
             timeout: float = 60) -> Dict[str, Dict[str, str]]:
        """Poll `nodes_state()` until ``ready(states)``; SlurmError naming ``what`` and the
        last states seen when it does not come within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        states: Dict[str, Dict[str, str]] = {}
        while True:
            with contextlib.suppress(SlurmError, subprocess.TimeoutExpired):
                states = self.nodes_state()
                if ready(states):
                    return states
            if time.monotonic() > deadline:
                raise SlurmError(f"{what}: not within {timeout:g}s; nodes: {states}")
            time.sleep(0.5)

    def load_topology(self, text: str, timeout: float = 30.0) -> str:
        """Write topology.conf beside slurm.conf, have slurmctld read it again (`scontrol
        reconfigure`) and return what slurmctld logged while it did (its log from the reconfigure
        to the line that says it completed)."""
        netns._write(SLURM_DIR / "topology.conf", text)
        for name in self.nodes:
            write_file(name, HOST_TOPOLOGY_CONF, text)
        log = self.controller_log
        start = log.stat().st_size if log.exists() else 0
        self.run(["scontrol", "reconfigure"])
        deadline = time.monotonic() + timeout
        while True:
            with open(log, "rb") as f:
                f.seek(start)
                said = f.read().decode(errors="replace")
            if "_slurm_rpc_reconfigure_controller: completed" in said:
                return said
            if time.monotonic() > deadline:
                raise SlurmError(f"slurmctld did not finish reconfiguring in {timeout:g} s: {said[-500:]}")
            time.sleep(0.2)

    def srun(self, args: Sequence[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """``srun ARGS`` from the machine, in the lab partition."""
        return self.run(["srun", "--partition", PARTITION, *args], check=check, timeout=timeout)

    def slurmd_log(self, node: str) -> str:
        """The node's slurmd log (what it said about its health check and prolog runs)."""
        path = _upper_path(node, HOST_LOG)
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        stop()


def _upper_path(node: str, path: str) -> Path:
    info = netns.current()
    if info is None:
        raise SlurmError("the lab is not up")
    return info.upper(node) / path.lstrip("/")


def check_programs() -> None:
    missing = sorted({pkg for prog, pkg in PROGRAMS.items() if netns._which(prog) is None})
    if missing:
        raise SlurmError(f"Slurm on the lab needs {' '.join(missing)} (scripts/bootstrap.sh installs them)")


# slurmd loads a cgroup plugin at start whatever else is configured (slurmd.c, 22.05), and
# "autodetect" fails in a lab host, which has no cgroup file system. cgroup/v1's init only
# sets up its tables; with proctrack/linuxproc and task/none nothing ever creates a cgroup
# (cgroup/v2 would move slurmd into cgroups of the machine's own hierarchy).
CGROUP_CONF = "# Written by the lab's Slurm (lab/slurm.py).\nCgroupPlugin=cgroup/v1\n"


def slurm_conf(nodes: Sequence[str], ips: Dict[str, str], health_check: Optional[str],
               interval: int, prolog: Optional[str], topology: bool = False, return_to_service: int = 2) -> str:
    """The one slurm.conf of the controller and every node (slurm.conf(5), Slurm 22.05)."""
    lines = [
        "# Written by lab/slurm.py for the lab's Slurm; removed with the lab.",
        "ClusterName=rtlab",
        f"SlurmctldHost={CTL_NAME}({CTL_IP})",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={MUNGE_SOCKET}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={SLURM_DIR / 'state'}",
        f"SlurmctldPidFile={SLURM_DIR / 'slurmctld.pid'}",
        f"SlurmctldLogFile={SLURM_DIR / 'slurmctld.log'}",
        f"SlurmdPidFile={HOST_PID}",
        "SlurmdSpoolDir=/var/spool/slurmd",
        f"SlurmdLogFile={HOST_LOG}",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        # No cgroups in the lab hosts: plain process tracking, no task binding or accounting.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/backfill",
        # The nodes share the machine's CPUs: the configured count is what counts.
        "SlurmdParameters=config_overrides",
        f"ReturnToService={return_to_service}",
        "SlurmdTimeout=30",
        "MessageTimeout=10",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=10",
        "DebugFlags=NO_CONF_HASH",
    ]
    if health_check:
        lines += [f"HealthCheckProgram={health_check}", f"HealthCheckInterval={interval}",
                  "HealthCheckNodeState=ANY"]
    if prolog:
        lines.append(f"Prolog={prolog}")
    if topology:
        lines.append("TopologyPlugin=topology/tree")
    for name in nodes:
        lines.append(f"NodeName={name} NodeAddr={ips[name]} NodeHostname={name} CPUs=2 RealMemory=256 State=UNKNOWN")
    lines.append(f"PartitionName={PARTITION} Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def start(info: Optional[netns.LabInfo] = None, *, nodes: Optional[Sequence[str]] = None,
          health_check: Optional[str] = None, health_check_interval: int = 0,
          prolog: Optional[str] = None, timeout: float = START_TIMEOUT,
          wait_idle: bool = True, topology: Optional[str] = None, return_to_service: int = 2) -> Cluster:
    """Start munge and slurmctld on the controller namespace, then munge and slurmd on each of
    ``nodes`` (default: every lab host), and wait until every node has registered (with
    ``wait_idle``: is idle, drained or draining, i.e. no longer unknown or down).

    ``health_check`` and ``prolog`` are paths inside the hosts (write them with
    ``write_file``); HealthCheckProgram runs only with ``health_check_interval`` > 0, as in
    Slurm itself. ``topology``: the text of a topology.conf, with TopologyPlugin=topology/tree
    (Cluster.load_topology replaces it later). ``return_to_service`` is slurm.conf's ReturnToService: with 2 (the default
    here) a DOWN node comes back when it next registers, an operator's DOWN too; 1 keeps a DOWN
    that was not for a node not responding. A Slurm already started on the lab is stopped first. On failure what was
    started is stopped and SlurmError says why (the log's last lines)."""
    netns._require_root()
    check_programs()
    info = info or netns.current()
    if info is None:
        raise SlurmError("the lab is not up (netns.up(N) first)")
    if info.systemd:
        raise SlurmError("Slurm on the lab runs on overlay-mode hosts, not systemd ones")
    names = list(nodes or info.names)
    if health_check and health_check_interval <= 0:
        raise SlurmError("a HealthCheckProgram runs only with a HealthCheckInterval above 0")
    stop()
    cluster = Cluster(names, health_check=health_check, health_check_interval=health_check_interval,
                      prolog=prolog, topology=topology is not None, return_to_service=return_to_service)
    try:
        if topology is not None:
            SLURM_DIR.mkdir(parents=True, exist_ok=True)
            netns._write(SLURM_DIR / "topology.conf", topology)
        _start(info, cluster, timeout, wait_idle)
    except BaseException:
        with contextlib.suppress(Exception):
            stop()
        raise
    return cluster


def _start(info: netns.LabInfo, cluster: Cluster, timeout: float, wait_idle: bool) -> None:
    (SLURM_DIR / "state").mkdir(parents=True, exist_ok=True)
    # munged refuses a socket that not every user can reach: every directory above it must be
    # searchable (not listable). The lab's private files keep their own modes (0600 keys).
    os.chmod(netns.STATE_DIR, 0o711)
    os.chmod(SLURM_DIR, 0o711)
    key = os.urandom(1024)
    netns._write(SLURM_DIR / "munge.key", key, 0o600)
    conf = slurm_conf(cluster.nodes, {n: info.ip(n) for n in cluster.nodes}, cluster.health_check,
                      cluster.health_check_interval, cluster.prolog, cluster.topology, cluster.return_to_service)
    netns._write(cluster.conf, conf)
    netns._write(SLURM_DIR / "cgroup.conf", CGROUP_CONF)
    _start_controller()
    topology = (SLURM_DIR / "topology.conf").read_text() if cluster.topology else None
    for name in cluster.nodes:
        _start_node(name, conf, key, topology)
    deadline = time.monotonic() + timeout
    settled = ("idle", "drained", "draining", "allocated", "mixed", "idle+drain", "drng")

    def registered(states: Dict[str, Dict[str, str]]) -> bool:
        return all(states.get(n, {}).get("state", "").split("+")[0] in settled or
                   ("drain" in states.get(n, {}).get("state", "") and not wait_idle) for n in cluster.nodes)

    if wait_idle:
        try:
            cluster.wait("every node registered", registered, max(1.0, deadline - time.monotonic()))
        except SlurmError as exc:
            raise SlurmError(f"{exc}; slurmctld log: {_tail(cluster.controller_log)}") from None


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


# The controller: its own network namespace on the lab bridge and its own UTS name (slurmctld
# refuses to run where the host name is not its SlurmctldHost).
CONTROLLER_INIT = r"""
set -eu
dir=$1 socket=$2 conf=$3
hostname slurmctl
/usr/sbin/munged --socket="$socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed"
exec /usr/sbin/slurmctld -D -i -f "$conf"
"""


def _start_controller() -> None:
    netns._ip("netns", "add", CTL_NS)
    netns._ip("link", "set", "lo", "up", netns=CTL_NS)
    netns._ip("link", "add", CTL_LINK, "mtu", str(netns.FABRIC_MTU), "type", "veth", "peer", "name",
            netns.HOST_IF, "netns", CTL_NS, netns=netns.FABRIC_NS)
    netns._ip("link", "set", CTL_LINK, "master", netns.BRIDGE, "up", netns=netns.FABRIC_NS)
    netns._ip("link", "set", netns.HOST_IF, "address", netns._host_mac(CTL_IP), "up", netns=CTL_NS)
    netns._ip("addr", "add", f"{CTL_IP}/{netns.LAB_NET.prefixlen}", "dev", netns.HOST_IF, netns=CTL_NS)
    argv = ["setsid", "-f", "nsenter", f"--net={netns.NETNS_DIR / CTL_NS}", "--",
            "unshare", "--uts", "--", "/bin/sh", "-c", CONTROLLER_INIT, "rtlab-slurmctl",
            str(SLURM_DIR), str(MUNGE_SOCKET), str(SLURM_DIR / "slurm.conf")]
    with open(SLURM_DIR / "console.log", "wb") as log:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    if proc.returncode != 0:
        raise SlurmError(f"slurmctld could not start: {_tail(SLURM_DIR / 'console.log')}")


# A node: its own munged (same key) under its private /run, then slurmd, which forks into the
# background; both are processes of the host and end with it. The spool starts empty: each
# cluster's slurmctld numbers jobs from 1 again, and a slurmd that kept an earlier cluster's
# credential state takes job 1 for one it has seen ("reissued job credential") and runs no prolog.
NODE_INIT = """
set -eu
rm -rf /var/spool/slurmd
mkdir -p /var/spool/slurmd /var/log/slurm
chmod 0711 /run/rocetune-lab {socket_dir}
/usr/sbin/munged --socket={socket} --key-file={key} --pid-file={socket_dir}/munged.pid \
    --log-file={socket_dir}/munged.log --seed-file={socket_dir}/munged.seed
: > {log}
/usr/sbin/slurmd -f {conf}
"""


def _start_node(name: str, conf: str, key: bytes, topology: Optional[str] = None) -> None:
    write_file(name, HOST_CONF, conf)
    if topology is not None:  # slurmd reads it too, and does not start without it
        write_file(name, HOST_TOPOLOGY_CONF, topology)
    write_file(name, HOST_CGROUP_CONF, CGROUP_CONF)
    write_file(name, HOST_KEY, key, 0o600)
    script = NODE_INIT.format(socket_dir=shlex.quote(str(MUNGE_SOCKET.parent)), socket=shlex.quote(str(MUNGE_SOCKET)),
                              key=HOST_KEY, log=HOST_LOG, conf=HOST_CONF)
    proc = netns.run_on(name, script, check=False, timeout=60)
    if proc.returncode != 0:
        raise SlurmError(f"{name}: slurmd could not start: {netns._last_line(proc.stderr) or netns._last_line(proc.stdout)}")


def write_file(host: str, path: str, content: Union[str, bytes], mode: int = 0o644) -> None:
    """Write a file inside a lab host, atomically (temporary file, then rename), with ``mode``."""
    data = content.encode() if isinstance(content, str) else content
    q = shlex.quote(path)
    tmp = shlex.quote(f"{path}.rtlab-tmp")
    netns.run_on(host, f"mkdir -p $(dirname {q}) && base64 -d > {tmp} && chmod {mode:o} {tmp} && mv -f {tmp} {q}",
               input=base64.b64encode(data).decode(), timeout=60)


def stop() -> None:
    """Stop the lab's Slurm: slurmd and munged on every host, then the controller namespace
    with everything in it. Idempotent; a lab without Slurm is left as it is."""
    info = netns.current()
    if info is not None and not info.systemd and SLURM_DIR.exists():
        for name in info.names:
            pid = netns.host_pid(name)
            if pid is None:
                continue
            # Only the daemons this module started, by their pid files.
            subprocess.run(["nsenter", "--all", "--target", str(pid), "--", "/bin/sh", "-c",
                            f"for f in {HOST_PID} {MUNGE_SOCKET.parent}/munged.pid; do "
                            "[ -s $f ] && kill -KILL $(cat $f) 2>/dev/null; rm -f $f; done; true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    if (netns.NETNS_DIR / CTL_NS).exists():
        # Only what runs in the controller's namespace: the hosts' launchers are lab launchers too,
        # and killing one ends its host.
        pids = netns._lab_pids([CTL_NS], launchers=False)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        deadline = time.monotonic() + 5
        while any(netns._alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        subprocess.run(["ip", "netns", "del", CTL_NS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if SLURM_DIR.exists():
        netns._safe_rmtree(SLURM_DIR)


@contextlib.contextmanager
def cluster(info: Optional[netns.LabInfo] = None, **kw) -> Iterator[Cluster]:
    """``start(info, **kw)``, yielding the Cluster; stopped afterwards, also on failure."""
    c = start(info, **kw)
    try:
        yield c
    finally:
        stop()


def current() -> Optional[Cluster]:
    """The Cluster started on the lab now (by this process or `slurm.py start`), or None."""
    conf = SLURM_DIR / "slurm.conf"
    if not conf.exists():
        return None
    nodes, hc, interval, prolog = [], None, 0, None
    for line in conf.read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "NodeName":
            nodes.append(value.split()[0])
        elif key == "HealthCheckProgram":
            hc = value
        elif key == "HealthCheckInterval":
            interval = int(value)
        elif key == "Prolog":
            prolog = value
    return Cluster(nodes, health_check=hc, health_check_interval=interval, prolog=prolog)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.slurm", description="Slurm on the rocetune lab")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="slurmctld and one slurmd per lab host (the lab must be up)")
    p_start.add_argument("--health-check", metavar="PATH", help="HealthCheckProgram (a path inside the hosts)")
    p_start.add_argument("--interval", type=int, default=0, metavar="S", help="HealthCheckInterval")
    p_start.add_argument("--prolog", metavar="PATH", help="Prolog (a path inside the hosts)")
    sub.add_parser("stop", help="stop every Slurm daemon of the lab")
    p_run = sub.add_parser("run", help="a Slurm command on the machine (SLURM_CONF set)")
    p_run.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "start":
            c = start(health_check=args.health_check, health_check_interval=args.interval, prolog=args.prolog)
            print(f"slurm: slurmctld on {CTL_IP}:{CTLD_PORT}, slurmd on {', '.join(c.nodes)}; "
                  f"SLURM_CONF={c.conf}")
        elif args.cmd == "stop":
            stop()
        else:
            c = current()
            if c is None:
                raise SlurmError("no Slurm is running on the lab (slurm.py start)")
            proc = c.run(args.command, check=False)
            sys.stdout.write(proc.stdout)
            sys.stderr.write(proc.stderr)
            return proc.returncode
    except netns.LabError as exc:
        print(f"slurm: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    from lab import slurm as _slurm  # noqa: PLW0406 - one SlurmError class

    sys.exit(_slurm.main())
