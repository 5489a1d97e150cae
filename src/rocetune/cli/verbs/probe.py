"""rocetune probe: read the host, show what it is and every finding; with -o or --format, also
write (or print) the tuned env: the env use case itself (rocetune.app.env), as `rocetune env`."""

from __future__ import annotations

import argparse

from .. import options
from ..report import warning_lines
from ..result import Result

NAME = "probe"
ORDER = 10
HELP = "read GPUs, NICs, PCIe, RDMA ports and GIDs of a host; show its facts and findings"
EXAMPLE = "rocetune probe --root ./host-capture -v"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the host was read (warnings and findings are printed, not failures)",
}


def register(p: argparse.ArgumentParser) -> None:
    options.add_env_output(p)
    options.add_plan_arguments(p, features=False)


def run(args: argparse.Namespace) -> Result:
    from ...app.probe import ProbeRequest, probe

    out = options.out_path(args)
    wants_env = bool(out or args.format or getattr(args, "out", None) == "-")
    fmts = options.formats_of(args, out) if wants_env else []
    env = options.env_request(args, tuple(fmts), [(fmts[0], out)] if out else []) if wants_env else None
    done = probe(ProbeRequest(options.plan_request(args), getattr(args, "features", None),
                              getattr(args, "nccl_version", None), env))
    # --json prints the envelope alone: the human summary of a large host is not worth building
    # (nor its renderer importing).
    human = "" if args.json else _human(done.features, done.findings, args.verbose)
    if done.env is not None:  # the env use case's own answer, the host's summary before it
        from ..env_result import env_result

        warnings = warning_lines(done.features, done.plan, findings_too=not out)
        result = env_result(NAME, args, done.env, fmts, out, human.rstrip("\n") + "\n\n" if human else "",
                            warnings)
        if not done.env.wrote and not done.env.refused:
            result.human = human
        return result
    return Result(command=NAME, data={"features": done.features, "findings": [f.to_dict() for f in done.findings],
                                      "plan": done.plan.to_dict()},
                  human=human, code=done.code, warnings=warning_lines(done.features, done.plan, findings_too=False))


def _human(features: dict, findings, verbose: int) -> str:
    from ...render.human import findings_text, host_summary

    return host_summary(features, verbose=verbose) + findings_text(findings, verbose)
