"""The switch side of the QoS plan: render a switch OS's QoS configuration from the plan, and
hold a switch's running QoS (and the hosts' NIC QoS beside it) to the plan."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.finding import Finding
from ..model.record import FrozenRecord, Record
from ..switchos import choices as os_choices  # noqa: F401  (the options every OS offers, for a parser)
from ..switchos import names as os_names  # noqa: F401
from ..switchos import registry as os_registry  # noqa: F401
from .inputs import qos_plan


class QosRenderRequest(FrozenRecord):
    os: str  # a switch OS of rocetune.switchos
    root: str  # where /etc/rocetune/qos.yml is looked for
    qos_path: Optional[str]  # the plan; None: the root's, else the built-in defaults
    ports: str  # "P1,P2": the RoCE-facing ports to bind
    choices: Tuple[Tuple[str, str], ...]  # the OS choices given (name, value)
    out: Optional[str]  # write here; None: the text is returned
    fabric: str  # "P1,P2": ports to other switches (leaf uplinks, spine ports)
    _fields = ("os", "root", "qos_path", "ports", "choices", "out", "fabric")

    def __init__(self, os: str, root: str = "/", qos_path: Optional[str] = None, ports: str = "",
                 choices: Tuple[Tuple[str, str], ...] = (), out: Optional[str] = None, fabric: str = "") -> None:
        self._set(os, root, qos_path, ports, choices, out, fabric)


class QosRendered(Record):
    os: Any  # rocetune.switchos.base.SwitchOs
    plan: Any  # the QoS plan rendered
    rendered: Any  # the OS's Rendered: text, what it binds and assumes
    text: str
    ports: List[str]
    chosen: Dict[str, str]
    warnings: List[str]
    _fields = ("os", "plan", "rendered", "text", "ports", "chosen", "warnings")

    def __init__(self, os: Any, plan: Any, rendered: Any, text: str, ports: List[str], chosen: Dict[str, str],
                 warnings: List[str]) -> None:
        self.os = os
        self.plan = plan
        self.rendered = rendered
        self.text = text
        self.ports = ports
        self.chosen = chosen
        self.warnings = warnings


def render(request: QosRenderRequest) -> QosRendered:
    """Render (and with `out`, write atomically) the OS's QoS configuration; a choice of another
    OS is RocetuneError (ExitCode.USAGE), an unwritable `out` ExitCode.OUTPUT."""
    from .. import switchos
    from ..fsutil import atomic_write
    from ..model.switch_qos import SwitchIntent

    os_ = switchos.get(request.os)
    chosen = _chosen(os_, request.choices)
    plan = qos_plan(request.root, request.qos_path, fallback=True)
    assert plan is not None  # the built-in defaults stand in for a missing file
    ports = switchos.ports_from(request.ports)
    fabric = switchos.ports_from(request.fabric, "--fabric-ports")
    both = set(ports) & set(fabric)
    if both:
        raise RocetuneError(f"--ports and --fabric-ports both name {', '.join(sorted(both))}",
                            hint="a port faces a host (--ports) or another switch (--fabric-ports)",
                            code=ExitCode.USAGE)
    intent = SwitchIntent.from_plan(plan)
    # an OS module written before fabric ports takes (intent, ports, chosen) only
    rendered = os_.render(intent, ports, chosen, fabric) if fabric else os_.render(intent, ports, chosen)
    ports = ports + fabric
    text = rendered.text if rendered.text.endswith("\n") else rendered.text + "\n"
    warnings = list(plan.warnings) + rendered.warnings
    if not ports:
        warnings.append(f"no --ports: {os_.title} output binds {rendered.bound}")
    if not os_.comments and rendered.assumes:
        warnings.append(f"the {os_.title} configuration assumes: " + "; ".join(rendered.assumes))
    if request.out:
        try:
            atomic_write(request.out, text)
        except OSError as exc:
            raise RocetuneError(f"-o {request.out}: cannot write: {exc.strerror or exc}",
                                code=ExitCode.OUTPUT) from None
    return QosRendered(os_, plan, rendered, text, ports, chosen, warnings)


def _chosen(os_: Any, given: Tuple[Tuple[str, str], ...]) -> Dict[str, str]:
    """The OS choices given; one another OS takes and this one does not is refused."""
    from .. import switchos

    own = {c.name for c in os_.choices}
    users_of = switchos.choices()
    chosen: Dict[str, str] = {}
    for name, value in given:
        if name not in own:
            users = users_of[name]
            others = ", ".join(o.name for o, _ in users)
            raise RocetuneError(f"{users[0][1].flag} is a choice of {others}, not of {os_.name}",
                                code=ExitCode.USAGE)
        chosen[name] = value
    return chosen


class QosCheckRequest(FrozenRecord):
    file: str  # the switch's output, saved to a file
    os: Optional[str]  # what `file` is; None: recognised from its content
    root: str
    qos_path: Optional[str]
    hosts: Optional[str]  # fleet results to hold the switch against the hosts' NIC QoS
    counters: Optional[str]  # the switch's counter shows, saved to a file (SONiC)
    _fields = ("file", "os", "root", "qos_path", "hosts", "counters")

    def __init__(self, file: str, os: Optional[str] = None, root: str = "/", qos_path: Optional[str] = None,
                 hosts: Optional[str] = None, counters: Optional[str] = None) -> None:
        self._set(file, os, root, qos_path, hosts, counters)


class QosChecked(Record):
    file: str
    switch: Any  # rocetune.model.switch_qos.SwitchQos as read from the file
    plan: Any
    findings: List[Finding]  # most severe first
    warnings: List[str]
    _fields = ("file", "switch", "plan", "findings", "warnings")

    def __init__(self, file: str, switch: Any, plan: Any, findings: List[Finding], warnings: List[str]) -> None:
        self.file = file
        self.switch = switch
        self.plan = plan
        self.findings = findings
        self.warnings = warnings

    @property
    def exit_code(self) -> ExitCode:
        from ..doctor import report

        return report.exit_code(self.findings)

    def text(self, verbose: int = 0) -> str:
        """The findings as doctor shows a host's, under the file's name and kind."""
        from ..doctor import report

        return report.text(self.findings, f"{self.file} ({self.switch.kind})", verbose).replace(
            "doctor ", "qos check ", 1)


def check(request: QosCheckRequest) -> QosChecked:
    from .. import switchos
    from ..doctor import report
    from ..lint.switch_qos import compare

    plan = qos_plan(request.root, request.qos_path, fallback=True)
    assert plan is not None
    switch = switchos.read_file(request.file, request.os)
    if request.counters:
        switchos.read_counters(request.counters, switch)
    found = compare(plan, switch)
    host_notes: List[str] = []
    if request.hosts:
        from ..fleet import results
        from ..lint.switch_hosts import compare_hosts

        host_found, host_notes = compare_hosts(plan, switch, results.load_dir(request.hosts))
        found += host_found
    return QosChecked(request.file, switch, plan, report.ordered(found),
                      list(plan.warnings) + switch.warnings + host_notes)
