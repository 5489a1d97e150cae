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


def register(p: argparse.ArgumentParser) -> None:
    from ..main import _Parser, _add_common  # the global options are accepted after the action too

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
    _register_gather(sub)
    _register_validate(sub)


def _register_gather(sub) -> None:
    from ..main import _add_common

    g = sub.add_parser("gather", help="run probe and doctor on each host over SSH, one HOST.json each in DIR",
                       description="run `COMMAND --json probe` and `COMMAND --json doctor --no-counters` on "
                                   "each host over SSH (strict host keys) and write DIR/HOST.json; for sites "
                                   "without Ansible (docs/fleet.md). Exit 1 when a host could not be gathered")
    _add_common(g, top=False)
    _add_hosts(g, "gather")
    g.add_argument("-o", "--out", metavar="DIR", required=True, help="directory for the HOST.json results")
    _add_ssh(g, "seconds per host for connect and both commands (default 60)")


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
    v.add_argument("-o", "--out", metavar="FILE", help="also write the results (JSON) here")
    v.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page here")
    v.add_argument("--mode", choices=("pairwise", "ring"), default="pairwise",
                   help="every pair once (default), or each host to the next")
    v.add_argument("--tests", default="rdma,tcp", metavar="LIST",
                   help="rdma, tcp or both, comma-separated (default rdma,tcp)")
    v.add_argument("--op", choices=("write", "read"), default="write", help="perftest's RDMA operation (default write)")
    v.add_argument("--seconds", type=int, default=5, metavar="S", help="length of each test (default 5)")
    v.add_argument("--size", type=int, default=65536, metavar="BYTES", help="perftest message size (default 65536)")
    v.add_argument("--fraction", type=float, default=0.9, metavar="F",
                   help="share of the line rate a test must reach (default 0.9)")
    v.add_argument("--line-rate", type=float, metavar="GBPS",
                   help="the line rate to judge against (default: the probed rate of the slower side)")
    _add_ssh(v, "seconds per host to connect and probe (default 60)")


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
    if action == "validate":
        return _validate(args)
    if action != "report":
        raise RocetuneError("fleet needs an action: gather HOSTS... -o DIR, report DIR, or validate HOSTS...",
                            hint="see 'rocetune fleet --help'", code=ExitCode.USAGE)
    from ...fleet import manifest, results
    from ...fleet.compare import compare, data

    checks = manifest.load(args.manifest) if args.manifest else []
    report = compare(results.load_dir(args.dir), checks)
    if args.html:
        _write_html(args.html, report)
    human = ""
    if not args.json:
        from ...render.fleet_text import report_text

        human = report_text(report, args.verbose)
    warnings = [w for h in report.hosts for w in h.warnings]
    return Result(command=NAME, data=data(report, args.manifest), human=human, warnings=warnings,
                  code=ExitCode.OK if report.clean else ExitCode.FINDINGS)


def _write_html(path: str, report) -> None:
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write
    from ...render.fleet_html import report_html

    try:
        atomic_write(path, report_html(report))
    except OSError as exc:
        raise RocetuneError(f"--html {path}: cannot write: {exc.strerror}", code=ExitCode.OUTPUT) from None


def _targets(args: argparse.Namespace, verb: str):
    """The hosts the command line names, checked, with the SSH defaults filled in."""
    import os

    from ...errors import ExitCode, RocetuneError
    from ...fleet import targets as tg

    if bool(args.hosts) == bool(args.inventory):
        raise RocetuneError(f"fleet {verb} needs hosts or --inventory FILE (one of them)", code=ExitCode.USAGE)
    if args.limit and not args.inventory:
        raise RocetuneError("--limit needs --inventory", code=ExitCode.USAGE)
    for name, value, low in (("--forks", args.forks, 1), ("--timeout", args.timeout, 0.001)):
        if not value >= low:
            raise RocetuneError(f"{name} {value}: must be at least {low:g}", code=ExitCode.USAGE)
    if args.port is not None and not 0 < args.port < 65536:
        raise RocetuneError(f"--port {args.port}: not a port", code=ExitCode.USAGE)
    if args.identity and not os.path.isfile(os.path.expanduser(args.identity)):
        raise RocetuneError(f"--identity {args.identity}: no such file", code=ExitCode.INPUT)
    try:
        import paramiko  # noqa: F401
    except ImportError:
        raise RocetuneError(f"fleet {verb} needs paramiko, and it cannot be imported",
                            hint="pip install paramiko" + (", or gather with the collection's play"
                                                           if verb == "gather" else ""),
                            code=ExitCode.INPUT) from None
    found = tg.from_inventory(args.inventory, args.limit) if args.inventory else tg.from_names(args.hosts)
    return tg.complete(found, tg.Defaults(args.user, args.port, args.identity))


def _gather(args: argparse.Namespace) -> Result:
    import os
    import sys

    from ...errors import ExitCode, RocetuneError
    from ...fleet.gather import Options, gather

    targets = _targets(args, "gather")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        raise RocetuneError(f"-o {args.out}: cannot create: {exc.strerror}", code=ExitCode.OUTPUT) from None
    opts = Options(command=args.command, timeout=args.timeout, known_hosts=args.known_hosts,
                   accept_new=args.accept_new, forks=args.forks)
    progress = _progress_line if sys.stderr.isatty() and not args.quiet else None
    outcomes = gather(targets, args.out, opts, progress)
    if progress:
        sys.stderr.write("\n")
    failed = [o for o in outcomes if o.error]
    data = {"dir": args.out,
            "hosts": [{"host": o.host, "file": o.path, "error": o.error} for o in outcomes],
            "summary": {"hosts": len(outcomes), "failed": len(failed)}}
    width = max(len(o.host) for o in outcomes)
    lines = [f"gathered {len(outcomes) - len(failed)} of {len(outcomes)} hosts into {args.out}"]
    lines += [f"  {o.host:<{width}}  {'FAILED: ' + o.error if o.error else 'ok'}" for o in outcomes]
    return Result(command=NAME, data=data, human="\n".join(lines) + "\n",
                  code=ExitCode.FINDINGS if failed else ExitCode.OK)


def _validate(args: argparse.Namespace) -> Result:
    import sys

    from ...errors import ExitCode, RocetuneError
    from ...fleet import pairtest
    from ...fleet.validate import Options, validate

    tests = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    if not tests or set(tests) - {"rdma", "tcp"}:
        raise RocetuneError(f"--tests {args.tests}: give rdma, tcp or rdma,tcp", code=ExitCode.USAGE)
    for name, value, ok in (("--seconds", args.seconds, 1 <= args.seconds <= 3600),
                            ("--size", args.size, 1 <= args.size <= 1 << 30),
                            ("--fraction", args.fraction, 0 < args.fraction <= 1),
                            ("--line-rate", args.line_rate, args.line_rate is None or 0 < args.line_rate < 1e6)):
        if not ok:
            raise RocetuneError(f"{name} {value}: out of range", code=ExitCode.USAGE)
    targets = _targets(args, "validate")
    if len(targets) < 2:
        raise RocetuneError("fleet validate needs at least two hosts", code=ExitCode.USAGE)
    settings = pairtest.Settings(rdma_op=args.op, seconds=args.seconds, size=args.size,
                                 fraction=args.fraction, line_rate_gbps=args.line_rate)
    opts = Options(command=args.command, mode=args.mode, tests=tests, settings=settings, timeout=args.timeout,
                   known_hosts=args.known_hosts, accept_new=args.accept_new, forks=args.forks)
    progress = _say if sys.stderr.isatty() and not args.quiet else None
    doc = validate(targets, opts, progress=progress)
    if args.out:
        _write(args.out, "-o", _json_text(doc))
    if args.html:
        from ...render.validate_html import validate_html

        _write(args.html, "--html", validate_html(doc))
    human = ""
    if not args.json:
        from ...render.validate_text import validate_text

        human = validate_text(doc, args.verbose)
    notes = [f"{h}: {n}" for h, d in doc["hosts"].items() for n in d.get("notes", [])]
    return Result(command=NAME, data=doc, human=human, warnings=notes,
                  code=ExitCode.OK if doc["summary"]["passed"] else ExitCode.FINDINGS)


def _json_text(doc: dict) -> str:
    import json

    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _write(path: str, flag: str, text: str) -> None:
    from ...errors import ExitCode, RocetuneError
    from ...fsutil import atomic_write

    try:
        atomic_write(path, text)
    except OSError as exc:
        raise RocetuneError(f"{flag} {path}: cannot write: {exc.strerror}", code=ExitCode.OUTPUT) from None


def _say(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _progress_line(done: int, total: int, failed: int) -> None:
    import sys

    sys.stderr.write(f"\rgathered {done}/{total}" + (f" ({failed} failed)" if failed else ""))
    sys.stderr.flush()
