"""rocetune doctor: is this node right? Its facts, its running state and its deployed env files
checked against the plan and against the pitfalls that cost bandwidth silently."""

from __future__ import annotations

import argparse

from .. import options, report
from ..result import Result

NAME = "doctor"
ORDER = 20
HELP = "check a node against its plan: MTU, PFC/ECN/pause, memlock, ACS, IOMMU, GIDs, env drift, boot units"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nccl-log", metavar="FILE",
                   help="a job's NCCL_DEBUG=INFO output: report what NCCL used (network, devices, "
                        "GID, GPUDirect, the variables it read, WARN lines) and every difference "
                        "from the plan")
    p.add_argument("--save-baseline", action="store_true",
                   help="save this reading of the NIC counters as the baseline the next run judges "
                        "rates against (/var/lib/rocetune/counters.json under --root)")
    p.add_argument("--no-counters", action="store_true", help="leave the NIC counters out")
    p.add_argument("--since", metavar="TIME", type=_since,
                   help="read the kernel log from TIME on (journalctl/dmesg syntax: '-2h', '2026-11-27 10:00'); "
                        "default: since boot")
    p.add_argument("--skip", metavar="ID=REASON", action="append", default=[],
                   help="do not grade check ID on this run, for REASON (repeatable; shown in the "
                        "report); /etc/rocetune/doctor.yml keeps such rules on the node")
    p.add_argument("--doctor-config", metavar="FILE",
                   help="the check configuration: checks to skip or grade otherwise, each with a "
                        "reason (default: /etc/rocetune/doctor.yml under --root when present)")
    p.add_argument("--metrics", metavar="FILE.prom",
                   help="also write the result as Prometheus metrics for node_exporter's textfile "
                        "collector, atomically (a status per check, NIC counter rates, env drift, the "
                        "expectations' verdict; docs/doctor.md)")
    p.add_argument("--write-expect", metavar="FILE",
                   help="write this node's expectations document to FILE (run it on a known-good "
                        "node; docs/expect.md): its GPUs, rails, GPUDirect, versions, QoS plan, "
                        "traffic class")
    options.add_plan_arguments(p)
    _register_gate(p)


def _register_gate(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scheduler gate (docs/gate.md)")
    g.add_argument("--gate", choices=("health-check", "prolog"),
                   help="run as Slurm's HealthCheckProgram (drain the node with one line of reason, resume "
                        "it when rocetune drained it and it is healthy again) or as a Prolog (exit non-zero "
                        "only for a node that must not run jobs); prints one line")
    g.add_argument("--timeout", type=float, metavar="S",
                   help="with --gate: the whole run's deadline in seconds (default 45 for health-check, 30 "
                        "for prolog); checks still running then count as a failure")
    g.add_argument("--node", metavar="NAME",
                   help="with --gate: the node's Slurm name (default $SLURMD_NODENAME, else the host name)")
    g.add_argument("--drain-on-warnings", action="store_true",
                   help="with --gate: warnings fail the node too (by default only failures do)")
    g.add_argument("--no-drain", action="store_true",
                   help="with --gate health-check: judge and exit, but leave the node's state to others")
    g.add_argument("--scontrol", metavar="PATH", help="with --gate: Slurm's scontrol (default: found on PATH "
                                                      "or in /usr/bin, /usr/sbin, /usr/local/bin ...)")


def _since(text: str) -> str:
    """What journalctl and dmesg both take: `-2h`/`-30min`/`-1d`, `today`, `yesterday`, or a
    date `YYYY-MM-DD` with an optional `HH:MM[:SS]`."""
    import re

    if re.match(r"^(-\d+(s|min|h|d)|today|yesterday|\d{4}-\d\d-\d\d( \d\d:\d\d(:\d\d)?)?)$", text):
        return text
    raise argparse.ArgumentTypeError(f"expected -2h, -30min, today or 'YYYY-MM-DD HH:MM', got {text!r}")


def run(args: argparse.Namespace) -> Result:
    if args.gate:
        return _gate(args)
    for flag, value in (("--timeout", args.timeout), ("--node", args.node), ("--scontrol", args.scontrol),
                        ("--drain-on-warnings", args.drain_on_warnings), ("--no-drain", args.no_drain)):
        if value:
            from ...errors import ExitCode, RocetuneError

            raise RocetuneError(f"{flag} goes with --gate health-check|prolog", code=ExitCode.USAGE)
    findings, data, features, host, code = _checks(args)
    return Result(command=NAME, data=data, code=code,
                  human="" if args.json else _text(findings, host, args, data))


def _text(findings, host: str, args: argparse.Namespace, data: dict) -> str:
    from ...doctor import report as doctor_report

    # what NCCL used comes first; the differences from the plan follow among the findings
    used = (data.get("nccl_log") or {}).get("used") or []
    expect_file, metrics_file = (data.get("expect") or {}).get("written"), data.get("metrics")
    written = [f"expectations written to {expect_file}"] if expect_file else []
    written += [f"metrics written to {metrics_file}"] if metrics_file else []
    return "".join(line + "\n" for line in used) + ("\n" if used else "") + \
        doctor_report.text(findings, host, args.verbose, data["check_config"]["rules"]) + \
        "".join(line + "\n" for line in written)


def _checks(args: argparse.Namespace):
    """doctor's run: (findings ordered, data as --json prints it, Features, host name, exit code)."""
    from ... import app
    from ...doctor import report as doctor_report

    if args.metrics and not args.metrics.endswith(".prom"):
        from ...errors import ExitCode, RocetuneError

        raise RocetuneError(f"--metrics {args.metrics}: node_exporter's textfile collector reads only "
                            "*.prom files", hint="name it e.g. /var/lib/prometheus/node-exporter/rocetune.prom",
                            code=ExitCode.USAGE)
    config = app.check_config(args.root, args.doctor_config, args.skip)
    features = report.collect(args)
    findings, data = app.doctor(features, options.plan_request(args), nccl_log=args.nccl_log,
                                counters=not args.no_counters, save_baseline=args.save_baseline,
                                config=config, since=args.since)
    findings = doctor_report.ordered(findings)
    host = features["host"].get("hostname") or args.root
    if args.write_expect:
        data["expect"]["written"] = _write_expect(args.write_expect, data["expect"]["facts"], host)
    data.update(findings=[f.to_dict() for f in findings], features=features)
    code = doctor_report.exit_code(findings)
    if args.metrics:
        data["metrics"] = _write_metrics(args.metrics, findings, data, int(code))
    if args.json:
        from ...fleet.facts import features_facts, to_json

        data["summary"] = doctor_report.summary(findings, host, int(code))
        data["fleet_facts"] = to_json(features_facts(features, data["plan"].get("env")))
        if not args.verbose:
            data = doctor_report.compact(data)
    return findings, data, features, host, code


def _gate(args: argparse.Namespace) -> Result:
    """doctor as Slurm's HealthCheckProgram or Prolog (rocetune.doctor.gate): never a traceback and
    never an exit status that drains a node for a fault of rocetune's own."""
    import os

    from ...doctor import gate

    # slurmd runs a HealthCheckProgram with no PATH at all: the tools doctor runs need one.
    os.environ.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    node = args.node or os.environ.get("SLURMD_NODENAME") or _short_hostname()
    try:
        doc = _gate_run(args, node)
    except Exception as exc:  # noqa: BLE001 - the gate's own failure is a tool error, loudly
        outcome = gate.tool_error(f"unexpected {type(exc).__name__}: {exc}", 70)
        doc = {"mode": args.gate, "node": node, "outcome": outcome, "action": None, "note": ""}
    return _gate_result(args, doc)


def _short_hostname() -> str:
    import socket

    return socket.gethostname().split(".")[0]


def _gate_run(args: argparse.Namespace, node: str) -> dict:
    import time

    from ...doctor import deadline, gate
    from ...doctor.slurm_node import Scontrol, SlurmError

    start = time.monotonic()
    mode = args.gate
    timeout = args.timeout if args.timeout is not None else gate.DEFAULT_TIMEOUT[mode]
    doc = {"mode": mode, "node": node, "timeout_s": timeout, "action": None, "note": ""}
    if not 0 < timeout <= 3600:
        doc["outcome"] = gate.tool_error(f"--timeout {timeout:g}: give 0 < S <= 3600 seconds", 2)
        return doc
    talks_to_slurm = mode == "health-check" and not args.no_drain
    budget = timeout - (min(gate.SLURM_RESERVE, timeout / 4) if talks_to_slurm else 0.0)

    def work() -> dict:
        findings, data, _features, host, _code = _checks(args)
        return {"host": host, "findings": [f.to_dict() for f in findings],
                "skipped": [f["id"] for f in data.get("skipped") or []]}

    done = deadline.run(work, budget)
    doc["checks_s"] = round(done.elapsed, 3)
    if done.timed_out:
        outcome = gate.timed_out(budget)
    elif done.error is not None:
        outcome = gate.tool_error(done.error, done.code)
    else:
        findings = [_finding(d) for d in done.value["findings"]]
        outcome = gate.judge(findings, args.drain_on_warnings)
        doc["findings"], doc["skipped"] = done.value["findings"], done.value["skipped"]
    doc["outcome"] = outcome
    if talks_to_slurm and outcome.status != gate.TOOL_ERROR:
        left = lambda: max(0.5, timeout - (time.monotonic() - start))  # noqa: E731
        try:
            scontrol = Scontrol(args.scontrol)
            state = scontrol.node(node, timeout=left() / 2)
            action = gate.node_action(outcome, state)
            if action.kind == "drain":
                scontrol.drain(node, gate.drain_reason(outcome), timeout=left())
            elif action.kind == "resume":
                scontrol.resume(node, timeout=left())
            doc["action"] = action
            doc["was"] = {"state": state.text, "reason": state.reason}
        except SlurmError as exc:
            doc["note"] = f"Slurm not told: {exc}"
    return doc


def _finding(d: dict):
    """A Finding back from its to_dict() (what the checks' process sent)."""
    from ...model.finding import Finding

    text = {k: str(d.get(k) or "") for k in ("id", "severity", "subject", "message", "kind", "source", "fix")}
    return Finding(**text, evidence=d.get("evidence"), rule=d.get("rule"), file=d.get("file"),
                   line=d.get("line"), key=d.get("key"), graded=d.get("graded"))


def _gate_result(args: argparse.Namespace, doc: dict) -> Result:
    from ...doctor import gate
    from ...errors import ExitCode

    outcome, action, note = doc["outcome"], doc.get("action"), doc.get("note") or ""
    code = gate.exit_code(doc["mode"], outcome)
    if note and outcome.status in (gate.HEALTHY, gate.WARNINGS) and doc["mode"] == "health-check":
        code = int(ExitCode.INTERNAL)  # a node that should be resumed and is not: slurmd logs it
    text = gate.line(doc["mode"], doc["node"], outcome, action, note, doc.get("skipped") or ())
    _syslog(outcome, action, note, text)
    data = {"gate": {"mode": doc["mode"], "node": doc["node"], "status": outcome.status, "reason": outcome.reason,
                     "exit_code": code, "timeout_s": doc.get("timeout_s"), "checks_s": doc.get("checks_s"),
                     "action": {"kind": action.kind, "why": action.why} if action else None,
                     "was": doc.get("was"), "note": note or None, "skipped": doc.get("skipped") or [],
                     "line": text},
            "findings": doc.get("findings") or []}
    return Result(command=NAME, data=data, code=ExitCode(code), human=text + "\n")


def _syslog(outcome, action, note: str, text: str) -> None:
    """What an operator must hear about even when Slurm keeps the output nowhere (a prolog that
    exits 0): a broken tool, a timeout, a drain, a resume, Slurm not answering. To syslog (the
    journal), where the node has one."""
    from ...doctor import gate

    loud = outcome.status in (gate.TOOL_ERROR, gate.TIMEOUT) or note or (action and action.kind != "none")
    if not loud:
        return
    try:
        import syslog

        syslog.openlog("rocetune", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_ERR if outcome.status != gate.HEALTHY else syslog.LOG_NOTICE, text)
        syslog.closelog()
    except (ImportError, OSError):
        pass


def _write_expect(path: str, facts: dict, host: str) -> str:
    """This node's expectations document, written atomically to `path`."""
    import os

    from ... import __version__
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write
    from ...model.expect import NodeFacts, document_of, dump

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
    import os

    from ... import __version__
    from ...checks import all_checks
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write
    from ...render.metrics import GRADED_KINDS, textfile

    ids = [c.id for c in all_checks() if c.kind in GRADED_KINDS]
    try:
        atomic_write(path, textfile(findings, data, ids, code, __version__), mode=0o644)
    except OSError as exc:
        raise RocetuneError(f"--metrics {path}: cannot write: {exc.strerror or exc}",
                            hint="the textfile collector's directory must exist and be writable",
                            code=ExitCode.OUTPUT) from None
    return os.path.abspath(path)
