"""Doctor: a node's facts, running state and deployed env files checked against its plan; and
the same as Slurm's HealthCheckProgram or Prolog (the gate), which drains and resumes the node."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.finding import Finding
from ..model.record import FrozenRecord, Record
from .inputs import check_config, host_features
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
    _fields = ("plan", "features_path", "nccl_version", "nccl_log", "counters", "save_baseline", "config_path",
               "skips", "since", "write_expect", "metrics")

    def __init__(self, plan: PlanRequest, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                 nccl_log: Optional[str] = None, counters: bool = True, save_baseline: bool = False,
                 config_path: Optional[str] = None, skips: Tuple[str, ...] = (), since: Optional[str] = None,
                 write_expect: Optional[str] = None, metrics: Optional[str] = None) -> None:
        self._set(plan, features_path, nccl_version, nccl_log, counters, save_baseline, config_path, skips,
                  since, write_expect, metrics)


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
        data["fleet_facts"] = to_json(features_facts(self.features, data["plan"].get("env")))
        return data if verbose else report.compact(data)

    def text(self, verbose: int = 0) -> str:
        """What NCCL used first, then the findings, then the files written."""
        from ..doctor import report

        data = self.data
        used = (data.get("nccl_log") or {}).get("used") or []
        expect_file, metrics_file = (data.get("expect") or {}).get("written"), data.get("metrics")
        written = [f"expectations written to {expect_file}"] if expect_file else []
        written += [f"metrics written to {metrics_file}"] if metrics_file else []
        return "".join(line + "\n" for line in used) + ("\n" if used else "") + \
            report.text(self.findings, self.host, verbose, data["check_config"]["rules"]) + \
            "".join(line + "\n" for line in written)


def doctor(request: DoctorRequest) -> Doctored:
    from ..doctor import report

    if request.metrics and not request.metrics.endswith(".prom"):
        raise RocetuneError(f"--metrics {request.metrics}: node_exporter's textfile collector reads only "
                            "*.prom files", hint="name it e.g. /var/lib/prometheus/node-exporter/rocetune.prom",
                            code=ExitCode.USAGE)
    root = request.plan.root
    config = check_config(root, request.config_path, request.skips)
    features = host_features(root, request.features_path)
    if request.nccl_version:
        from ..model.features import with_nccl_version

        features = with_nccl_version(features, request.nccl_version)
    found, data = doctor_checks(features, request.plan, nccl_log=request.nccl_log, counters=request.counters,
                               save_baseline=request.save_baseline, config=config, since=request.since)
    findings = report.ordered(found)
    host = features["host"].get("hostname") or root
    if request.write_expect:
        data["expect"]["written"] = _write_expect(request.write_expect, data["expect"]["facts"], host)
    data.update(findings=[f.to_dict() for f in findings], features=features)
    code = report.exit_code(findings)
    if request.metrics:
        data["metrics"] = _write_metrics(request.metrics, findings, data, int(code))
    return Doctored(findings, data, features, host, code)


def _write_expect(path: str, facts: dict, host: str) -> str:
    """This node's expectations document, written atomically to `path`."""
    from .. import __version__
    from ..fsutil import atomic_write
    from ..model.expect import NodeFacts, document_of, dump

    text = dump(document_of(NodeFacts.from_dict(facts)), [
        f"rocetune {__version__} expectations, written by `rocetune doctor --write-expect` on {host}.",
        "Every field is optional: delete one to stop checking it (docs/expect.md)."])
    try:
        atomic_write(path, text, mode=0o644)
    except OSError as exc:
        raise RocetuneError(f"--write-expect {path}: cannot write: {exc.strerror or exc}",
                            code=ExitCode.OUTPUT) from None
    return os.path.abspath(path)


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

    def work() -> dict:
        done = doctor(request.doctor)
        return {"host": done.host, "findings": [f.to_dict() for f in done.findings],
                "skipped": [f["id"] for f in done.data.get("skipped") or []]}

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
    doc["outcome"] = outcome
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
    text = judge.line(doc["mode"], doc["node"], outcome, action, note, doc.get("skipped") or ())
    _syslog(outcome, action, note, text)
    data = {"gate": {"mode": doc["mode"], "node": doc["node"], "status": outcome.status, "reason": outcome.reason,
                     "exit_code": code, "timeout_s": doc.get("timeout_s"), "checks_s": doc.get("checks_s"),
                     "action": {"kind": action.kind, "why": action.why} if action else None,
                     "was": doc.get("was"), "note": note or None, "skipped": doc.get("skipped") or [],
                     "line": text},
            "findings": doc.get("findings") or []}
    return Gated(code, text, data)


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
