"""rocetune lint: check env files, nccl.conf, job scripts and notes for settings that misfire.

    rocetune lint FILE...                 each file is read in the dialect its content shows
                                          (nccl.conf, sh/export lines, mpirun -x, Dockerfile ENV,
                                          systemd, docker, deepspeed, k8s, json, Markdown code
                                          blocks); --format forces one for every FILE
    rocetune lint --qos qos.yml FILE      also check traffic classes against the QoS plan
    rocetune lint --features F.json FILE  also check device/interface names against that host
    rocetune --root DIR lint FILE         the same, from a probe of that root (a capture)

Exit code 1 (findings) when any error is found. Finding ids are listed in docs/lint.md, each
with a page in docs/checks/.
"""

from __future__ import annotations

import argparse
from typing import List, Optional

from ...errors import ExitCode
from ..result import Result

NAME = "lint"
ORDER = 40
HELP = "check env files, nccl.conf and job scripts: unknown, removed or misspelled NCCL variables, bad values"
EXAMPLE = "rocetune lint job.sh /etc/nccl.conf"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "no error findings (warnings may be printed)",
    1: "a file has error findings",
}


def register(p: argparse.ArgumentParser) -> None:
    from ...app.lint import formats

    p.add_argument("files", nargs="+", metavar="FILE", help="files to check")
    p.add_argument("--format", choices=formats(), default="auto",
                   help="read every FILE in this dialect (default auto: each file as its content "
                        "shows, its name breaking ties)")
    p.add_argument("--qos", metavar="FILE",
                   help="QoS plan to check traffic classes against (default: /etc/rocetune/qos.yml under "
                        "--root when present; otherwise no QoS check)")
    p.add_argument("--features", metavar="FILE",
                   help="Features of the target host (rocetune probe --json): check RDMA device, port "
                        "and interface names against it; works on any machine")
    p.add_argument("--host-check", choices=("auto", "yes", "no"), default="auto",
                   help="check names against the host (auto: against --features, or a probe of an "
                        "explicit --root; on the live host RDMA devices only. yes: interfaces of the "
                        "live host too, and fail when there is nothing to check against)")


def run(args: argparse.Namespace) -> Result:
    from ...app.lint import LintRequest, lint

    done = lint(LintRequest(tuple(args.files), args.format, args.root, args.qos, args.features, args.host_check))
    report, qos, host = done.report, done.qos, done.host
    data = report.to_dict()
    data["qos"] = qos.source if qos else None
    data["host"] = None if host is None else {
        "source": done.host_source,
        "rdma_devices": None if host.ib is None else len(host.ib),
        "interfaces": None if host.net is None else len(host.net)}
    code = ExitCode.FINDINGS if report.errors else ExitCode.OK
    return Result(command=NAME, data=data, human=_human(report, qos, done.host_source, args.verbose), code=code)


def _human(report, qos, host_source: Optional[str], verbose: int) -> str:
    from ...model.finding import counts_text, finding_lines, shown
    from ...text import printable

    lines: List[str] = []
    for f in report.files:
        if f["format"] is None:
            lines.append(printable(f"{f['path']}: not read"))
        else:
            how = "forced by --format" if f["detected"] == "forced" else f["detected"]
            lines.append(printable(f"{f['path']}: read as {f['format']} ({how}), "
                                   f"{f['assignments']} setting(s)"))
        lines += ["  " + line for x in shown(report.findings, verbose) if x.file == f["path"]
                  for line in finding_lines(x, verbose)]
    summary = f"{len(report.files)} file(s): {counts_text(report.findings, verbose)}"
    summary += "; no QoS plan, traffic classes not checked" if qos is None else ""
    summary += f"; names checked against the {host_source}" if host_source else ""
    lines.append(summary)
    return "\n".join(lines) + "\n"
