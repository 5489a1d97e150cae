"""rocetune fleet: the hosts of a cluster side by side. `gather` runs probe and doctor on each
host over SSH and writes one result per host into DIR; `report DIR` compares the per-host
results in DIR (docs/fleet.md) against each other and an optional desired-state manifest, and
names the host and the value that differ."""

from __future__ import annotations

import argparse

from ..result import Result

NAME = "fleet"
ORDER = 60
HELP = "gather probe and doctor from many hosts over SSH; compare the gathered results of many hosts: the odd host and value, against the majority or a manifest"


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


def _register_gather(sub) -> None:
    from ..main import _add_common

    g = sub.add_parser("gather", help="run probe and doctor on each host over SSH, one HOST.json each in DIR",
                       description="run `COMMAND --json probe` and `COMMAND --json doctor --no-counters` on "
                                   "each host over SSH (strict host keys) and write DIR/HOST.json; for sites "
                                   "without Ansible (docs/fleet.md). Exit 1 when a host could not be gathered")
    _add_common(g, top=False)
    g.add_argument("hosts", nargs="*", metavar="HOST", help="[USER@]HOST to gather (or --inventory)")
    g.add_argument("--inventory", "-i", metavar="FILE", help="an Ansible inventory (YAML or INI; needs ansible-core)")
    g.add_argument("--limit", metavar="GROUP", help="with --inventory: only this group (an Ansible host pattern)")
    g.add_argument("-o", "--out", metavar="DIR", required=True, help="directory for the HOST.json results")
    g.add_argument("--user", "-u", metavar="U", help="remote user where the inventory names none")
    g.add_argument("--port", type=int, metavar="N", help="SSH port where the inventory names none")
    g.add_argument("--identity", metavar="FILE", help="private key where the inventory names none")
    g.add_argument("--forks", type=int, default=16, metavar="N", help="hosts gathered at once (default 16)")
    g.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="seconds per host for connect and both commands (default 60)")
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
    if action != "report":
        raise RocetuneError("fleet needs an action: gather HOSTS... -o DIR, or report DIR",
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


def _gather(args: argparse.Namespace) -> Result:
    import os
    import sys

    from ...errors import ExitCode, RocetuneError
    from ...fleet import targets as tg

    if bool(args.hosts) == bool(args.inventory):
        raise RocetuneError("fleet gather needs hosts or --inventory FILE (one of them)", code=ExitCode.USAGE)
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
        raise RocetuneError("fleet gather needs paramiko, and it cannot be imported",
                            hint="pip install paramiko, or gather with the collection's play",
                            code=ExitCode.INPUT) from None
    from ...fleet.gather import Options, gather

    found = tg.from_inventory(args.inventory, args.limit) if args.inventory else tg.from_names(args.hosts)
    targets = tg.complete(found, tg.Defaults(args.user, args.port, args.identity))
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


def _progress_line(done: int, total: int, failed: int) -> None:
    import sys

    sys.stderr.write(f"\rgathered {done}/{total}" + (f" ({failed} failed)" if failed else ""))
    sys.stderr.flush()
