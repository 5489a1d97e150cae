"""rocetune fleet: the hosts of a cluster side by side. `report DIR` compares the per-host
results in DIR (docs/fleet.md) against each other and an optional desired-state manifest, and
names the host and the value that differ."""

from __future__ import annotations

import argparse

from ..result import Result

NAME = "fleet"
ORDER = 60
HELP = "compare the gathered results of many hosts: the odd host and value, against the majority or a manifest"


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


def run(args: argparse.Namespace) -> Result:
    from ...errors import ExitCode, RocetuneError

    if getattr(args, "fleet_action", None) != "report":
        raise RocetuneError("fleet needs an action: report DIR", hint="see 'rocetune fleet --help'",
                            code=ExitCode.USAGE)
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
