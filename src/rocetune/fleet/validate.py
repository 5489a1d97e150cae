"""`rocetune fleet validate`: prove the fabric moves data between the hosts before a job does.

Each host is probed over SSH (`COMMAND --json probe`) for the RDMA ports and socket interfaces
its plan hands NCCL (fleet.endpoints). Then the tests asked for run, each one module of
fleet.tests found by its registry: their node steps on every host at once; their pair steps on
the pairs of fleet.schedule (every pair once in the fewest rounds, or a ring), each round's pairs
at once; their fleet steps once over everything (fleet/tests/__init__.py).

A host that cannot be reached or probed is reported and left out of the pairs; a test whose
tool is missing or fails is that test's error on that host or pair, never the run's.
"""

from __future__ import annotations

import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import nccl_check, pairtest, schedule, ssh
from . import tests as registry
from .endpoints import endpoints
from .results import MAX_BYTES, from_doc
from .targets import Target

SCHEMA = "rocetune.validate/1"
AUTO_PAIRWISE = 16  # up to this many hosts `auto` tests every pair (15 rounds); beyond, the fabric schedule
OUTPUT_CAP = 4 * 1024 * 1024
SERVER_SETTLE_S = 1.0


@dataclass
class Options:
    command: str = "rocetune"
    mode: str = "pairwise"  # or "ring", "fabric", "auto" (pairwise up to AUTO_PAIRWISE hosts, else fabric)
    tests: Tuple[str, ...] = ("rdma", "tcp")
    settings: pairtest.Settings = field(default_factory=pairtest.Settings)
    timeout: float = 60.0  # per host: connect and probe
    known_hosts: Optional[str] = None
    accept_new: bool = False
    forks: int = 16
    doctor: bool = False  # preflight: run doctor too; a host with error findings is not paired
    budget: Optional[float] = None  # seconds for the whole run; rounds that would pass it are skipped
    nccl: Optional[nccl_check.Settings] = None  # the nccl test's settings (it runs when "nccl" is in tests)
    test_settings: Dict[str, object] = field(default_factory=dict)  # each test's own, by name

    def settings_of(self, test: registry.FleetTest):
        if test.name in self.test_settings:
            return self.test_settings[test.name]
        if test.name == "nccl" and self.nccl is not None:
            return self.nccl
        return test.defaults()


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
    chosen = registry.selected(opts.tests)
    hosts: Dict[str, dict] = {}
    ready: Dict[str, registry.HostContext] = {}
    pairs: List[dict] = []
    fleet: Dict[str, dict] = {}
    plan: List = []
    mode = opts.mode
    kinds: List[str] = []
    with ThreadPoolExecutor(max_workers=max(1, opts.forks)) as pool:
        for name, ctx, doc in pool.map(lambda t: _prepare(t, opts, opener), targets):
            hosts[name] = doc
            if ctx is not None:
                ready[name] = ctx
        try:
            for test in (t for t in chosen if t.node):
                settings = opts.settings_of(test)
                names = list(ready)
                stepped = pool.map(lambda n, t=test, st=settings: _step(t, "node", t.node, registry.NodeContext(
                    ready[n], opts, st)), names)
                for name, result in zip(names, stepped):
                    hosts[name][test.name] = ready[name].results[test.name] = result
            pair_tests = [t for t in chosen if t.pair]
            usable = [t.name for t in targets if t.name in ready] if pair_tests else []
            mode, plan, kinds = _schedule(opts.mode, usable, ready)
            for number, pairing in enumerate(plan, 1):
                if opts.budget is not None and time.monotonic() - started + _round_s(opts, pair_tests) > opts.budget:
                    pairs += [{"a": a, "b": b, "round": number, "tests": [], "status": "skipped",
                               "schedule": kinds[number - 1],
                               "why": f"not run: the {opts.budget:g} s budget would be passed"} for a, b in pairing]
                    continue
                if progress:
                    progress(f"round {number}/{len(plan)}: " + ", ".join(f"{a}-{b}" for a, b in pairing))
                with ThreadPoolExecutor(max_workers=max(1, len(pairing))) as round_pool:
                    done = list(round_pool.map(lambda ab, n=number: _pair(ab, n, ready, pair_tests, opts), pairing))
                for p in done:
                    p["schedule"] = kinds[number - 1]
                pairs += done
            down = sorted(h for h, d in hosts.items() if d.get("error"))
            for test in (t for t in chosen if t.fleet):
                whole = registry.FleetContext(ready, pairs, down, opts, opts.settings_of(test))
                fleet[test.name] = _step(test, "fleet", test.fleet, whole)
        finally:
            for ctx in ready.values():
                ctx.remote.close()
    doc = _document(targets, hosts, plan, pairs, fleet, chosen, opts, time.monotonic() - started)
    doc["mode"] = mode
    doc["round_kinds"] = kinds
    ran = [(p["a"], p["b"]) for p in pairs if p["status"] != "skipped"]
    doc["coverage"] = None
    if any(t.pair for t in chosen):
        doc["coverage"] = schedule.coverage(list(ready), ran, {n: host_leaves(c) for n, c in ready.items()},
                                            {n: len(c.endpoints.rdma) for n, c in ready.items()})
    return doc


def host_leaves(ctx: registry.HostContext) -> Tuple[Optional[str], ...]:
    """The switch each of the host's rails reaches, from its probe's LLDP reading (None: unknown)."""
    lldp = (ctx.features or {}).get("lldp")
    heard = (lldp or {}).get("interfaces") or {} if isinstance(lldp, dict) and not lldp.get("error") else {}
    return tuple((heard.get(p.netdev or "") or [{}])[0].get("chassis") for p in ctx.endpoints.rdma)


def _schedule(mode: str, usable: List[str], ready) -> Tuple[str, List, List[str]]:
    if mode == "auto":
        mode = "pairwise" if len(usable) <= AUTO_PAIRWISE else "fabric"
    if mode == "fabric":
        plan = schedule.fabric(usable, {n: host_leaves(ready[n]) for n in usable})
        return mode, plan.rounds, plan.kinds
    rounds = schedule.ring(usable) if mode == "ring" else schedule.pairwise(usable)
    return mode, rounds, [mode] * len(rounds)


def _step(test: registry.FleetTest, what: str, fn, ctx) -> dict:
    """One step of a test: its result, or its error when it raised (never the run's)."""
    try:
        result = fn(ctx)
    except ssh.Failure as exc:
        return {"status": "error", "error": str(exc)}
    except Exception as exc:  # a test's own bug or an odd host is that test's error, said in one line
        return {"status": "error", "error": f"{test.name} {what} step: {type(exc).__name__}: {str(exc)[:300]}"}
    if not isinstance(result, dict) or result.get("status") not in registry.STATUSES:
        return {"status": "error", "error": f"{test.name} {what} step gave no status"}
    return result


def _prepare(target: Target, opts: Options, opener) -> Tuple[str, Optional[registry.HostContext], dict]:
    from .gather import envelope_data

    try:
        remote = opener(target)
    except ssh.Failure as exc:
        return target.name, None, {"error": str(exc)}
    except Exception as exc:  # any other paramiko or socket failure is this host's
        return target.name, None, {"error": f"ssh {ssh.where(target)}: {type(exc).__name__}: {str(exc)[:300]}"}
    command = f"{opts.command} --json probe"
    try:
        done = remote.run(command, "probe", opts.timeout)
        if len(done.out) > MAX_BYTES:
            raise ssh.Failure(f"probe on {target.name}: output too large")
        result = from_doc(target.name, {"probe": envelope_data(target, "probe", command, done)})
    except ssh.Failure as exc:
        remote.close()
        return target.name, None, {"error": str(exc)}
    if result.error:
        remote.close()
        return target.name, None, {"error": result.error}
    ep = endpoints(result)
    doctor = _doctor(target, remote, opts) if opts.doctor else None
    if doctor and doctor["errors"]:
        remote.close()
        names = ", ".join(sorted({f["id"] for f in doctor["errors"]}))
        return target.name, None, {"error": f"doctor: {len(doctor['errors'])} error finding(s): {names}",
                                   "doctor": doctor}
    doc = {"error": None, "notes": ep.notes, "doctor": doctor,
           "rdma": [{"port": p.name, "gid_index": p.gid_index, "rate_gbps": p.rate_gbps, "netdev": p.netdev,
                     "ipv4": p.ipv4} for p in ep.rdma],
           "socket": [{"ifname": s.ifname, "ipv4": s.ipv4, "speed_gbps": s.speed_gbps} for s in ep.socket]}
    plan = {"ranks": result.plan_ranks or [], "reports": result.plan_reports or {}}
    return target.name, registry.HostContext(target.name, remote, ep, result.plan_env or {}, result.features or {},
                                             plan=plan), doc


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


def _round_s(opts: Options, pair_tests) -> float:
    """What one round costs at most: each pair test's length, the servers' settling, the counters."""
    return sum(t.round_seconds(opts) for t in pair_tests)


def _pair(ab: Tuple[str, str], round_no: int, ready, pair_tests, opts: Options) -> dict:
    a, b = ab
    tests: List[dict] = []
    doc: dict = {"a": a, "b": b, "round": round_no, "tests": tests}
    for test in pair_tests:
        ctx = registry.PairContext(ready[a], ready[b], round_no, opts, opts.settings_of(test))
        try:
            entries = test.pair(ctx)
        except ssh.Failure as exc:
            entries = [{"kind": test.name, "status": "error", "path": "", "error": str(exc)}]
        except Exception as exc:  # one test's failure is this pair's, said in one line
            entries = [{"kind": test.name, "status": "error", "path": "",
                        "error": f"{test.name}: {type(exc).__name__}: {str(exc)[:300]}"}]
        tests += entries
    doc["status"] = registry.worst(t["status"] for t in tests)
    return doc


def _document(targets, hosts, plan, pairs, fleet, chosen, opts: Options, seconds: float) -> dict:
    failed = [p for p in pairs if registry.failed(p["status"])]
    down = sorted(h for h, d in hosts.items() if d.get("error"))
    node_failed = {t.name: sorted(h for h, d in hosts.items() if registry.failed((d.get(t.name) or {}).get("status")))
                   for t in chosen if t.node}
    fleet_failed = sorted(name for name, r in fleet.items() if registry.failed(r.get("status")))
    named = sorted({h for r in fleet.values() if registry.failed(r.get("status")) for h in r.get("suspects") or []})
    bad_hosts = sorted({h for hs in node_failed.values() for h in hs} | set(named))
    skipped = sum(p["status"] == "skipped" for p in pairs)
    pair_tests = any(t.pair for t in chosen)
    tested = bool(pairs) or not pair_tests or (opts.doctor and len(targets) == 1)
    return {"schema": SCHEMA, "mode": opts.mode, "tests": [t.name for t in chosen],
            "settings": {"rdma_op": opts.settings.rdma_op, "seconds": opts.settings.seconds,
                         "size": opts.settings.size, "fraction": opts.settings.fraction,
                         "line_rate_gbps": opts.settings.line_rate_gbps},
            "validated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "seconds": round(seconds, 1), "hosts": {t.name: hosts[t.name] for t in targets},
            "rounds": [[list(p) for p in r] for r in plan], "pairs": pairs, "fleet": fleet,
            "budget_s": opts.budget,
            "summary": {"hosts": len(targets), "unreachable": down, "pairs": len(pairs),
                        "failed_pairs": len(failed), "skipped_pairs": skipped,
                        "nccl_failed": node_failed.get("nccl", []), "failed_nodes": node_failed,
                        "failed_fleet_tests": fleet_failed,
                        "suspects": suspects(pairs, down + bad_hosts),
                        # one node's preflight is its doctor alone: no pair to test
                        "passed": not failed and not down and not bad_hosts and not fleet_failed and tested}}


def suspects(pairs: List[dict], down: List[str]) -> List[str]:
    """Hosts to look at first: those that could not be tested, then the fewest hosts that explain
    the failing pairs -- repeatedly the host in most of the failing pairs not yet explained (a
    host with a bad port or server fails with every peer that reaches it); where no host is in
    more than one of them, both ends of each, since one pair alone cannot tell which side it is."""
    from collections import Counter

    out = set(down)
    left = [(p["a"], p["b"]) for p in pairs if registry.failed(p["status"])]
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
