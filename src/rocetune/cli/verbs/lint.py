"""rocetune lint: check env files, nccl.conf, job scripts and notes for settings that misfire.

    rocetune lint FILE...                 every format is recognised (nccl.conf, sh/export lines,
                                          mpirun -x, Dockerfile ENV, systemd, docker, k8s, json,
                                          Markdown code blocks); --format forces one
    rocetune lint --qos qos.yml FILE      also check traffic classes against the QoS plan
    rocetune --root DIR lint FILE         also check device/interface names against that host

Exit code 1 (findings) when any error is found. Finding ids are listed in docs/lint.md.
"""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from ..result import Result

QOS_DEFAULT_PATH = "/etc/rocetune/qos.yml"
PARSE_FORMATS = ("sh", "nccl-conf", "systemd", "docker", "deepspeed", "k8s", "json", "dockerfile",
                 "markdown")

NAME = "lint"
ORDER = 40
HELP = "check env files, nccl.conf and job scripts: unknown, removed or misspelled NCCL variables, bad values"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="files to check")
    p.add_argument("--format", choices=("auto",) + PARSE_FORMATS, default="auto",
                   help="how to read the files (default: recognise each)")
    p.add_argument("--qos", metavar="FILE",
                   help=f"QoS plan to check traffic classes against (default: {QOS_DEFAULT_PATH} under "
                        "--root when present; otherwise no QoS check)")
    p.add_argument("--host-check", choices=("auto", "yes", "no"), default="auto",
                   help="check RDMA device and interface names against the host at --root (auto: RDMA "
                        "devices when /sys/class/infiniband exists there; interfaces only with an "
                        "explicit --root)")


def run(args: argparse.Namespace) -> Result:
    from ...hostfs import HostRoot
    from ...lint.checks import HostNames, lint_paths
    from ...model.qos import load_file, load_text
    from ...text import printable

    root = HostRoot(args.root)
    qos = None
    if args.qos:
        qos = load_file(args.qos)
    else:
        text = root.read_text(QOS_DEFAULT_PATH)
        if text is not None:
            qos = load_text(text, root.host_path(QOS_DEFAULT_PATH))
    host = None
    if args.host_check != "no":
        host = HostNames(root, check_netdevs=args.host_check == "yes" or not root.is_live)
        if host.ib is None and host.net is None:
            host = None
    report = lint_paths(args.files, args.format, qos, host)
    counts = report.counts()
    lines = [printable(f.text()) for f in report.findings if f.severity != "info" or args.verbose]
    hidden = counts["info"] if not args.verbose else 0
    summary = (f"{len(args.files)} file(s): {counts['error']} error(s), {counts['warning']} warning(s), "
               f"{counts['info']} note(s)" + (" (-v shows the notes)" if hidden else ""))
    if qos is None:
        summary += "; no QoS plan, traffic classes not checked"
    lines.append(summary)
    data = report.to_dict()
    data["qos"] = qos.source if qos else None
    data["host_checked"] = host is not None
    code = ExitCode.FINDINGS if report.errors else ExitCode.OK
    return Result(command=NAME, data=data, human="\n".join(lines) + "\n", code=code)
