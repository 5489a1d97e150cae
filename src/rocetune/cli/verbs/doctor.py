"""rocetune doctor: is this node right? Its facts, its running state and its deployed env files
checked against the plan and against the pitfalls that cost bandwidth silently."""

from __future__ import annotations

import argparse

from .. import options
from ..result import Result

NAME = "doctor"
ORDER = 20
HELP = "check a node against its plan: MTU, PFC/ECN/pause, memlock, ACS, IOMMU, GIDs, env drift, boot units"
EXAMPLE = "rocetune doctor --skip doctor-ecn-off=\"the fabric marks ECN at the switch\""
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "every check passed",
    1: "a check failed",
    5: "no failure, but warnings (a Slurm prolog drains on any non-zero exit: use --gate prolog there)",
}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nccl-log", metavar="FILE",
                   help="a job's NCCL_DEBUG=INFO output: report what NCCL used (network, devices, "
                        "GID, GPUDirect, the variables it read, WARN lines) and every difference "
                        "from the plan")
    p.add_argument("--ras", metavar="FILE", action="append", default=[],
                   help="a job's recorded `ncclras` answer (text or -f json); give two, in order, to judge "
                        "progress between the polls (docs/ras.md)")
    p.add_argument("--ras-addr", metavar="HOST[:PORT]",
                   help="ask a running job's RAS (NCCL_RAS_ADDR, default localhost:28028): STATUS twice, "
                        "then DIAGNOSTICS (2.31+); read-only commands only, never CONTROL")
    p.add_argument("--ras-interval", metavar="S", type=float, default=10.0,
                   help="with --ras-addr: seconds between the two polls (default 10)")
    p.add_argument("--save-baseline", action="store_true",
                   help="keep this reading of the NIC counters in the window later runs judge rates "
                        "over (the last hour; /var/lib/rocetune/counters.json under --root; --gate "
                        "always does)")
    p.add_argument("--no-counters", action="store_true", help="leave the NIC counters out")
    p.add_argument("--since", metavar="TIME", type=_since,
                   help="judge the kernel log from TIME on (journalctl/dmesg syntax: '-2h', '2026-11-27 10:00'); "
                        "default: the last 24 hours (docs/gate.md)")
    p.add_argument("--repaired", metavar="REASON",
                   help="mark the node repaired now (after mlxfwreset, a reseated cable, a GPU reset): kernel-log "
                        "events and NIC counter readings from before stop counting (docs/gate.md)")
    p.add_argument("--skip", metavar="ID=REASON", action="append", default=[],
                   help="do not grade check ID on this run, for REASON (repeatable; shown in the "
                        "report); /etc/rocetune/doctor.yml keeps such rules on the node")
    p.add_argument("--doctor-config", metavar="FILE",
                   help="the node settings file: checks to skip or grade otherwise (each with a "
                        "reason), the jobs' NCCL release, env overrides, other env files jobs source "
                        "(default: /etc/rocetune/doctor.yml under --root when present)")
    p.add_argument("--metrics", metavar="FILE.prom",
                   help="also write the result as Prometheus metrics for node_exporter's textfile "
                        "collector, atomically (a status per check, NIC counter rates, env drift, the "
                        "expectations' verdict; docs/doctor.md)")
    p.add_argument("--push", metavar="DIR",
                   help="also keep the result as DIR/NODE.json (NODE: the short host name, or --node with "
                        "--gate), atomically, in the form `fleet report DIR` reads: a directory the operator "
                        "names, shared or collected (docs/fleet.md)")
    p.add_argument("--nfd-features", metavar="FILE",
                   help="also write node-feature-discovery's feature file (in /etc/kubernetes/node-feature-discovery/"
                        "features.d/): the verdict, RoCE readiness, rails, NCCL and its plugins under rocetune.io/, "
                        "the rails' leaf switches under fabric.topograph.run/tier-1 (docs/kubernetes.md)")
    p.add_argument("--nfd-expiry", type=float, default=900.0, metavar="S",
                   help="with --nfd-features: the labels expire S seconds after the run (default 900)")
    p.add_argument("--write-expect", metavar="FILE",
                   help="write this node's expectations document to FILE (run it on a known-good "
                        "node; docs/expect.md): its GPUs, rails, GPUDirect, versions, QoS plan, "
                        "traffic class; refused on a node that fails unless --force")
    p.add_argument("--force", action="store_true",
                   help="with --write-expect: write from a node that fails, leaving out (and naming) the "
                        "fields its failures touch")
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

    if re.match(r"^(-\d+(s|min|h|d)|today|yesterday|\d{4}-\d\d-\d\d( \d\d:\d\d(:\d\d)?)?)\Z", text):
        return text
    raise argparse.ArgumentTypeError(f"expected -2h, -30min, today or 'YYYY-MM-DD HH:MM', got {text!r}")


def run(args: argparse.Namespace) -> Result:
    from ...app.doctor import doctor

    if args.gate:
        return _gate(args)
    if args.force and not args.write_expect:
        from ...errors import ExitCode, RocetuneError

        raise RocetuneError("--force goes with --write-expect", code=ExitCode.USAGE)
    for flag, value in (("--timeout", args.timeout), ("--node", args.node), ("--scontrol", args.scontrol),
                        ("--drain-on-warnings", args.drain_on_warnings), ("--no-drain", args.no_drain)):
        if value:
            from ...errors import ExitCode, RocetuneError

            raise RocetuneError(f"{flag} goes with --gate health-check|prolog", code=ExitCode.USAGE)
    done = doctor(_request(args))
    data = done.json_data(args.verbose) if args.json else done.data
    return Result(command=NAME, data=data, code=done.code, human="" if args.json else done.text(args.verbose))


def _request(args: argparse.Namespace):
    from ...app.doctor import DoctorRequest

    return DoctorRequest(options.plan_request(args), getattr(args, "features", None),
                         getattr(args, "nccl_version", None), args.nccl_log, not args.no_counters,
                         args.save_baseline, args.doctor_config, tuple(args.skip), args.since, args.write_expect,
                         args.metrics, tuple(args.ras), args.ras_addr, args.ras_interval, args.push,
                         args.node if args.gate else None, args.nfd_features, args.nfd_expiry,
                         repaired=args.repaired, force=args.force)


def _gate(args: argparse.Namespace) -> Result:
    """doctor as Slurm's HealthCheckProgram or Prolog: one line, and the exit status Slurm acts on."""
    from ...app.doctor import GateRequest, gate
    from ...errors import ExitCode

    done = gate(GateRequest(args.gate, _request(args), node=args.node, timeout=args.timeout,
                            drain_on_warnings=args.drain_on_warnings, no_drain=args.no_drain,
                            scontrol=args.scontrol))
    return Result(command=NAME, data=done.data, code=ExitCode(done.code), human=done.line + "\n")
