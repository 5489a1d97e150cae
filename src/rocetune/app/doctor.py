"""Doctor: a node's facts, running state and deployed env files checked against its plan; and
the same as Slurm's HealthCheckProgram or Prolog (the gate), which drains and resumes the node."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.finding import Finding
from ..model.record import FrozenRecord, Record
from .inputs import check_config, planned_features
from .node_checks import doctor_checks
from .planning import PlanRequest


class DoctorRequest(FrozenRecord):
    plan: PlanRequest  # root, overrides, QoS plan, expectations
    features_path: Optional[str]  # the node's Features from a file instead of a probe of the root
    nccl_version: Optional[str]  # plan for this NCCL release
    nccl_log: Optional[str]  # a job's NCCL_DEBUG=INFO output to compare with the plan
    counters: bool  # read the NIC counters
    save_baseline: bool  # keep this reading of the counters as the next run's baseline
    config_path: Optional[str]  # the check configuration (default: /etc/rocetune/doctor.yml)
    skips: Tuple[str, ...]  # ID=REASON, this run only
    since: Optional[str]  # the kernel log from then on
    write_expect: Optional[str]  # write the node's expectations document here
    metrics: Optional[str]  # write node_exporter textfile metrics here (*.prom)
    ras: Tuple[str, ...]  # recorded ncclras answers (one poll, or two in order)
    ras_addr: Optional[str]  # a running job's RAS to ask (read-only commands)
    ras_interval: float  # seconds between the two polls of ras_addr
    push: Optional[str]  # keep the result as DIR/NODE.json, what `fleet report DIR` reads
    push_as: Optional[str]  # NODE (default: the short host name)
    nfd_features: Optional[str]  # write node-feature-discovery's feature file here
    nfd_expiry: float  # seconds the feature file's labels hold
    repaired: Optional[str]  # mark the node repaired now, for this reason: earlier events stop counting
    keep_window: bool  # keep the counters' window current; a failure to is said, not raised (the gate)
    force: bool  # --write-expect on a node that fails: write, and name what was left out
    _fields = ("plan", "features_path", "nccl_version", "nccl_log", "counters", "save_baseline", "config_path",
               "skips", "since", "write_expect", "metrics", "ras", "ras_addr", "ras_interval", "push", "push_as",
               "nfd_features", "nfd_expiry", "repaired", "keep_window", "force")

    def __init__(self, plan: PlanRequest, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                 nccl_log: Optional[str] = None, counters: bool = True, save_baseline: bool = False,
                 config_path: Optional[str] = None, skips: Tuple[str, ...] = (), since: Optional[str] = None,
                 write_expect: Optional[str] = None, metrics: Optional[str] = None, ras: Tuple[str, ...] = (),
                 ras_addr: Optional[str] = None, ras_interval: float = 10.0, push: Optional[str] = None,
                 push_as: Optional[str] = None, nfd_features: Optional[str] = None,
                 nfd_expiry: float = 900.0, repaired: Optional[str] = None, keep_window: bool = False,
                 force: bool = False) -> None:
        self._set(plan, features_path, nccl_version, nccl_log, counters, save_baseline, config_path, skips,
                  since, write_expect, metrics, ras, ras_addr, ras_interval, push, push_as, nfd_features, nfd_expiry,
                  repaired, keep_window, force)


class Doctored(Record):
    findings: List[Finding]  # most severe first
    data: Dict[str, Any]  # what --json prints (before json_data's summary)
    features: dict
    host: str
    code: ExitCode
    _fields = ("findings", "data", "features", "host", "code")

    def __init__(self, findings: List[Finding], data: Dict[str, Any], features: dict, host: str,
                 code: ExitCode) -> None:
        self.findings = findings
        self.data = data
        self.features = features
        self.host = host
        self.code = code

    def json_data(self, verbose: int = 0) -> Dict[str, Any]:
        """The JSON document: the data, its summary and the facts the fleet compares; compact
        unless `verbose`."""
        from ..doctor import report
        from ..fleet.facts import features_facts, to_json

        data = self.data
        data["summary"] = report.summary(self.findings, self.host, int(self.code))
        deployed = (data.get("deployed_env") or {}).get("values")  # what jobs get, else the plan
        data["fleet_facts"] = to_json(features_facts(self.features, deployed if deployed is not None
                                                     else data["plan"].get("env")))
        out = data if verbose else report.compact(data)
        for key in ("pushed", "nfd_features"):
            if key in data:
                out[key] = data[key]
        return out

    def text(self, verbose: int = 0) -> str:
        """What NCCL used first, then the findings, then the files written."""
        from ..doctor import report

        data = self.data
        used = (data.get("nccl_log") or {}).get("used") or []
        expect = data.get("expect") or {}
        expect_file, metrics_file = expect.get("written"), data.get("metrics")
        written = [f"expectations written to {expect_file}"] if expect_file else []
        written += [f"expectations not written: {expect['refused']}"] if expect.get("refused") else []
        written += [f"  left out: {m}" for m in expect.get("left_out") or []] if expect_file or \
            expect.get("refused") else []
        written += [f"metrics written to {metrics_file}"] if metrics_file else []
        mark = data.get("repaired")
        written += [f"repair marked at {mark['taken_at']['wall']} in {mark['file']}: earlier kernel-log events and "
                    "counter readings no longer count"] if mark else []
        return "".join(line + "\n" for line in used) + ("\n" if used else "") + \
            report.text(self.findings, self.host, verbose, data["check_config"]["rules"]) + \
            "".join(line + "\n" for line in written)


def doctor(request: DoctorRequest) -> Doctored:
    from ..doctor import report

    if request.metrics and not request.metrics.endswith(".prom"):
        raise RocetuneError(f"--metrics {request.metrics}: node_exporter's textfile collector reads only "
                            "*.prom files", hint="name it e.g. /var/lib/prometheus/node-exporter/rocetune.prom",
                            code=ExitCode.USAGE)
    if request.nfd_features and not 60 <= request.nfd_expiry <= 7 * 86400:
        raise RocetuneError(f"--nfd-expiry {request.nfd_expiry:g}: give 60 to 604800 seconds", code=ExitCode.USAGE)
    root = request.plan.root
    config = check_config(root, request.config_path, request.skips)
    mark = None
    if request.repaired:
        from ..doctor.repair import write_mark

        mark = write_mark(root or "/", request.repaired)
    features = planned_features(root, request.features_path, request.nccl_version, request.config_path)
    found, data = doctor_checks(features, request.plan, nccl_log=request.nccl_log, counters=request.counters,
                               save_baseline=request.save_baseline, config=config, since=request.since,
                               keep_window=request.keep_window)
    if request.ras or request.ras_addr:
        found = found + _ras(request, data, config, ((features.get("kernel") or {}).get("nccl") or {}).get("version"))
    findings = report.ordered(found)
    host = features["host"].get("hostname") or root
    if request.write_expect:
        data["expect"].update(_write_expect(request.write_expect, data["expect"]["facts"], host, findings,
                                            request.force))
    from ..doctor.causes import cause, faults

    data.update(findings=[f.to_dict() for f in findings], features=features)
    data["faults"] = [{"id": root.id, "subject": root.subject, "severity": root.severity, "cause": cause(root.id),
                       "related": [{"id": f.id, "subject": f.subject} for f in related]}
                      for root, related in faults(findings)]
    if mark is not None:
        data["repaired"] = mark
    code = report.exit_code(findings)
    if request.metrics:
        data["metrics"] = _write_metrics(request.metrics, findings, data, int(code))
    done = Doctored(findings, data, features, host, code)
    if request.push:
        name = request.push_as or (features["host"].get("hostname") or "").split(".")[0]
        data["pushed"] = push_result(request.push, name, done.json_data(0))
    if request.nfd_features:
        status = {ExitCode.OK: "healthy", ExitCode.WARNINGS: "warnings"}.get(code, "failing")
        data["nfd_features"] = write_nfd_features(request.nfd_features, status, done.json_data(0).get("fleet_facts"),
                                                  host, request.nfd_expiry)
    return done


def write_nfd_features(path: str, status: str, facts: Optional[dict], node: str, expiry: float) -> str:
    """node-feature-discovery's feature file (render.nfd_features), atomically; the path."""
    import time

    from .. import __version__
    from ..fsutil import OutputError, atomic_write
    from ..render.nfd_features import feature_file, labels

    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + expiry))
    try:
        atomic_write(path, feature_file(labels(status, facts), until, node, __version__), mode=0o644)
    except (OSError, OutputError) as exc:
        said = exc.strerror if isinstance(exc, OSError) else str(exc).split(": ")[-1]
        raise RocetuneError(f"--nfd-features {path}: cannot write: {said or exc}",
                            hint="nfd-worker reads /etc/kubernetes/node-feature-discovery/features.d/",
                            code=ExitCode.OUTPUT) from None
    return os.path.abspath(path)


def push_result(directory: str, node: str, doctor_data: Optional[dict], error: Optional[str] = None) -> str:
    """The node's latest result as DIR/NODE.json, in the form `fleet gather` writes (core.fleet_host_doc)
    and `fleet report DIR` reads: doctor's compact data, or why there is none (`error`). Written
    atomically, so a report never reads half a file; the path, or RocetuneError (exit 4)."""
    import time

    from ..core.fleet_host_doc import HOST_NAME, dumps, new_doc
    from ..fsutil import UNSAFE_DIR_HINT, OutputError, atomic_write, directory_problem

    if not HOST_NAME.match(node) or node.startswith("."):
        raise RocetuneError(f"--push {directory}: {node!r} cannot be a result file's name", code=ExitCode.USAGE)
    why = directory_problem(directory)
    if why:
        raise OutputError(directory, why, hint=UNSAFE_DIR_HINT)
    doc = new_doc(node, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    doc["doctor"], doc["error"] = doctor_data, error
    path = os.path.join(directory, f"{node}.json")
    try:
        atomic_write(path, dumps(doc), mode=0o644)
    except (OSError, OutputError) as exc:
        said = exc.strerror if isinstance(exc, OSError) else str(exc).split(": ")[-1]
        raise RocetuneError(f"--push {directory}: cannot write {path}: {said or exc}",
                            hint="the directory must exist and be writable here", code=ExitCode.OUTPUT) from None
    return os.path.abspath(path)


def _ras(request: DoctorRequest, data: Dict[str, Any], config, plan_nccl: Optional[str] = None) -> List[Finding]:
    """What the job's RAS says (recorded answers, or a running job asked twice), judged against the plan's
    env (docs/ras.md); graded by the node's check configuration like the other findings."""
    from ..checks.config import apply
    from ..doctor.nccl_findings import ras_finding
    from ..nccl import ras
    from ..nccl.log import read_log

    if len(request.ras) > 2:
        raise RocetuneError("--ras takes one recorded answer, or two polls in order", code=ExitCode.USAGE)
    notes: List[str] = []
    diag_text: Optional[str] = None
    if request.ras_addr:
        from ..nccl.ras_client import RasClientError, parse_address, poll_job

        try:
            host, port = parse_address(request.ras_addr)
            first, second, diag_text, notes = poll_job(host, port, request.ras_interval)
        except RasClientError as e:
            raise RocetuneError(f"--ras-addr {request.ras_addr}: {e}", code=ExitCode.INPUT) from None
        source, polls = f"{host}:{port}", [first, second]
    else:
        from ..errors import HostReadError
        from ..hostfs.inputs import read_input

        polls = []
        for path in request.ras:
            try:  # a regular file only, opened without blocking, capped (a FIFO or a device is refused)
                polls.append(ras.read_status(read_input(path, ras.MAX_BYTES)))
            except HostReadError as e:
                raise RocetuneError(f"--ras {path}: cannot read: {e.reason}", code=ExitCode.INPUT) from None
            except OSError as e:
                raise RocetuneError(f"--ras {path}: cannot read: {e.strerror or e}", code=ExitCode.INPUT) from None
            except ras.RasError as e:
                raise RocetuneError(f"--ras {path}: not ncclras output: {e}", code=ExitCode.INPUT) from None
        source = ", ".join(request.ras)
    diag = []
    if diag_text:
        diag = [d for d, _ in read_log(diag_text, "RAS diagnostics").diag]
    verdicts = ras.judge(polls[0], polls[1] if len(polls) > 1 else None, data["plan"].get("env") or {}, diag,
                         plan_nccl)
    applied = apply([ras_finding(v, source) for v in verdicts], config)
    data["ras"] = {"source": source, "polls": [p.to_dict() for p in polls], "notes": notes,
                   "diagnostics": [d.text for d in diag]}
    data.setdefault("skipped", []).extend(f.to_dict() for f in applied.skipped)
    return applied.findings


def _write_expect(path: str, facts: dict, host: str, findings: List[Finding], force: bool) -> Dict[str, Any]:
    """This node's expectations document, written atomically to `path` -- refused on a node that
    fails (an expectation written from it would hold every node to the fault), unless `force`:
    then written, with what it leaves out named in its header and in the result.
    -> {"written": path or None, "left_out": [...], "refused": why or None}."""
    from .. import __version__
    from ..fsutil import atomic_write
    from ..model.expect import NodeFacts, document_of, dump, left_out

    node = NodeFacts.from_dict(facts)
    doc = document_of(node)
    missing = left_out(node, doc)
    failures = sorted({f.id for f in findings if f.severity == "error"})
    if failures and not force:
        return {"written": None, "left_out": missing,
                "refused": f"this node fails ({', '.join(failures)}): an expectation written from it would hold "
                           "every node to its faults; fix it, or write with --force and edit what is left out"}
    header = [f"rocetune {__version__} expectations, written by `rocetune doctor --write-expect` on {host}.",
              "Every field is optional: delete one to stop checking it (docs/expect.md).",
              "Versions are series (6.8.*): a new build of the same series is the same; link speed, PCIe link "
              "and GPUDirect are minimums."]
    if failures:
        header.append(f"Written with --force from a node that fails ({', '.join(failures)}).")
    header += [f"Left out: {m}." for m in missing]
    text = dump(doc, header)
    try:
        atomic_write(path, text, mode=0o644)
    except OSError as exc:
        raise RocetuneError(f"--write-expect {path}: cannot write: {exc.strerror or exc}",
                            code=ExitCode.OUTPUT) from None
    return {"written": os.path.abspath(path), "left_out": missing, "refused": None}


def _write_metrics(path: str, findings, data: dict, code: int) -> str:
    from .. import __version__
    from ..checks import all_checks
    from ..fsutil import atomic_write
    from ..render.metrics import GRADED_KINDS, textfile

    ids = [c.id for c in all_checks() if c.kind in GRADED_KINDS]
    try:
        atomic_write(path, textfile(findings, data, ids, code, __version__), mode=0o644)
    except OSError as exc:
        raise RocetuneError(f"--metrics {path}: cannot write: {exc.strerror or exc}",
                            hint="the textfile collector's directory must exist and be writable",
                            code=ExitCode.OUTPUT) from None
    return os.path.abspath(path)


# --- the scheduler gate --------------------------------------------------------------------------
class GateRequest(FrozenRecord):
    mode: str  # health-check | prolog
    node: Optional[str]  # the node's Slurm name (default $SLURMD_NODENAME, else the host name)
    timeout: Optional[float]  # the whole run's deadline (default per mode)
    drain_on_warnings: bool
    no_drain: bool  # judge and exit; leave the node's state to others
    scontrol: Optional[str]
    doctor: DoctorRequest
    _fields = ("mode", "node", "timeout", "drain_on_warnings", "no_drain", "scontrol", "doctor")

    def __init__(self, mode: str, doctor: DoctorRequest, node: Optional[str] = None,
                 timeout: Optional[float] = None, drain_on_warnings: bool = False, no_drain: bool = False,
                 scontrol: Optional[str] = None) -> None:
        self._set(mode, node, timeout, drain_on_warnings, no_drain, scontrol, doctor)


class Gated(Record):
    code: int  # the exit status Slurm acts on
    line: str  # the one line it prints
    data: Dict[str, Any]
    _fields = ("code", "line", "data")

    def __init__(self, code: int, line: str, data: Dict[str, Any]) -> None:
        self.code = code
        self.line = line
        self.data = data


def gate(request: GateRequest) -> Gated:
    """doctor as Slurm's HealthCheckProgram or Prolog (rocetune.doctor.gate): never a traceback and
    never an exit status that drains a node for a fault of rocetune's own."""
    from ..doctor import gate as judge

    # slurmd runs a HealthCheckProgram with no PATH at all: the tools doctor runs need one.
    os.environ.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    node = request.node or os.environ.get("SLURMD_NODENAME") or _short_hostname()
    try:
        doc = _gate_run(request, node)
    except Exception as exc:  # noqa: BLE001 - the gate's own failure is a tool error, loudly
        outcome = judge.tool_error(f"unexpected {type(exc).__name__}: {exc}", 70)
        doc = {"mode": request.mode, "node": node, "outcome": outcome, "action": None, "note": ""}
    return _gated(doc)


def _short_hostname() -> str:
    import socket

    return socket.gethostname().split(".")[0]


def _gate_run(request: GateRequest, node: str) -> dict:
    import time

    from ..doctor import deadline
    from ..doctor import gate as judge
    from ..doctor.slurm_node import Scontrol, SlurmError

    start = time.monotonic()
    mode = request.mode
    timeout = request.timeout if request.timeout is not None else judge.DEFAULT_TIMEOUT[mode]
    doc: Dict[str, Any] = {"mode": mode, "node": node, "timeout_s": timeout, "action": None, "note": ""}
    if not 0 < timeout <= 3600:
        doc["outcome"] = judge.tool_error(f"--timeout {timeout:g}: give 0 < S <= 3600 seconds", 2)
        return doc
    talks_to_slurm = mode == "health-check" and not request.no_drain
    budget = timeout - (min(judge.SLURM_RESERVE, timeout / 4) if talks_to_slurm else 0.0)

    push, nfd = request.doctor.push, request.doctor.nfd_features
    # the gate keeps the pushed result and the feature file itself, whatever happened; every health
    # check slides the counters' window
    checks = request.doctor.replace(push=None, nfd_features=None, keep_window=request.doctor.counters)

    def work() -> dict:
        done = doctor(checks)
        return {"host": done.host, "findings": [f.to_dict() for f in done.findings],
                "skipped": [f["id"] for f in done.data.get("skipped") or []],
                "result": done.json_data(0) if push or nfd else None,
                "expectations": (done.data.get("expect") or {}).get("verdict")}

    done = deadline.run(work, budget)
    doc["checks_s"] = round(done.elapsed, 3)
    if done.timed_out:
        outcome = judge.timed_out(budget)
    elif done.error is not None:
        outcome = judge.tool_error(done.error, done.code)
    else:
        findings = [_finding(d) for d in done.value["findings"]]
        outcome = judge.judge(findings, request.drain_on_warnings)
        doc["findings"], doc["skipped"] = done.value["findings"], done.value["skipped"]
        doc["expectations"] = done.value["expectations"]
    doc["outcome"] = outcome
    if push:
        result = done.value["result"] if outcome.status not in (judge.TIMEOUT, judge.TOOL_ERROR) else None
        try:
            doc["pushed"] = push_result(push, node, result, None if result else f"gate {mode}: {outcome.reason}")
        except RocetuneError as exc:  # never the node's fault: logged, never a drain
            doc["pushed"] = None
            doc["push_error"] = str(exc)
            _log_error(f"rocetune: {node}: result not kept: {exc}")
    if nfd:
        result = done.value["result"] if outcome.status not in (judge.TIMEOUT, judge.TOOL_ERROR) else None
        try:
            doc["nfd_features"] = write_nfd_features(nfd, outcome.status, (result or {}).get("fleet_facts"), node,
                                                     request.doctor.nfd_expiry)
        except RocetuneError as exc:
            doc["nfd_error"] = str(exc)
            _log_error(f"rocetune: {node}: feature file not written: {exc}")
    if talks_to_slurm and outcome.status != judge.TOOL_ERROR:
        left = lambda: max(0.5, timeout - (time.monotonic() - start))  # noqa: E731
        try:
            scontrol = Scontrol(request.scontrol)
            state = scontrol.node(node, timeout=left() / 2)
            action = judge.node_action(outcome, state)
            if action.kind == "drain":
                scontrol.drain(node, judge.drain_reason(outcome), timeout=left())
            elif action.kind == "resume":
                scontrol.resume(node, timeout=left())
            doc["action"] = action
            doc["was"] = {"state": state.text, "reason": state.reason}
        except SlurmError as exc:
            doc["note"] = f"Slurm not told: {exc}"
    return doc


def _finding(d: dict) -> Finding:
    """A Finding back from its to_dict() (what the checks' process sent)."""
    text = {k: str(d.get(k) or "") for k in ("id", "severity", "subject", "message", "kind", "source", "fix")}
    return Finding(**text, evidence=d.get("evidence"), rule=d.get("rule"), file=d.get("file"),
                   line=d.get("line"), key=d.get("key"), graded=d.get("graded"))


def _gated(doc: dict) -> Gated:
    from ..doctor import gate as judge

    outcome, action, note = doc["outcome"], doc.get("action"), doc.get("note") or ""
    code = judge.exit_code(doc["mode"], outcome)
    if note and outcome.status in (judge.HEALTHY, judge.WARNINGS) and doc["mode"] == "health-check":
        code = int(ExitCode.INTERNAL)  # a node that should be resumed and is not: slurmd logs it
    # A verdict reached without expectations says so: the node is held to nothing declared.
    tags = ("no expectations",) if doc.get("expectations") == "none" else ()
    text = judge.line(doc["mode"], doc["node"], outcome, action, note, doc.get("skipped") or (), tags)
    _syslog(outcome, action, note, text)
    data = {"gate": {"mode": doc["mode"], "node": doc["node"], "status": outcome.status, "reason": outcome.reason,
                     "exit_code": code, "timeout_s": doc.get("timeout_s"), "checks_s": doc.get("checks_s"),
                     "action": {"kind": action.kind, "why": action.why} if action else None,
                     "expectations": doc.get("expectations"),
                     "was": doc.get("was"), "note": note or None, "skipped": doc.get("skipped") or [],
                     "line": text, "pushed": doc.get("pushed"), "push_error": doc.get("push_error"),
                     "nfd_features": doc.get("nfd_features"), "nfd_error": doc.get("nfd_error")},
            "findings": doc.get("findings") or []}
    return Gated(code, text, data)


def _log_error(text: str) -> None:
    try:
        import syslog

        syslog.openlog("rocetune", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_ERR, text)
        syslog.closelog()
    except (ImportError, OSError):
        pass


def _syslog(outcome, action, note: str, text: str) -> None:
    """What an operator must hear about even when Slurm keeps the output nowhere (a prolog that
    exits 0): a broken tool, a timeout, a drain, a resume, Slurm not answering. To syslog (the
    journal), where the node has one."""
    from ..doctor import gate as judge

    loud = outcome.status in (judge.TOOL_ERROR, judge.TIMEOUT) or note or (action and action.kind != "none")
    if not loud:
        return
    try:
        import syslog

        syslog.openlog("rocetune", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_ERR if outcome.status != judge.HEALTHY else syslog.LOG_NOTICE, text)
        syslog.closelog()
    except (ImportError, OSError):
        pass
