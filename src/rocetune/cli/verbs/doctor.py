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


def run(args: argparse.Namespace) -> Result:
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
                                config=config)
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
    return Result(command=NAME, data=data, code=code,
                  human="" if args.json else doctor_report.text(findings, host, args.verbose,
                                                                data["check_config"]["rules"]))


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
