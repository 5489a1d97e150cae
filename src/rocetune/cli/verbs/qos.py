"""rocetune qos: the ToR switch side of the QoS plan (docs/switch-qos.md).

    rocetune qos render --switch sonic|nvue|eos [--ports P1,P2] [--plan FILE] [-o FILE]
    rocetune qos check --switch FILE [--switch-kind sonic|nvue|eos] [--plan FILE]

The plan is --plan FILE, else /etc/rocetune/qos.yml under --root, else the built-in defaults (as
the agent reads it). `check` exits 1 on an error finding, 5 on warnings only, 0 when the switch
follows the plan.
"""

from __future__ import annotations

import argparse

from ..result import Result

NAME = "qos"
ORDER = 45
HELP = "the ToR switch side of the QoS plan: render SONiC, NVUE or EOS configuration, check a switch's running QoS against the plan"
KINDS = ("sonic", "nvue", "eos")


def register(p: argparse.ArgumentParser) -> None:
    from ..main import _Parser, _add_common

    sub = p.add_subparsers(dest="qos_action", metavar="ACTION", parser_class=_Parser)
    r = sub.add_parser("render", help="write the switch QoS configuration the plan asks for",
                       description="write a switch's QoS configuration from the QoS plan: SONiC CONFIG_DB JSON "
                                   "(`config load FILE`), NVUE commands, or EOS configuration")
    _add_common(r, top=False)
    r.add_argument("--switch", required=True, choices=KINDS, help="the switch's network OS")
    r.add_argument("--ports", metavar="P1,P2", default="",
                   help="ports to bind the QoS to (SONiC PORT_QOS_MAP and QUEUE, EOS interfaces)")
    _plan_option(r)
    r.add_argument("-o", "--out", metavar="FILE", help="write here (atomically) instead of stdout")
    c = sub.add_parser("check", help="compare a switch's running QoS with the plan",
                       description="compare a switch's running QoS with the plan: SONiC CONFIG_DB JSON "
                                   "(sonic-cfggen -d --print-data), `nv show qos roce`, or an EOS running-config; "
                                   "exit 1 on a disagreement that loses packets, 5 on warnings only")
    _add_common(c, top=False)
    c.add_argument("--switch", required=True, metavar="FILE", help="the switch's output, saved to a file")
    c.add_argument("--switch-kind", choices=KINDS, help="what FILE is (default: recognised from its content)")
    c.add_argument("--hosts", metavar="DIR",
                   help="also hold the switch against the hosts' NIC QoS in these fleet results "
                        "(rocetune fleet gather -o DIR, or playbooks/fleet.yml)")
    _plan_option(c)


def _plan_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", "--qos", dest="plan", metavar="FILE",
                   help="QoS plan (default: /etc/rocetune/qos.yml under --root when present, else the "
                        "built-in defaults)")


def run(args: argparse.Namespace) -> Result:
    from ...errors import ExitCode, RocetuneError

    action = getattr(args, "qos_action", None)
    if action == "render":
        return _render(args)
    if action == "check":
        return _check(args)
    raise RocetuneError("qos needs an action: render --switch KIND, or check --switch FILE",
                        hint="see 'rocetune qos --help'", code=ExitCode.USAGE)


def _render(args: argparse.Namespace) -> Result:
    from ... import app
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write
    from ...render.switch_qos import ports_from, render

    plan = app.qos_plan(args.root, args.plan, fallback=True)
    ports = ports_from(args.ports)
    text = render(plan, args.switch, ports)
    warnings = list(plan.warnings)
    if not ports and args.switch in ("sonic", "eos"):
        warnings.append("no --ports: the maps and profiles are written but bound to no port"
                        + (" (SONiC: PFC and queues are per port)" if args.switch == "sonic" else ""))
    data = {"switch": args.switch, "plan": plan.source, "ports": ports, "out": args.out}
    if args.out:
        try:
            atomic_write(args.out, text)
        except OSError as exc:
            raise RocetuneError(f"-o {args.out}: cannot write: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
        return Result(command=NAME, data=data, human=f"wrote {args.out} ({args.switch})", warnings=warnings)
    data["text"] = text
    return Result(command=NAME, data=data, raw=None if args.json else text, warnings=warnings)


def _check(args: argparse.Namespace) -> Result:
    from ... import app
    from ...doctor import report as doctor_report
    from ...lint.switch_qos import compare
    from ...probe.parsers.switch_read import read_switch

    plan = app.qos_plan(args.root, args.plan, fallback=True)
    switch = read_switch(args.switch, args.switch_kind)
    found = compare(plan, switch)
    notes: list = []
    if args.hosts:
        from ...fleet import results
        from ...lint.switch_hosts import compare_hosts

        host_found, notes = compare_hosts(plan, switch, results.load_dir(args.hosts))
        found += host_found
    findings = doctor_report.ordered(found)
    data = {"switch": args.switch, "kind": switch.kind, "plan": plan.source,
            "groups": [{"ports": g.ports} for g in switch.groups], "hosts": args.hosts,
            "findings": [f.to_dict() for f in findings]}
    human = "" if args.json else doctor_report.text(findings, f"{args.switch} ({switch.kind})", args.verbose).replace(
        "doctor ", "qos check ", 1)
    return Result(command=NAME, data=data, human=human, code=doctor_report.exit_code(findings),
                  warnings=list(plan.warnings) + switch.warnings + notes)
