"""rocetune fleet: the hosts of a cluster side by side. `gather` runs probe and doctor on each
host over SSH and writes one result per host into DIR; `report DIR` compares the per-host
results in DIR (docs/fleet.md) against each other and an optional desired-state manifest, and
names the host and the value that differ; `validate` runs bandwidth tests between the hosts
(perftest on every rail, iperf3 on the socket path) and judges them against the line rate."""

from __future__ import annotations

import argparse

from ..result import Result

NAME = "fleet"
ORDER = 60
HELP = ("gather probe and doctor from many hosts over SSH; compare the gathered results of many hosts: "
        "the odd host and value, against the majority or a manifest; validate: bandwidth between the hosts")
EXAMPLE = "rocetune fleet gather --inventory hosts.yml -o fleet/ && rocetune fleet report fleet/"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "every host gathered, tested or alike",
    1: "a host could not be gathered or tested, failed, or differs",
    5: "report: the hosts agree, and share warnings",
}


def register(p: argparse.ArgumentParser) -> None:
    from ..main import _add_common, _Parser  # the global options are accepted after the action too

    sub = p.add_subparsers(dest="fleet_action", metavar="ACTION", parser_class=_Parser)
    rep = sub.add_parser("report", help="compare the results in DIR (one HOST.json per host)",
                         description="compare the results in DIR (one HOST.json per host, docs/fleet.md); "
                                     "exit 1 when a host failed or differs, 0 when all agree")
    _add_common(rep, top=False)
    rep.add_argument("dir", metavar="DIR", help="directory of HOST.json results")
    rep.add_argument("--manifest", metavar="FILE",
                     help="desired state (YAML: mtu, gid_index, hca_count, hcas, nccl_version, kernel, "
                          "nic_driver, nic_fw, link: {speed, width, rate_gbps}, env: {NAME: value})")
    rep.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page here")
    rep.add_argument("--write-expect", metavar="FILE",
                     help="write the expectations document most hosts agree on (each host's from "
                          "doctor's facts; a field no value wins is left out; docs/expect.md)")
    _register_gather(sub)
    _register_topology(sub)
    _register_validate(sub)
    _register_preflight(sub)


def _register_gather(sub) -> None:
    from ..main import _add_common

    g = sub.add_parser("gather", help="run probe and doctor on each host over SSH, one HOST.json each in DIR",
                       description="run `COMMAND --json doctor -v --no-counters` (probe's Features and plan, and "
                                   "doctor's findings) on each host over SSH (strict host keys) and write "
                                   "DIR/HOST.json; for sites "
                                   "without Ansible (docs/fleet.md). Exit 1 when a host could not be gathered")
    _add_common(g, top=False)
    _add_hosts(g, "gather")
    g.add_argument("-o", "--out", metavar="DIR", required=True, help="directory for the HOST.json results")
    g.add_argument("--via", choices=("ssh", "srun"), default="ssh",
                   help="ssh (default): one connection per host; srun: one Slurm step, a task on each node "
                        "(HOST: Slurm node names or a hostlist; none: this job's nodes), Slurm's own fan-out")
    g.add_argument("--srun-arg", action="append", default=[], metavar="ARG",
                   help="with --via srun: one more srun argument (repeatable: --srun-arg=--partition=gpu)")
    _add_ssh(g, "seconds per host for connect and the command (default 60); with --via srun, for the whole step")


def _register_topology(sub) -> None:
    from ..main import _add_common

    t = sub.add_parser("topology", help="Slurm's topology.conf (tree) from the LLDP cabling of the results in DIR",
                       description="write Slurm's topology.conf (topology/tree) from the LLDP cabling of the "
                                   "results in DIR (as `fleet report` reads them): a leaf for each set of leaf "
                                   "switches the nodes' rails reach, the switches above from the switches' own "
                                   "LLDP; refused, with the reasons, where slurmctld would warn (docs/fleet.md). "
                                   "Exit 1 when refused")
    _add_common(t, top=False)
    t.add_argument("dir", metavar="DIR", help="directory of HOST.json results (HOST: the Slurm node name)")
    t.add_argument("-o", "--out", metavar="FILE", help="write topology.conf here (else it is printed)")
    t.add_argument("--nodes", metavar="LIST",
                   help="the Slurm nodes it must hold, no more and no fewer (a hostlist: gpu[001-128]; "
                        "expanded by scontrol)")
    t.add_argument("--switch-lldp", metavar="DIR",
                   help="each switch's `lldpctl -f json0` as DIR/SWITCH.json (leaves and those above): the "
                        "switches above the leaves")
    t.add_argument("--top", metavar="NAME", help="one switch above every leaf set, where no switch LLDP tells")


def _register_preflight(sub) -> None:
    from ..main import _add_common

    v = sub.add_parser("preflight", help="before a job: doctor on each of its nodes, then the pair tests among "
                                         "them, within a time budget; exit 1 names the nodes to leave out",
                       description="doctor on each node of a job (a node with an error finding fails), then "
                                   "validate's pair tests among the others, within --budget seconds; for a "
                                   "Slurm job step or prolog (--slurm reads SLURM_JOB_NODELIST through "
                                   "scontrol) or a Kubernetes init step (docs/fleet.md). Exit 0: go; 1: the "
                                   "failing nodes are named")
    _add_common(v, top=False)
    _add_hosts(v, "check")
    v.add_argument("--slurm", action="store_true",
                   help="the nodes of this Slurm job: `scontrol show hostnames $SLURM_JOB_NODELIST`")
    v.add_argument("--budget", type=float, default=300.0, metavar="S",
                   help="seconds for the whole preflight (default 300); pair rounds that would pass it are skipped")
    _add_tests(v, default_tests="rdma", default_seconds=3)
    _add_ssh(v, "seconds per host to connect, probe and run doctor (default 60)")


def _register_validate(sub) -> None:
    from ..main import _add_common

    v = sub.add_parser("validate", help="bandwidth between the hosts: perftest on every rail, iperf3 on the "
                                        "socket path, judged against the line rate",
                       description="probe each host over SSH, then test every pair once in the fewest rounds "
                                   "(or a ring): ib_write_bw/ib_read_bw rail to rail with the device, port and "
                                   "GID index the plan hands NCCL, the sender's counters showing the rail used, "
                                   "and iperf3 between the NCCL_SOCKET_IFNAME addresses (docs/fleet.md). "
                                   "Exit 1 when a pair fails or a host cannot be tested")
    _add_common(v, top=False)
    _add_hosts(v, "test")
    _add_tests(v, default_tests="rdma,tcp", default_seconds=5)
    _add_ssh(v, "seconds per host to connect and probe (default 60)")


def _add_tests(v, default_tests: str, default_seconds: int) -> None:
    v.add_argument("-o", "--out", metavar="FILE", help="also write the results (JSON) here")
    v.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page here")
    v.add_argument("--mode", choices=("auto", "pairwise", "ring", "fabric"), default="auto",
                   help="pairwise: every pair once (N-1 rounds); ring: each host to the next (2 rounds); "
                        "fabric: a ring sorted by leaf, then pairs across leaves from the LLDP cabling -- every "
                        "host, rail and leaf-to-leaf path in a few rounds; auto (default): pairwise up to 16 "
                        "hosts, fabric beyond")
    from ...app.fleet import all_tests

    listed = "; ".join(f"{t.name}: {t.summary}" for t in all_tests())
    v.add_argument("--tests", default=default_tests, metavar="LIST",
                   help=f"the tests to run, comma-separated (default {default_tests}): {listed}")
    for test in all_tests():
        if test.add_arguments:
            test.add_arguments(v.add_argument_group(f"{test.name} test options"))
    v.add_argument("--op", choices=("write", "read"), default="write", help="perftest's RDMA operation (default write)")
    v.add_argument("--seconds", type=int, default=default_seconds, metavar="S",
                   help=f"length of each test (default {default_seconds})")
    v.add_argument("--size", type=int, default=65536, metavar="BYTES", help="perftest message size (default 65536)")
    v.add_argument("--fraction", type=float, default=0.9, metavar="F",
                   help="share of the line rate a test must reach (default 0.9)")
    v.add_argument("--line-rate", type=float, metavar="GBPS",
                   help="the line rate to judge against (default: the probed rate of the slower side)")


def _add_hosts(g, verb: str) -> None:
    g.add_argument("hosts", nargs="*", metavar="HOST", help=f"[USER@]HOST to {verb} (or --inventory)")
    g.add_argument("--inventory", "-i", metavar="FILE", help="an Ansible inventory (YAML or INI; needs ansible-core)")
    g.add_argument("--limit", metavar="GROUP", help="with --inventory: only this group (an Ansible host pattern)")


def _add_ssh(g, timeout_help: str) -> None:
    g.add_argument("--user", "-u", metavar="U", help="remote user where the inventory names none")
    g.add_argument("--port", type=int, metavar="N", help="SSH port where the inventory names none")
    g.add_argument("--identity", metavar="FILE", help="private key where the inventory names none")
    g.add_argument("--forks", type=int, default=16, metavar="N", help="hosts gathered at once (default 16)")
    g.add_argument("--timeout", type=float, default=60.0, metavar="S", help=timeout_help)
    g.add_argument("--command", default="rocetune", metavar="CMD",
                   help="the rocetune command on the hosts, run by the remote shell (default rocetune)")
    g.add_argument("--known-hosts", metavar="FILE",
                   help="known_hosts file read besides ~/.ssh/known_hosts; --accept-new records keys here")
    g.add_argument("--accept-new", action="store_true",
                   help="record the key of a host not yet known (never accepts a changed key)")


def run(args: argparse.Namespace) -> Result:
    from ...errors import ExitCode, RocetuneError

    action = getattr(args, "fleet_action", None)
    if action == "gather":
        return _gather(args)
    if action == "topology":
        return _topology(args)
    if action in ("validate", "preflight"):
        return _validate(args)
    if action != "report":
        raise RocetuneError("fleet needs an action: gather HOSTS... -o DIR, report DIR, topology DIR, or "
                            "validate HOSTS...",
                            hint="see 'rocetune fleet --help'", code=ExitCode.USAGE)
    from ...app.fleet import ReportRequest, report

    done = report(ReportRequest(args.dir, args.manifest, args.write_expect, args.html))
    human = ""
    if not args.json:
        from ...render.fleet_text import expect_text, report_text

        human = report_text(done.report, args.verbose)
        human += expect_text(done.expect, args.write_expect) if done.expect else ""
    return Result(command=NAME, data=done.doc, human=human, warnings=done.warnings,
                  code=ExitCode.FINDINGS if not done.report.clean else
                  ExitCode.WARNINGS if done.report.shared else ExitCode.OK)


def _ssh(args: argparse.Namespace):
    from ...app.fleet import SshRequest

    return SshRequest(tuple(args.hosts or ()), args.inventory, args.limit, args.user, args.port, args.identity,
                      args.forks, args.timeout, args.known_hosts, args.accept_new)


def _gather(args: argparse.Namespace) -> Result:
    import sys

    from ...app.fleet import GatherRequest, gather
    from ...errors import ExitCode

    progress = _progress_line if sys.stderr.isatty() and not args.quiet else None
    done = gather(GatherRequest(_ssh(args), args.out, args.command, args.via, tuple(args.srun_arg)), progress)
    if progress:
        sys.stderr.write("\n")
    outcomes = done.outcomes
    failed = [o for o in outcomes if o.error]
    data = {"dir": args.out,
            "hosts": [{"host": o.host, "file": o.path, "error": o.error} for o in outcomes],
            "summary": {"hosts": len(outcomes), "failed": len(failed)}}
    width = max(len(o.host) for o in outcomes)
    lines = [f"gathered {len(outcomes) - len(failed)} of {len(outcomes)} hosts into {args.out}"]
    lines += [f"  {o.host:<{width}}  {'FAILED: ' + o.error if o.error else 'ok'}" for o in outcomes]
    return Result(command=NAME, data=data, human="\n".join(lines) + "\n", warnings=done.warnings,
                  code=ExitCode.FINDINGS if failed else ExitCode.OK)


def _topology(args: argparse.Namespace) -> Result:
    from ...app.fleet import TopologyRequest, topology
    from ...errors import ExitCode

    done = topology(TopologyRequest(args.dir, args.out, args.nodes, args.switch_lldp, args.top))
    lines = []
    if done.text is None:
        lines.append(f"topology.conf refused ({len(done.topology.refused)} reason(s)); nothing written:")
        lines += [f"  ! {r}" for r in done.topology.refused]
    elif args.out:
        leaves = sum(1 for s in done.topology.switches if s.level == 0)
        lines.append(f"wrote {args.out}: {leaves} leaf set(s), {len(done.topology.switches)} switch(es), "
                     f"{len(done.topology.placements)} node(s)")
    human = "\n".join(lines) + "\n" if lines else ""
    if done.text is not None and not args.out:
        human = done.text
    return Result(command=NAME, data=done.doc, human=human, warnings=done.topology.notes,
                  code=ExitCode.OK if done.text is not None else ExitCode.FINDINGS)


def _validate(args: argparse.Namespace) -> Result:
    import sys

    from ...app.fleet import ValidateRequest, validate
    from ...errors import ExitCode

    verb = args.fleet_action
    request = ValidateRequest(_ssh(args), verb, args.tests, args, args.command, args.mode, args.op, args.seconds,
                              args.size, args.fraction, args.line_rate, getattr(args, "budget", 0.0),
                              slurm=bool(getattr(args, "slurm", False)), out=args.out, html=args.html)
    done = validate(request, progress=_say if sys.stderr.isatty() and not args.quiet else None)
    doc = done.doc
    human = ""
    if not args.json:
        from ...render.validate_text import validate_text

        human = validate_text(doc, args.verbose)
        if verb == "preflight":
            human += ("preflight: GO\n" if done.passed else
                      "preflight: STOP -- leave out " + (", ".join(doc["summary"]["suspects"]) or "(see above)") + "\n")
    return Result(command=NAME, data=doc, human=human, warnings=done.warnings,
                  code=ExitCode.OK if done.passed else ExitCode.FINDINGS)


def _say(line: str) -> None:
    import sys

    from ...text import terminal_text

    sys.stderr.write(terminal_text(line) + "\n")  # names and reasons a node supplied
    sys.stderr.flush()


def _progress_line(done: int, total: int, failed: int) -> None:
    import sys

    sys.stderr.write(f"\rgathered {done}/{total}" + (f" ({failed} failed)" if failed else ""))
    sys.stderr.flush()
