"""rocetune capture: snapshot what the probe and doctor read, for `rocetune probe --root` and
`rocetune doctor --root` anywhere."""

from __future__ import annotations

import argparse

from ...errors import ExitCode
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
    from ...app.capture import CaptureRequest, capture

    done = capture(CaptureRequest(args.root, args.out))
    lacking = done.partial
    human = (f"wrote {done.path} ({done.size} bytes, features {done.fingerprint})\n"
             f"replay: mkdir R && tar -xzf {done.path} -C R && rocetune probe --root R\n")
    if lacking:
        human = f"PARTIAL capture: {lacking.id}: {lacking.message}\n" + human
    data = {"path": done.path, "bytes": done.size, "features_fingerprint": done.fingerprint,
            "partial": lacking.to_dict() if lacking else None}
    return Result(command=NAME, data=data, human=human,
                  code=ExitCode.FINDINGS if lacking else ExitCode.OK,
                  warnings=[f"{lacking.id}: {lacking.message}"] if lacking else [])
