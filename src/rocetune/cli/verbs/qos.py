"""rocetune qos: the switch side of the QoS plan (docs/switch-qos.md).

    rocetune qos render --os OS [--ports P1,P2] [--fabric-ports P3,P4] [--qos FILE] [OS CHOICES] [-o FILE]
    rocetune qos check FILE [--os OS] [--qos FILE] [--hosts DIR]

OS is one of the switch operating systems of rocetune.switchos (sonic, nvue, eos, nxos). The plan is
--qos FILE, else /etc/rocetune/qos.yml under --root, else the built-in defaults (as the agent
reads it). `check` exits 1 on an error finding, 5 on warnings only, 0 when the switch follows the
plan. The earlier spellings still work and say what replaced them: `--plan` (now --qos, as every
verb), `render --switch OS` (now --os), `check --switch FILE` (now the argument) and
`--switch-kind` (now --os).
"""

from __future__ import annotations

import argparse
from typing import List, Optional, Tuple

from ..result import Result

NAME = "qos"
ORDER = 45
HELP = ("the switch side of the QoS plan: render a switch's QoS configuration (SONiC, NVUE, EOS, NX-OS), "
        "check a switch's running QoS against the plan")
EXAMPLE = "rocetune qos check switch-running.json --hosts fleet/"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "rendered, or the switch agrees with the plan",
    1: "qos check: the switch differs from the plan (error findings)",
    5: "qos check: warnings only",
}
_OLD = {
    "plan": "--plan is deprecated: use --qos FILE (the plan option of every verb)",
    "render_switch": "qos render --switch OS is deprecated: use --os OS",
    "check_switch": "qos check --switch FILE is deprecated: give FILE as the argument (qos check FILE)",
    "switch_kind": "--switch-kind is deprecated: use --os OS",
}


def register(p: argparse.ArgumentParser) -> None:
    from ...app.qos import os_choices, os_names, os_registry
    from ..main import _add_common, _Parser

    oses = "|".join(os_names())
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
    r.add_argument("--fabric-ports", metavar="P1,P2", default="",
                   help="ports to other switches (a leaf's uplinks, a spine's ports): the same classes, PFC, "
                        "queues and watchdog; the plan's cable length (the hosts' cables) is not applied to them")
    _plan_options(r)
    for name, users in sorted(os_choices().items()):
        values = sorted({v for _, c in users for v in c.values})
        r.add_argument(users[0][1].flag, dest=f"choice_{name}", metavar="|".join(values),
                       help="; ".join(c.help for _, c in users))
    r.add_argument("-o", "--out", metavar="FILE", help="write here (atomically) instead of stdout")
    c = sub.add_parser("check", help="compare a switch's running QoS with the plan",
                       description="compare a switch's running QoS with the plan; exit 1 on a disagreement "
                                   "that loses packets, 5 on warnings only. FILE: "
                                   + "; ".join(f"{o.title}: {o.reads}" for o in os_registry().values()))
    _add_common(c, top=False)
    c.add_argument("file", nargs="?", metavar="FILE", help="the switch's output, saved to a file")
    c.add_argument("--os", metavar=oses, help="what FILE is (default: recognised from its content)")
    c.add_argument("--switch", dest="old_switch", metavar="FILE", help="deprecated spelling of FILE")
    c.add_argument("--switch-kind", dest="old_switch_kind", metavar=oses, help="deprecated spelling of --os")
    c.add_argument("--hosts", metavar="DIR",
                   help="also hold the switch against the hosts' NIC QoS in these fleet results "
                        "(rocetune fleet gather -o DIR, or playbooks/fleet.yml)")
    c.add_argument("--counters", metavar="FILE",
                   help="also read the switch's counters saved here (SONiC: show pfc counters, show queue "
                        "counters, show queue wredcounters, one after another)")
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


def _given_choices(args: argparse.Namespace) -> Tuple[Tuple[str, str], ...]:
    from ...app.qos import os_choices

    return tuple((name, value) for name in os_choices()
                 if (value := getattr(args, f"choice_{name}", None)) is not None)


def _render(args: argparse.Namespace) -> Result:
    from ...app.qos import QosRenderRequest, os_names, render
    from ...errors import ExitCode, RocetuneError

    notes: List[str] = []
    name = _one(args.os, args.old_switch, "--os", "--switch", _OLD["render_switch"], notes)
    if name is None:
        raise RocetuneError("qos render needs the switch OS: --os " + "|".join(os_names()),
                            code=ExitCode.USAGE)
    qos_path = _one(args.qos, args.old_plan, "--qos", "--plan", _OLD["plan"], notes)
    done = render(QosRenderRequest(name, args.root, qos_path, args.ports, _given_choices(args), args.out,
                                   args.fabric_ports))
    os_, rendered = done.os, done.rendered
    warnings = notes + done.warnings
    data = {"os": os_.name, "switch": os_.name, "plan": done.plan.source, "ports": done.ports, "out": args.out,
            "suffix": os_.suffix, "choices": done.chosen, "assumes": rendered.assumes, "binds": rendered.bound}
    if args.out:
        return Result(command=NAME, data=data, human=f"wrote {args.out} ({os_.name})", warnings=warnings)
    data["text"] = done.text
    return Result(command=NAME, data=data, raw=None if args.json else done.text, warnings=warnings)


def _check(args: argparse.Namespace) -> Result:
    from ...app.qos import QosCheckRequest, check
    from ...errors import ExitCode, RocetuneError

    notes: List[str] = []
    path = _one(args.file, args.old_switch, "FILE", "--switch", _OLD["check_switch"], notes)
    if path is None:
        raise RocetuneError("qos check needs the switch's output: qos check FILE", code=ExitCode.USAGE)
    kind = _one(args.os, args.old_switch_kind, "--os", "--switch-kind", _OLD["switch_kind"], notes)
    qos_path = _one(args.qos, args.old_plan, "--qos", "--plan", _OLD["plan"], notes)
    done = check(QosCheckRequest(path, kind, args.root, qos_path, args.hosts, args.counters))
    switch = done.switch
    data = {"file": path, "switch": path, "kind": switch.kind, "form": switch.form, "plan": done.plan.source,
            "groups": [{"ports": g.ports} for g in switch.groups], "unbound_ports": switch.unbound_ports,
            "inactive_ports": switch.inactive_ports, "counters": switch.counters,
            "hosts": args.hosts, "findings": [f.to_dict() for f in done.findings]}
    human = "" if args.json else done.text(args.verbose)
    return Result(command=NAME, data=data, human=human, code=done.exit_code, warnings=notes + done.warnings)
