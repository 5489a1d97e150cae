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
    options.add_plan_arguments(p)


def _since(text: str) -> str:
    """What journalctl and dmesg both take: `-2h`/`-30min`/`-1d`, `today`, `yesterday`, or a
    date `YYYY-MM-DD` with an optional `HH:MM[:SS]`."""
    import re

    if re.match(r"^(-\d+(s|min|h|d)|today|yesterday|\d{4}-\d\d-\d\d( \d\d:\d\d(:\d\d)?)?)$", text):
        return text
    raise argparse.ArgumentTypeError(f"expected -2h, -30min, today or 'YYYY-MM-DD HH:MM', got {text!r}")


def run(args: argparse.Namespace) -> Result:
    from ... import app
    from ...doctor import report as doctor_report

    features = report.collect(args)
    findings, data = app.doctor(features, options.plan_request(args), nccl_log=args.nccl_log,
                                counters=not args.no_counters, save_baseline=args.save_baseline,
                                since=args.since)
    findings = doctor_report.ordered(findings)
    host = features["host"].get("hostname") or args.root
    data.update(findings=[f.to_dict() for f in findings], features=features)
    return Result(command=NAME, data=data, code=doctor_report.exit_code(findings),
                  human="" if args.json else doctor_report.text(findings, host, args.verbose))
