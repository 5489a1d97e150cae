"""rocetune probe: read the host, show what it is and every finding; with -o or --format, also
write (or print) the tuned env, exactly as `rocetune env` does."""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from .. import options, report
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
    out = options.out_path(args)
    wants_env = bool(out or args.format or getattr(args, "out", None) == "-")
    features = report.collect(args)
    if wants_env:
        from ... import app

        fmts = options.formats_of(args, out)
        env = app.plan_env_for(features, fmts, options.plan_request(args), out=out)
        plan = env.plan
    else:
        from ... import app

        plan = app.plan_host(features, options.plan_request(args))
    findings = report.all_findings(features, plan)
    data = {"features": features, "findings": [f.to_dict() for f in findings],
            "plan": plan.to_dict()}
    # --json prints the envelope alone: the human summary of a large host is not worth building
    # (nor its renderer importing).
    human = "" if args.json else _human(features, findings, args.verbose)
    result = Result(command=NAME, data=data, human=human,
                    warnings=report.stderr_lines(features, plan, findings_too=wants_env and not out))
    lacking = report.partial(findings)
    if lacking:
        result.code = ExitCode.FINDINGS
    if not wants_env:
        return result
    fmt = fmts[0]
    if out and lacking:
        result.errors = [{"message": f"{lacking.message}; nothing was written to {out}", "hint": lacking.fix}]
        return result
    if out:
        from ... import app
        from ...render.human import plan_text

        app.write_env(env, [(fmt, out)])
        result.human = (human.rstrip("\n") + "\n\n" + plan_text(plan, args.verbose)
                        + "\n".join(env.write_lines()) + "\n")
    else:
        result.raw = env.texts[fmt]
    data["env"] = env.data(fmts, out)
    return result


def _human(features: dict, findings, verbose: int) -> str:
    from ...render.human import findings_text, host_summary

    return host_summary(features, verbose=verbose) + findings_text(findings, verbose)
