"""rocetune qos: the ToR switch side of the QoS plan (docs/switch-qos.md).

    rocetune qos render --os OS [--ports P1,P2] [--qos FILE] [OS CHOICES] [-o FILE]
    rocetune qos check FILE [--os OS] [--qos FILE] [--hosts DIR]

OS is one of the switch operating systems of rocetune.switchos (sonic, nvue, eos). The plan is
--qos FILE, else /etc/rocetune/qos.yml under --root, else the built-in defaults (as the agent
reads it). `check` exits 1 on an error finding, 5 on warnings only, 0 when the switch follows the
plan. The earlier spellings still work and say what replaced them: `--plan` (now --qos, as every
verb), `render --switch OS` (now --os), `check --switch FILE` (now the argument) and
`--switch-kind` (now --os).
"""

from __future__ import annotations

import argparse
from typing import Dict, List, Optional

from ..result import Result

NAME = "qos"
ORDER = 45
HELP = ("the ToR switch side of the QoS plan: render a switch's QoS configuration (SONiC, NVUE, EOS), "
        "check a switch's running QoS against the plan")
_OLD = {
    "plan": "--plan is deprecated: use --qos FILE (the plan option of every verb)",
    "render_switch": "qos render --switch OS is deprecated: use --os OS",
    "check_switch": "qos check --switch FILE is deprecated: give FILE as the argument (qos check FILE)",
    "switch_kind": "--switch-kind is deprecated: use --os OS",
}


def register(p: argparse.ArgumentParser) -> None:
    from ... import switchos
    from ..main import _add_common, _Parser

    oses = "|".join(switchos.names())
    sub = p.add_subparsers(dest="qos_action", metavar="ACTION", parser_class=_Parser)
    r = sub.add_parser("render", help="write the switch QoS configuration the plan asks for",
                       description="write a switch's QoS configuration from the QoS plan, for the switch OS "
                                   "named with --os; the output says what it assumes and binds")
    _add_common(r, top=False)
    r.add_argument("--os", metavar=oses, help="the switch's network OS")
    r.add_argument("--switch", dest="old_switch", metavar=oses, help="deprecated spelling of --os")
    r.add_argument("--ports", metavar="P1,P2", default="",
                   help="the RoCE-facing ports to bind the QoS to, as the switch names them (without them only "
                        "switch-wide settings are bound)")
    _plan_options(r)
    for name, users in sorted(switchos.choices().items()):
        values = sorted({v for _, c in users for v in c.values})
        r.add_argument(users[0][1].flag, dest=f"choice_{name}", metavar="|".join(values),
                       help="; ".join(c.help for _, c in users))
    r.add_argument("-o", "--out", metavar="FILE", help="write here (atomically) instead of stdout")
    c = sub.add_parser("check", help="compare a switch's running QoS with the plan",
                       description="compare a switch's running QoS with the plan; exit 1 on a disagreement "
                                   "that loses packets, 5 on warnings only. FILE: "
                                   + "; ".join(f"{o.title}: {o.reads}" for o in switchos.registry().values()))
    _add_common(c, top=False)
    c.add_argument("file", nargs="?", metavar="FILE", help="the switch's output, saved to a file")
    c.add_argument("--os", metavar=oses, help="what FILE is (default: recognised from its content)")
    c.add_argument("--switch", dest="old_switch", metavar="FILE", help="deprecated spelling of FILE")
    c.add_argument("--switch-kind", dest="old_switch_kind", metavar=oses, help="deprecated spelling of --os")
    c.add_argument("--hosts", metavar="DIR",
                   help="also hold the switch against the hosts' NIC QoS in these fleet results "
                        "(rocetune fleet gather -o DIR, or playbooks/fleet.yml)")
    _plan_options(c)


def _plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--qos", metavar="FILE",
                   help="QoS plan (default: /etc/rocetune/qos.yml under --root when present, else the "
                        "built-in defaults)")
    p.add_argument("--plan", dest="old_plan", metavar="FILE", help="deprecated spelling of --qos")


def run(args: argparse.Namespace) -> Result:
    from ...errors import ExitCode, RocetuneError

    action = getattr(args, "qos_action", None)
    if action == "render":
        return _render(args)
    if action == "check":
        return _check(args)
    raise RocetuneError("qos needs an action: render --os OS, or check FILE",
                        hint="see 'rocetune qos --help'", code=ExitCode.USAGE)


def _one(new: Optional[str], old: Optional[str], new_flag: str, old_flag: str, note: str,
         notes: List[str]) -> Optional[str]:
    """The value of an option given in its new or its deprecated spelling (not both)."""
    from ...errors import ExitCode, RocetuneError

    if old is None:
        return new
    if new is not None and new != old:
        raise RocetuneError(f"{new_flag} {new} and {old_flag} {old} disagree", hint=f"{old_flag} is the old spelling "
                            f"of {new_flag}: give one", code=ExitCode.USAGE)
    notes.append(note)
    return old


def _plan(args: argparse.Namespace, notes: List[str]):
    from ... import app

    path = _one(args.qos, args.old_plan, "--qos", "--plan", _OLD["plan"], notes)
    return app.qos_plan(args.root, path, fallback=True)


def _render(args: argparse.Namespace) -> Result:
    from ... import switchos
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write
    from ...model.switch_qos import SwitchIntent

    notes: List[str] = []
    name = _one(args.os, args.old_switch, "--os", "--switch", _OLD["render_switch"], notes)
    if name is None:
        raise RocetuneError("qos render needs the switch OS: --os " + "|".join(switchos.names()),
                            code=ExitCode.USAGE)
    os_ = switchos.get(name)
    chosen = _chosen(args, os_)
    plan = _plan(args, notes)
    ports = switchos.ports_from(args.ports)
    rendered = os_.render(SwitchIntent.from_plan(plan), ports, chosen)
    text = rendered.text if rendered.text.endswith("\n") else rendered.text + "\n"
    warnings = notes + list(plan.warnings) + rendered.warnings
    if not ports:
        warnings.append(f"no --ports: {os_.title} output binds {rendered.bound}")
    if not os_.comments and rendered.assumes:
        warnings.append(f"the {os_.title} configuration assumes: " + "; ".join(rendered.assumes))
    data = {"os": os_.name, "switch": os_.name, "plan": plan.source, "ports": ports, "out": args.out,
            "suffix": os_.suffix, "choices": chosen, "assumes": rendered.assumes, "binds": rendered.bound}
    if args.out:
        try:
            atomic_write(args.out, text)
        except OSError as exc:
            raise RocetuneError(f"-o {args.out}: cannot write: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
        return Result(command=NAME, data=data, human=f"wrote {args.out} ({os_.name})", warnings=warnings)
    data["text"] = text
    return Result(command=NAME, data=data, raw=None if args.json else text, warnings=warnings)


def _chosen(args: argparse.Namespace, os_) -> Dict[str, str]:
    """The OS choices given on the command line; one another OS takes and this one does not is refused."""
    from ... import switchos
    from ...errors import ExitCode, RocetuneError

    own = {c.name for c in os_.choices}
    chosen: Dict[str, str] = {}
    for name, users in switchos.choices().items():
        value = getattr(args, f"choice_{name}", None)
        if value is None:
            continue
        if name not in own:
            others = ", ".join(o.name for o, _ in users)
            raise RocetuneError(f"{users[0][1].flag} is a choice of {others}, not of {os_.name}",
                                code=ExitCode.USAGE)
        chosen[name] = value
    return chosen


def _check(args: argparse.Namespace) -> Result:
    from ... import switchos
    from ...doctor import report as doctor_report
    from ...errors import ExitCode, RocetuneError
    from ...lint.switch_qos import compare

    notes: List[str] = []
    path = _one(args.file, args.old_switch, "FILE", "--switch", _OLD["check_switch"], notes)
    if path is None:
        raise RocetuneError("qos check needs the switch's output: qos check FILE", code=ExitCode.USAGE)
    kind = _one(args.os, args.old_switch_kind, "--os", "--switch-kind", _OLD["switch_kind"], notes)
    plan = _plan(args, notes)
    switch = switchos.read_file(path, kind)
    found = compare(plan, switch)
    host_notes: list = []
    if args.hosts:
        from ...fleet import results
        from ...lint.switch_hosts import compare_hosts

        host_found, host_notes = compare_hosts(plan, switch, results.load_dir(args.hosts))
        found += host_found
    findings = doctor_report.ordered(found)
    data = {"file": path, "switch": path, "kind": switch.kind, "form": switch.form, "plan": plan.source,
            "groups": [{"ports": g.ports} for g in switch.groups], "unbound_ports": switch.unbound_ports,
            "hosts": args.hosts, "findings": [f.to_dict() for f in findings]}
    human = "" if args.json else doctor_report.text(findings, f"{path} ({switch.kind})", args.verbose).replace(
        "doctor ", "qos check ", 1)
    return Result(command=NAME, data=data, human=human, code=doctor_report.exit_code(findings),
                  warnings=notes + list(plan.warnings) + switch.warnings + host_notes)
