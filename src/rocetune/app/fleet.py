"""The fleet: gather each host's result over SSH, compare the results (report), and validate
the fabric between hosts (preflight, validate)."""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.record import FrozenRecord, Record


class SshRequest(FrozenRecord):
    """The hosts a fleet verb reaches, and how: names or an inventory, and the SSH settings."""

    hosts: Tuple[str, ...]
    inventory: Optional[str]
    limit: Optional[str]
    user: Optional[str]
    port: Optional[int]
    identity: Optional[str]
    forks: int
    timeout: float
    known_hosts: Optional[str]
    accept_new: bool
    _fields = ("hosts", "inventory", "limit", "user", "port", "identity", "forks", "timeout", "known_hosts",
               "accept_new")

    def __init__(self, hosts: Tuple[str, ...] = (), inventory: Optional[str] = None, limit: Optional[str] = None,
                 user: Optional[str] = None, port: Optional[int] = None, identity: Optional[str] = None,
                 forks: int = 16, timeout: float = 60.0, known_hosts: Optional[str] = None,
                 accept_new: bool = False) -> None:
        self._set(hosts, inventory, limit, user, port, identity, forks, timeout, known_hosts, accept_new)


def targets(ssh: SshRequest, verb: str) -> Tuple[list, List[str]]:
    """The hosts named, checked, with the SSH defaults filled in; and the warnings that gave."""
    from ..fleet import targets as tg

    if bool(ssh.hosts) == bool(ssh.inventory):
        raise RocetuneError(f"fleet {verb} needs hosts or --inventory FILE (one of them)", code=ExitCode.USAGE)
    if ssh.limit and not ssh.inventory:
        raise RocetuneError("--limit needs --inventory", code=ExitCode.USAGE)
    for name, value, low in (("--forks", ssh.forks, 1), ("--timeout", ssh.timeout, 0.001)):
        if not value >= low:
            raise RocetuneError(f"{name} {value}: must be at least {low:g}", code=ExitCode.USAGE)
    if ssh.port is not None and not 0 < ssh.port < 65536:
        raise RocetuneError(f"--port {ssh.port}: not a port", code=ExitCode.USAGE)
    if ssh.identity and not os.path.isfile(os.path.expanduser(ssh.identity)):
        raise RocetuneError(f"--identity {ssh.identity}: no such file", code=ExitCode.INPUT)
    try:
        import paramiko  # noqa: F401
    except ImportError:
        raise RocetuneError(f"fleet {verb} needs paramiko, and it cannot be imported",
                            hint="pip install paramiko" + (", or gather with the collection's play"
                                                           if verb == "gather" else ""),
                            code=ExitCode.INPUT) from None
    found = tg.from_inventory(ssh.inventory, ssh.limit) if ssh.inventory else tg.from_names(list(ssh.hosts))
    warnings: List[str] = []
    return tg.complete(found, tg.Defaults(ssh.user, ssh.port, ssh.identity), warn=warnings.append), warnings


# --- gather ----------------------------------------------------------------------------------
class GatherRequest(FrozenRecord):
    ssh: SshRequest
    out: str  # the directory the results go to
    command: str  # the rocetune command on the hosts
    via: str  # ssh | srun
    srun_args: Tuple[str, ...]  # with srun: more srun arguments (a partition, an account)
    _fields = ("ssh", "out", "command", "via", "srun_args")

    def __init__(self, ssh: SshRequest, out: str, command: str, via: str = "ssh",
                 srun_args: Tuple[str, ...] = ()) -> None:
        self._set(ssh, out, command, via, srun_args)


class Gathered(Record):
    outcomes: list  # rocetune.fleet.gather's outcome per host
    warnings: List[str]
    _fields = ("outcomes", "warnings")

    def __init__(self, outcomes: list, warnings: List[str]) -> None:
        self.outcomes = outcomes
        self.warnings = warnings


def gather(request: GatherRequest, progress: Optional[Callable[[int, int, int], None]] = None) -> Gathered:
    from ..fleet.gather import Options
    from ..fleet.gather import gather as run_gather
    from ..fsutil import UNSAFE_DIR_HINT, OutputError, directory_problem

    why = directory_problem(request.out)  # before any host: root's results stay root's
    if why:
        raise OutputError(request.out, why, hint=UNSAFE_DIR_HINT)
    if request.via == "srun":
        return _gather_srun(request, progress)
    if request.srun_args:
        raise RocetuneError("--srun-arg goes with --via srun", code=ExitCode.USAGE)
    found, warnings = targets(request.ssh, "gather")
    try:
        os.makedirs(request.out, exist_ok=True)
    except OSError as exc:
        raise RocetuneError(f"-o {request.out}: cannot create: {exc.strerror}", code=ExitCode.OUTPUT) from None
    ssh = request.ssh
    opts = Options(command=request.command, timeout=ssh.timeout, known_hosts=ssh.known_hosts,
                   accept_new=ssh.accept_new, forks=ssh.forks)
    return Gathered(run_gather(found, request.out, opts, progress), warnings)


def _gather_srun(request: GatherRequest, progress) -> Gathered:
    """Through one srun step (rocetune.fleet.srun_gather): the nodes named, else the job's."""
    from ..fleet import srun_gather

    ssh = request.ssh
    if ssh.inventory:
        raise RocetuneError("--via srun takes Slurm node names (or the job's nodes), not --inventory",
                            code=ExitCode.USAGE)
    if not ssh.timeout > 0:
        raise RocetuneError(f"--timeout {ssh.timeout}: must be above 0", code=ExitCode.USAGE)
    nodes = expand_hostlist(",".join(ssh.hosts), "fleet gather") if ssh.hosts else slurm_nodes()
    why = srun_gather.check_names(nodes)
    if why:
        raise RocetuneError(f"fleet gather: {why}", code=ExitCode.INPUT)
    try:
        os.makedirs(request.out, exist_ok=True)
    except OSError as exc:
        raise RocetuneError(f"-o {request.out}: cannot create: {exc.strerror}", code=ExitCode.OUTPUT) from None
    opts = srun_gather.Options(command=request.command, timeout=ssh.timeout, srun_args=request.srun_args)
    return Gathered(srun_gather.gather(nodes, request.out, opts, progress), [])


# --- report ----------------------------------------------------------------------------------
class ReportRequest(FrozenRecord):
    dir: str  # the gathered results
    manifest: Optional[str]  # the fleet's declared checks
    write_expect: Optional[str]  # write the majority's expectations here
    html: Optional[str]  # write the report page here
    _fields = ("dir", "manifest", "write_expect", "html")

    def __init__(self, dir: str, manifest: Optional[str] = None, write_expect: Optional[str] = None,
                 html: Optional[str] = None) -> None:
        self._set(dir, manifest, write_expect, html)


class Reported(Record):
    report: Any  # rocetune.fleet.compare's report
    doc: dict  # its JSON document
    expect: Any  # the fleet's expectations written (--write-expect), or None
    _fields = ("report", "doc", "expect")

    def __init__(self, report: Any, doc: dict, expect: Any) -> None:
        self.report = report
        self.doc = doc
        self.expect = expect

    @property
    def warnings(self) -> List[str]:
        return [w for h in self.report.hosts for w in h.warnings]


def report(request: ReportRequest) -> Reported:
    from ..fleet import manifest, results
    from ..fleet.compare import compare, data

    checks = manifest.load(request.manifest) if request.manifest else []
    found = results.load_dir(request.dir, keep_features=False)
    compared = compare(found, checks)
    doc = data(compared, request.manifest)
    expect = _write_expect(request.write_expect, found) if request.write_expect else None
    if expect is not None:
        doc["expect"] = dict(expect.to_dict(), written=request.write_expect)
    if request.html:
        from ..render.fleet_html import report_html

        write_text(request.html, "--html", report_html(compared))
    return Reported(compared, doc, expect)


def _write_expect(path: str, found):
    from .. import __version__
    from ..fleet.expect import fleet_expectations, header
    from ..model.expect import dump

    fe = fleet_expectations(found)
    if not fe.hosts:
        raise RocetuneError(f"--write-expect {path}: no host's result holds doctor's facts to vote with",
                            hint="gather with `fleet gather` or playbooks/fleet.yml, or give `rocetune --json "
                                 "doctor` files", code=ExitCode.INPUT)
    write_text(path, "--write-expect", dump(fe.majority.document, header(fe, __version__)), mode=0o644)
    return fe


def write_text(path: str, flag: str, text: str, mode: Optional[int] = None) -> None:
    """Write a file a fleet verb was asked for, atomically; an error names the option."""
    from ..fsutil import atomic_write

    try:
        if mode is None:
            atomic_write(path, text)
        else:
            atomic_write(path, text, mode=mode)
    except OSError as exc:
        raise RocetuneError(f"{flag} {path}: cannot write: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None


# --- topology ---------------------------------------------------------------------------------
class TopologyRequest(FrozenRecord):
    dir: str  # the fleet's results (as report reads them)
    out: Optional[str]  # write topology.conf here (else it is only printed)
    nodes: Optional[str]  # the scheduler's nodes, a Slurm hostlist (`gpu[001-016]`), expanded by scontrol
    switch_lldp: Optional[str]  # a directory of SWITCH.json: each switch's `lldpctl -f json0`
    top: Optional[str]  # a switch the operator names above every leaf set
    _fields = ("dir", "out", "nodes", "switch_lldp", "top")

    def __init__(self, dir: str, out: Optional[str] = None, nodes: Optional[str] = None,
                 switch_lldp: Optional[str] = None, top: Optional[str] = None) -> None:
        self._set(dir, out, nodes, switch_lldp, top)


class TopologyMade(Record):
    topology: Any  # rocetune.fleet.topology.Topology
    text: Optional[str]  # topology.conf, None when refused
    doc: dict
    _fields = ("topology", "text", "doc")

    def __init__(self, topology: Any, text: Optional[str], doc: dict) -> None:
        self.topology = topology
        self.text = text
        self.doc = doc


def topology(request: TopologyRequest) -> TopologyMade:
    """Slurm's topology.conf (tree) from the results' LLDP cabling; written only when slurmctld
    would take it without a warning (rocetune.fleet.topology)."""
    from .. import __version__
    from ..fleet import results
    from ..fleet import topology as topo
    from ..render.slurm_topology import topology_conf

    nodes = expand_hostlist(request.nodes, "--nodes") if request.nodes else None
    uplinks = topo.uplinks_from_lldp(_switch_lldp(request.switch_lldp)) if request.switch_lldp else None
    found = results.load_dir(request.dir, keep_features=False)
    placements = [topo.place(r.host, r.node_facts() if r.ok else {}, r.error) for r in found]
    made = topo.build(placements, nodes, uplinks, request.top)
    top = request.top if any(s.name == request.top for s in made.switches) else None
    text = topology_conf(made, __version__, request.dir, top) if made.ok else None
    if text is not None and request.out:
        write_text(request.out, "-o", text, mode=0o644)
    doc = {"dir": request.dir, "written": request.out if text is not None else None, "refused": made.refused,
           "notes": made.notes,
           "switches": [{"name": s.name, "level": s.level, "physical": list(s.physical), "nodes": s.nodes,
                         "switches": s.children} for s in made.switches] if made.ok else [],
           "nodes": [{"node": p.host, "leaves": list(p.leaves), "problem": p.problem} for p in made.placements]}
    return TopologyMade(made, text, doc)


def _switch_lldp(directory: str) -> dict:
    """{switch: {interface: [neighbour]}} from DIR/SWITCH.json, each a switch's `lldpctl -f json0`."""
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input, trusted_owners
    from ..model.jsonread import MAX_DOCUMENT_BYTES
    from ..probe.parsers.lldpctl import parse_lldpctl_json

    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except OSError as exc:
        raise RocetuneError(f"--switch-lldp {directory}: cannot list: {exc.strerror}", code=ExitCode.INPUT) from None
    if not names:
        raise RocetuneError(f"--switch-lldp {directory}: no SWITCH.json in it",
                            hint="save each switch's `lldpctl -f json0` as DIR/<its LLDP name>.json",
                            code=ExitCode.INPUT)
    out = {}
    for name in names:
        path = os.path.join(directory, name)
        try:
            data = read_input(path, MAX_DOCUMENT_BYTES, follow=False, owners=trusted_owners())
            out[name[:-5]] = parse_lldpctl_json(data.decode("utf-8", "replace"))
        except HostReadError as exc:
            raise RocetuneError(f"--switch-lldp {path}: {exc.reason}", code=ExitCode.INPUT) from None
        except OSError as exc:
            raise RocetuneError(f"--switch-lldp {path}: {exc.strerror}", code=ExitCode.INPUT) from None
        except RocetuneError as exc:
            raise RocetuneError(f"--switch-lldp {path}: {exc}", code=ExitCode.INPUT) from None
    return out


# --- validate, preflight -----------------------------------------------------------------------
def all_tests() -> list:
    """The fleet tests (rocetune.fleet.tests), each with the options it adds to validate and preflight."""
    from ..fleet import tests as registry

    return list(registry.all_tests())


class ValidateRequest(FrozenRecord):
    ssh: SshRequest
    verb: str  # validate | preflight
    tests: str  # comma-separated, as given
    options: Any  # the command line's options, for each test's own settings (fleet.tests)
    command: str
    mode: str
    op: str
    seconds: int
    size: int
    fraction: float
    line_rate: Optional[float]
    budget: float
    slurm: bool  # preflight: the hosts are the Slurm job's nodes
    out: Optional[str]  # the result document goes here too
    html: Optional[str]  # the result page goes here
    _fields = ("ssh", "verb", "tests", "options", "command", "mode", "op", "seconds", "size", "fraction",
               "line_rate", "budget", "slurm", "out", "html")

    def __init__(self, ssh: SshRequest, verb: str, tests: str, options: Any, command: str,
                 mode: str, op: str, seconds: int, size: int, fraction: float, line_rate: Optional[float],
                 budget: float, slurm: bool = False, out: Optional[str] = None, html: Optional[str] = None) -> None:
        self._set(ssh, verb, tests, options, command, mode, op, seconds, size, fraction, line_rate, budget,
                  slurm, out, html)


class Validated(Record):
    doc: dict
    warnings: List[str]
    _fields = ("doc", "warnings")

    def __init__(self, doc: dict, warnings: List[str]) -> None:
        self.doc = doc
        self.warnings = warnings

    @property
    def passed(self) -> bool:
        return bool(self.doc["summary"]["passed"])


def validate(request: ValidateRequest, progress: Optional[Callable[[str], None]] = None) -> Validated:
    from ..fleet import pairtest
    from ..fleet import tests as registry
    from ..fleet.validate import Options
    from ..fleet.validate import validate as run_validate

    tests = tuple(t.strip() for t in request.tests.split(",") if t.strip())
    known = registry.names()
    if not tests or set(tests) - set(known):
        raise RocetuneError(f"--tests {request.tests}: give any of {', '.join(known)} (comma-separated)",
                            code=ExitCode.USAGE)
    for name, value, ok in (("--seconds", request.seconds, 1 <= request.seconds <= 3600),
                            ("--size", request.size, 1 <= request.size <= 1 << 30),
                            ("--fraction", request.fraction, 0 < request.fraction <= 1),
                            ("--line-rate", request.line_rate,
                             request.line_rate is None or 0 < request.line_rate < 1e6)):
        if not ok:
            raise RocetuneError(f"{name} {value}: out of range", code=ExitCode.USAGE)
    preflight = request.verb == "preflight"
    ssh = request.ssh
    if preflight and request.slurm:
        if ssh.hosts or ssh.inventory:
            raise RocetuneError("--slurm takes the job's nodes: give no hosts or --inventory", code=ExitCode.USAGE)
        ssh = ssh.replace(hosts=tuple(slurm_nodes()))
    if preflight and not request.budget > 0:
        raise RocetuneError(f"--budget {request.budget}: must be above 0", code=ExitCode.USAGE)
    chosen = registry.selected(tests)
    test_settings = {t.name: t.settings(request.options) for t in chosen if t.settings}
    found, warnings = targets(ssh, request.verb)
    if len(found) < 2 and not preflight and any(t.needs_pairs for t in chosen):
        raise RocetuneError("fleet validate needs at least two hosts for pair tests", code=ExitCode.USAGE)
    settings = pairtest.Settings(rdma_op=request.op, seconds=request.seconds, size=request.size,
                                 fraction=request.fraction, line_rate_gbps=request.line_rate)
    opts = Options(command=request.command, mode=request.mode, tests=tests, settings=settings,
                   timeout=ssh.timeout, known_hosts=ssh.known_hosts, accept_new=ssh.accept_new, forks=ssh.forks,
                   doctor=preflight, budget=request.budget if preflight else None, test_settings=test_settings)
    doc = run_validate(found, opts, progress=progress)
    if request.out:
        import json

        write_text(request.out, "-o", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if request.html:
        from ..render.validate_html import validate_html

        write_text(request.html, "--html", validate_html(doc))
    notes = warnings + [f"{h}: {n}" for h, d in doc["hosts"].items() for n in d.get("notes", [])]
    return Validated(doc, notes)


def slurm_nodes() -> List[str]:
    """The job's nodes, expanded by Slurm's own scontrol (its hostlist syntax: gpu[01-04,07])."""
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        raise RocetuneError("--slurm: SLURM_JOB_NODELIST is not set (not inside a Slurm job)",
                            hint="run it in the job (srun -N1 -n1 ...) or name the nodes", code=ExitCode.INPUT)
    return expand_hostlist(nodelist, "--slurm")


def expand_hostlist(nodelist: str, flag: str) -> List[str]:
    """A Slurm hostlist (`gpu[01-04,07]`) as names, expanded by Slurm's own `scontrol show hostnames`."""
    import subprocess

    try:
        proc = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                              text=True, timeout=30, check=False)
    except FileNotFoundError:
        raise RocetuneError(f"{flag}: scontrol is not in PATH, so the node list "
                            f"({nodelist}) cannot be expanded",
                            hint="run it where Slurm's client commands are installed (a job's own "
                                 "nodes, the controller or a login node)" + (
                                     ", or name the nodes: fleet preflight HOST..." if flag == "--slurm" else ""),
                            code=ExitCode.INPUT) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RocetuneError(f"{flag}: cannot run scontrol: {exc}",
                            hint="check that Slurm's scontrol runs here, or name the nodes",
                            code=ExitCode.INPUT) from None
    nodes = proc.stdout.split()
    if proc.returncode != 0 or not nodes:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise RocetuneError(f"{flag}: scontrol show hostnames {nodelist}: {said}", code=ExitCode.INPUT)
    return nodes
