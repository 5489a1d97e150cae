"""rocetune capture: snapshot what the probe and doctor read, for `rocetune probe --root` and
`rocetune doctor --root` anywhere."""

from __future__ import annotations

import argparse

from ...errors import ExitCode, RocetuneError
from ..result import Result

NAME = "capture"
ORDER = 30
HELP = "write the files and command outputs probe and doctor read into a tar.gz (a replayable root)"
EXAMPLE = "rocetune capture -o \"$(hostname)\".tar.gz"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the capture was written",
}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--out", metavar="FILE.tar.gz", required=True, help="where to write the capture")


def run(args: argparse.Namespace) -> Result:
    from ...doctor import readings
    from ...model.features import fingerprint
    from ...probe.capture import capture

    try:
        # doctor's readings too (lspci's ACS bits, the kernel log's fabric lines, the NIC
        # firmware settings, the PHY, ...): a replayed root answers doctor as the host did
        features, size = capture(args.root, args.out, also=lambda ctx, f: readings.read(ctx, f))
    except OSError as exc:
        raise RocetuneError(f"cannot write {args.out}: {exc.strerror or exc}", code=ExitCode.OUTPUT) from None
    from ...checks import host_findings
    from ..report import partial

    fp = fingerprint(features)
    lacking = partial(host_findings(features))
    human = (f"wrote {args.out} ({size} bytes, features {fp})\n"
             f"replay: mkdir R && tar -xzf {args.out} -C R && rocetune probe --root R\n")
    if lacking:
        human = f"PARTIAL capture: {lacking.id}: {lacking.message}\n" + human
    data = {"path": args.out, "bytes": size, "features_fingerprint": fp,
            "partial": lacking.to_dict() if lacking else None}
    return Result(command=NAME, data=data, human=human,
                  code=ExitCode.FINDINGS if lacking else ExitCode.OK,
                  warnings=[f"{lacking.id}: {lacking.message}"] if lacking else [])
