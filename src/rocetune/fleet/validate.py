"""`rocetune fleet validate`: prove the fabric moves data between the hosts before a job does.

Each host is probed over SSH (`COMMAND --json probe`) for the RDMA ports and socket interfaces
its plan hands NCCL (fleet.endpoints). The hosts are then paired by fleet.schedule (every pair
once in the fewest rounds, or a ring), each round's pairs at once. A pair's test runs every
rail at the same time, rail i of one host to rail i of the other, with perftest, reading the
sender's counters before and after to show which port carried it; then the socket path with
iperf3 between the NCCL_SOCKET_IFNAME addresses. fleet.pairtest judges each result against
the line rate.

A host that cannot be reached or probed is reported and left out of the pairs; a pair whose
tool is missing or fails is that pair's error, never the run's.
"""

from __future__ import annotations

import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import nccl_check, pairtest, schedule, ssh
from .endpoints import HostEndpoints, endpoints
from .results import MAX_BYTES, from_doc
from .targets import Target

SCHEMA = "rocetune.validate/1"
OUTPUT_CAP = 4 * 1024 * 1024
SERVER_SETTLE_S = 1.0
CONNECT_RETRIES = 5


@dataclass
class Options:
    command: str = "rocetune"
    mode: str = "pairwise"  # or "ring"
    tests: Tuple[str, ...] = ("rdma", "tcp")
    settings: pairtest.Settings = field(default_factory=pairtest.Settings)
    timeout: float = 60.0  # per host: connect and probe
    known_hosts: Optional[str] = None
    accept_new: bool = False
    forks: int = 16
    doctor: bool = False  # preflight: run doctor too; a host with error findings is not paired
    budget: Optional[float] = None  # seconds for the whole run; rounds that would pass it are skipped
    nccl: Optional[nccl_check.Settings] = None  # also run NCCL on each node (fleet.nccl_check)


class SshRemote:
    """One host's SSH connection for the whole run (paramiko multiplexes the channels)."""

    def __init__(self, target: Target, client):
        self.target, self.client, self.name = target, client, target.name

    def run(self, command: str, step: str, timeout: float, stdin: Optional[bytes] = None) -> ssh.Completed:
        return ssh.run(self.client, self.target, command, step, ssh.Deadline(timeout), OUTPUT_CAP, stdin)

    def start(self, command: str, step: str, timeout: float):
        deadline = ssh.Deadline(timeout)
        return ssh.start(self.client, self.target, command, step, deadline), deadline

    def finish(self, handle, step: str) -> ssh.Completed:
        chan, deadline = handle
        return ssh.finish(chan, self.target, step, deadline, OUTPUT_CAP)

    def close(self) -> None:
        self.client.close()


def open_ssh(opts: Options, lock: threading.Lock) -> Callable[[Target], SshRemote]:
    def opener(target: Target) -> SshRemote:
        deadline = ssh.Deadline(opts.timeout)
        return SshRemote(target, ssh.connect(target, deadline, opts.known_hosts, opts.accept_new, lock))
    return opener


def validate(targets: List[Target], opts: Options, opener: Optional[Callable] = None,
             progress: Optional[Callable[[str], None]] = None) -> dict:
    ssh.quiet_paramiko()
    opener = opener or open_ssh(opts, threading.Lock())
    started = time.monotonic()
    hosts: Dict[str, dict] = {}
    remotes: Dict[str, Any] = {}
    ends: Dict[str, Optional[HostEndpoints]] = {}
    plans: Dict[str, Dict[str, str]] = {}
    with ThreadPoolExecutor(max_workers=max(1, opts.forks)) as pool:
        for name, remote, ep, doc in pool.map(lambda t: _prepare(t, opts, opener), targets):
            hosts[name] = doc
            if remote is not None:
                remotes[name], ends[name] = remote, ep
                plans[name] = doc.pop("plan_env")
        if opts.nccl is not None:
            names = list(remotes)
            nccl_settings = opts.nccl
            checked = pool.map(lambda n: nccl_check.run_on(remotes[n], plans[n], nccl_settings), names)
            for name, result in zip(names, checked):
                hosts[name]["nccl"] = result
    try:
        usable = [t.name for t in targets if t.name in ends] if _pair_tests(opts) else []
        plan = schedule.ring(usable) if opts.mode == "ring" else schedule.pairwise(usable)
        pairs: List[dict] = []
        for number, pairing in enumerate(plan, 1):
            if opts.budget is not None and time.monotonic() - started + _round_s(opts) > opts.budget:
                pairs += [{"a": a, "b": b, "round": number, "tests": [], "status": "skipped",
                           "why": f"not run: the {opts.budget:g} s budget would be passed"} for a, b in pairing]
                continue
            if progress:
                progress(f"round {number}/{len(plan)}: " + ", ".join(f"{a}-{b}" for a, b in pairing))
            with ThreadPoolExecutor(max_workers=max(1, len(pairing))) as pool:
                pairs += pool.map(lambda ab, n=number: _pair(ab, n, remotes, ends, opts), pairing)
    finally:
        for remote in remotes.values():
            remote.close()
    return _document(targets, hosts, plan, pairs, opts, time.monotonic() - started)


def _prepare(target: Target, opts: Options, opener) -> Tuple[str, object, Optional[HostEndpoints], dict]:
    from .gather import envelope_data

    try:
        remote = opener(target)
    except ssh.Failure as exc:
        return target.name, None, None, {"error": str(exc)}
    except Exception as exc:  # any other paramiko or socket failure is this host's
        return target.name, None, None, {"error": f"ssh {ssh.where(target)}: {type(exc).__name__}: {str(exc)[:300]}"}
    command = f"{opts.command} --json probe"
    try:
        done = remote.run(command, "probe", opts.timeout)
        if len(done.out) > MAX_BYTES:
            raise ssh.Failure(f"probe on {target.name}: output too large")
        result = from_doc(target.name, {"probe": envelope_data(target, "probe", command, done)})
    except ssh.Failure as exc:
        remote.close()
        return target.name, None, None, {"error": str(exc)}
    if result.error:
        remote.close()
        return target.name, None, None, {"error": result.error}
    ep = endpoints(result)
    doctor = _doctor(target, remote, opts) if opts.doctor else None
    if doctor and doctor["errors"]:
        remote.close()
        names = ", ".join(sorted({f["id"] for f in doctor["errors"]}))
        return target.name, None, None, {"error": f"doctor: {len(doctor['errors'])} error finding(s): {names}",
                                         "doctor": doctor}
    doc = {"error": None, "notes": ep.notes, "doctor": doctor, "plan_env": result.plan_env or {},
           "rdma": [{"port": p.name, "gid_index": p.gid_index, "rate_gbps": p.rate_gbps, "netdev": p.netdev,
                     "ipv4": p.ipv4} for p in ep.rdma],
           "socket": [{"ifname": s.ifname, "ipv4": s.ipv4, "speed_gbps": s.speed_gbps} for s in ep.socket]}
    return target.name, remote, ep, doc


def _doctor(target: Target, remote, opts: Options) -> dict:
    """doctor's findings of error severity on the host (its warnings are counted, not blocking)."""
    from .gather import envelope_data

    command = f"{opts.command} --json doctor --no-counters"
    try:
        data = envelope_data(target, "doctor", command, remote.run(command, "doctor", opts.timeout))
    except ssh.Failure as exc:
        return {"errors": [{"id": "doctor-did-not-run", "message": str(exc)}], "warnings": 0}
    findings = [f for f in data.get("findings") or [] if isinstance(f, dict)]
    errors = [{"id": str(f.get("id")), "subject": f.get("subject"), "message": str(f.get("message"))[:500],
               "fix": f.get("fix")} for f in findings if f.get("severity") == "error"]
    return {"errors": errors, "warnings": sum(f.get("severity") == "warning" for f in findings)}


def _pair_tests(opts: Options) -> bool:
    return "rdma" in opts.tests or "tcp" in opts.tests


def _round_s(opts: Options) -> float:
    """What one round costs at most: each test's length, the servers' settling, the counters."""
    tests = ("rdma" in opts.tests) + ("tcp" in opts.tests)
    return tests * (opts.settings.seconds + SERVER_SETTLE_S + 2)


def _pair(ab: Tuple[str, str], round_no: int, remotes, ends, opts: Options) -> dict:
    a, b = ab
    doc: Dict[str, Any] = {"a": a, "b": b, "round": round_no, "tests": []}
    if "rdma" in opts.tests:
        doc["tests"] += _rdma(remotes[a], remotes[b], ends[a], ends[b], opts.settings)
    if "tcp" in opts.tests:
        doc["tests"].append(_tcp(remotes[a], remotes[b], ends[a], ends[b], opts.settings))
    doc["status"] = _worst(t["status"] for t in doc["tests"])
    return doc


def _rdma(ra, rb, ea: HostEndpoints, eb: HostEndpoints, s: pairtest.Settings) -> List[dict]:
    rails = list(zip(ea.rdma, eb.rdma))
    if not rails:
        return [{"kind": "rdma", "status": "error",
                 "error": f"no RDMA port to test on {ra.name if not ea.rdma else rb.name}"}]
    extra = [{"kind": "rdma", "status": "error", "error": f"{h.host} has {len(h.rdma)} RDMA ports, "
              f"its peer {len(ea.rdma) + len(eb.rdma) - len(h.rdma)}: rails beyond the shorter list untested"}
             for h in (ea, eb) if len(h.rdma) > len(rails)]
    step_s = s.seconds + 60
    sent = [a for a, _ in rails] if s.rdma_op == "write" else [b for _, b in rails]
    sender = ra if s.rdma_op == "write" else rb
    before = _counters(sender, sent, step_s)
    with ThreadPoolExecutor(max_workers=len(rails)) as pool:
        runs = list(pool.map(lambda i: _perftest(ra, rb, rails[i], i, s, step_s), range(len(rails))))
    after = _counters(sender, sent, step_s)
    out = []
    for i, ((pa, pb), (client, server)) in enumerate(zip(rails, runs)):
        test = {"kind": "rdma", "rail": i, "a_port": pa.name, "b_port": pb.name, "op": s.rdma_op,
                "command": pairtest.command(pairtest.perftest_argv(pa, s, pairtest.PERFTEST_BASE_PORT + i, "SERVER"))}
        if client.code != 0:
            test.update(status="error", error="client " + _failed(client, server, pa.device))
        elif server.code != 0:
            test.update(status="error", error="server " + _failed(server, client, pb.device))
        else:
            port = sent[i]
            moved, counter = pairtest.rail_moved((before or {}).get(port.name, {}), (after or {}).get(port.name, {}),
                                                 send=True)
            test.update(pairtest.judge_rdma(client.out.decode("utf-8", "replace"),
                                            pa if s.rdma_op == "write" else pb,
                                            pb if s.rdma_op == "write" else pa, s, moved, counter))
        if test["status"] in ("fail", "error"):
            test["evidence"] = _evidence(client, server)
        out.append(test)
    return out + extra


def _perftest(ra, rb, rail, i: int, s: pairtest.Settings, step_s: float):
    pa, pb = rail
    tcp_port = pairtest.PERFTEST_BASE_PORT + i
    server = rb.start(pairtest.command(pairtest.perftest_argv(pb, s, tcp_port)), "perftest server", step_s)
    client = None
    for _attempt in range(CONNECT_RETRIES):
        time.sleep(SERVER_SETTLE_S)
        client = ra.run(pairtest.command(pairtest.perftest_argv(pa, s, tcp_port, rb.target.hostname)),
                        "perftest client", step_s)
        if client.code == 0 or b"Couldn't connect" not in client.out + client.err:
            break
    try:
        server_done = rb.finish(server, "perftest server")
    except ssh.Failure as exc:
        server_done = ssh.Completed(-1, b"", str(exc).encode())
    return client, server_done


def _tcp(ra, rb, ea: HostEndpoints, eb: HostEndpoints, s: pairtest.Settings) -> dict:
    if not ea.socket or not eb.socket:
        who = ea.host if not ea.socket else eb.host
        return {"kind": "tcp", "status": "error", "error": f"{who}: no socket interface to test (see its notes)"}
    a, b = ea.socket[0], eb.socket[0]
    step_s = s.seconds + 60
    test: Dict[str, Any] = {"kind": "tcp", "a_if": a.ifname, "b_if": b.ifname,
            "command": pairtest.command(pairtest.iperf3_client_argv(a, b, s))}
    server = rb.start(pairtest.command(pairtest.iperf3_server_argv(b)), "iperf3 server", step_s)
    time.sleep(SERVER_SETTLE_S)
    client = ra.run(test["command"], "iperf3 client", step_s)
    try:
        server_done = rb.finish(server, "iperf3 server")
    except ssh.Failure as exc:
        server_done = ssh.Completed(-1, b"", str(exc).encode())
    if client.code != 0 and not client.out.strip().startswith(b"{"):
        test.update(status="error", error="client " + _failed(client, server_done, "iperf3"))
    elif server_done.code != 0:
        test.update(status="error", error="server " + _failed(server_done, client, "iperf3"))
    else:
        test.update(pairtest.judge_tcp(client.out.decode("utf-8", "replace"), a, b, s))
    if test["status"] in ("fail", "error"):
        test["evidence"] = _evidence(client, server_done)
    return test


def _counters(remote, ports, step_s: float) -> Optional[Dict[str, Dict[str, Optional[int]]]]:
    try:
        done = remote.run(pairtest.counters_command(ports), "counters", step_s)
    except ssh.Failure:
        return None
    return pairtest.parse_counters(ports, done.out.decode("utf-8", "replace"))


def _failed(this: ssh.Completed, other: ssh.Completed, tool: str) -> str:
    """Why `this` side failed, in one line (the client's words, else the other side's)."""
    if this.code == 127:
        return f"{tool}: command not found (install perftest / iperf3)"
    said = this.first_err_line() or _last_line(this.out) or other.first_err_line() or _last_line(other.out)
    return f"exited {this.code}" + (f": {said[:300]}" if said else "")


def _evidence(client: ssh.Completed, server: ssh.Completed) -> dict:
    def tail(b: bytes) -> List[str]:
        return b.decode("utf-8", "replace").splitlines()[-12:]
    return {"client_exit": client.code, "client": tail(client.out) + tail(client.err),
            "server_exit": server.code, "server": tail(server.out) + tail(server.err)}


def _last_line(b: bytes) -> str:
    lines = [ln.strip() for ln in b.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


_RANK = {"pass": 0, "unjudged": 1, "skipped": 1, "fail": 2, "error": 3}


def _worst(statuses) -> str:
    return max(statuses, key=lambda s: _RANK[s], default="error")


def _document(targets, hosts, plan, pairs, opts: Options, seconds: float) -> dict:
    failed = [p for p in pairs if p["status"] in ("fail", "error")]
    down = sorted(h for h, d in hosts.items() if d.get("error"))
    nccl_bad = sorted(h for h, d in hosts.items() if (d.get("nccl") or {}).get("status") in ("fail", "error"))
    skipped = sum(p["status"] == "skipped" for p in pairs)
    return {"schema": SCHEMA, "mode": opts.mode, "tests": list(opts.tests),
            "settings": {"rdma_op": opts.settings.rdma_op, "seconds": opts.settings.seconds,
                         "size": opts.settings.size, "fraction": opts.settings.fraction,
                         "line_rate_gbps": opts.settings.line_rate_gbps},
            "validated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "seconds": round(seconds, 1), "hosts": {t.name: hosts[t.name] for t in targets},
            "rounds": [[list(p) for p in r] for r in plan], "pairs": pairs,
            "budget_s": opts.budget,
            "summary": {"hosts": len(targets), "unreachable": down, "pairs": len(pairs),
                        "failed_pairs": len(failed), "skipped_pairs": skipped, "nccl_failed": nccl_bad,
                        "suspects": suspects(pairs, down + nccl_bad),
                        # one node's preflight is its doctor alone: no pair to test
                        "passed": not failed and not down and not nccl_bad
                        and (bool(pairs) or not _pair_tests(opts) or (opts.doctor and len(targets) == 1))}}


def suspects(pairs: List[dict], down: List[str]) -> List[str]:
    """Hosts to look at first: those that could not be tested, then the fewest hosts that explain
    the failing pairs -- repeatedly the host in most of the failing pairs not yet explained (a
    host with a bad port or server fails with every peer that reaches it); where no host is in
    more than one of them, both ends of each, since one pair alone cannot tell which side it is."""
    from collections import Counter

    out = set(down)
    left = [(p["a"], p["b"]) for p in pairs if p["status"] in ("fail", "error")]
    while left:
        count = Counter(h for ab in left for h in ab)
        top = max(count.values())
        if top == 1:
            out.update(h for ab in left for h in ab)
            break
        best = {h for h, c in count.items() if c == top}
        out |= best
        left = [ab for ab in left if not best & set(ab)]
    return sorted(out)
