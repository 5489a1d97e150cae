"""The env use case: plan a host, hold the plan to the node's expectations, render it in the
dialects asked for and, when files are named, write them -- or refuse to, and say why. `rocetune
env` and `rocetune probe -o` are this one function."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..errors import ExitCode
from ..model.record import FrozenRecord, Record

if TYPE_CHECKING:  # pragma: no cover
    from ..model.env_output import EnvResult
    from ..model.finding import Finding
    from .planning import PlanRequest

# Light at import: --format's choices (cli/options.py) ask this module for the dialects without
# loading the planner.


class EnvRequest(FrozenRecord):
    plan: PlanRequest  # root, overrides, QoS plan, expectations
    features_path: Optional[str]  # the host's Features from a file instead of a probe of the root
    nccl_version: Optional[str]  # plan for this NCCL release
    formats: Tuple[str, ...]  # the dialects rendered (with outputs: the outputs' own)
    outputs: Tuple[Tuple[str, str], ...]  # (dialect, file) to write; () writes nothing
    env_dir: Optional[str]  # where the files the env points at go (default: beside the first output)
    check: bool  # write nothing: say what would change
    mkdir: bool  # create missing directories
    fail_on_warnings: bool  # write nothing when there are warnings
    no_degrade: bool  # write nothing when the plan falls short (the boot unit's mode)
    config_path: Optional[str]  # the check configuration no_degrade grades with
    _fields = ("plan", "features_path", "nccl_version", "formats", "outputs", "env_dir", "check", "mkdir",
               "fail_on_warnings", "no_degrade", "config_path")

    def __init__(self, plan: PlanRequest, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                 formats: Tuple[str, ...] = (), outputs: Tuple[Tuple[str, str], ...] = (),
                 env_dir: Optional[str] = None, check: bool = False, mkdir: bool = False,
                 fail_on_warnings: bool = False, no_degrade: bool = False,
                 config_path: Optional[str] = None) -> None:
        if outputs:
            formats = tuple(dict.fromkeys(fmt for fmt, _ in outputs))
        self._set(plan, features_path, nccl_version, formats, tuple(outputs), env_dir, check, mkdir,
                  fail_on_warnings, no_degrade, config_path)

    @property
    def files(self) -> List[str]:
        return [path for _, path in self.outputs]


class EnvDone(Record):
    features: dict
    env: EnvResult  # the plan, its texts, and what was written (or would be)
    findings: List[Finding]  # the host's and the plan's, most severe first
    warnings: List[str]  # for stderr: unreadable sources, and the findings that matter
    code: ExitCode
    errors: List[Dict[str, Optional[str]]]  # why nothing was written ({message, hint})
    refused: Optional[Dict[str, Any]]  # the refusal (reasons, record) of a plan that falls short
    wrote: bool  # the outputs were written (or, with check, would be)
    _fields = ("features", "env", "findings", "warnings", "code", "errors", "refused", "wrote")

    def __init__(self, features: dict, env: EnvResult, findings: List[Finding], warnings: List[str],
                 code: ExitCode = ExitCode.OK, errors: Optional[List[Dict[str, Optional[str]]]] = None,
                 refused: Optional[Dict[str, Any]] = None, wrote: bool = False) -> None:
        self.features = features
        self.env = env
        self.findings = findings
        self.warnings = warnings
        self.code = code
        self.errors = [] if errors is None else errors
        self.refused = refused
        self.wrote = wrote

    def refusal_lines(self, check: bool) -> List[str]:
        verb = "would refuse" if check else "refused"
        return [f"{verb} to replace the env: {r}" for r in (self.refused or {}).get("reasons", [])]


def env(request: EnvRequest) -> EnvDone:
    from .env_files import accept_written, write_env
    from .expectations import hold_to_expectations
    from .findings import all_findings, partial, warning_lines
    from .inputs import check_config, planned_features
    from .planning import plan_env_for

    root = request.plan.root
    # checked first, whether or not no_degrade uses it: a bad file fails before any planning
    config = check_config(root, request.config_path) if request.config_path else None
    features = planned_features(root, request.features_path, request.nccl_version, request.plan.settings_path)
    # With outputs and env_dir both, the env goes to the output and the files it points at to the
    # directory (an nccl.conf in /etc naming a topology file in /etc/rocetune, as the role does).
    first = request.outputs[0][1] if request.outputs else None
    planned = plan_env_for(features, request.formats, request.plan, out=None if request.env_dir else first,
                           env_dir=request.env_dir)
    hold_to_expectations(planned.plan, features, request.plan.expect())
    found = all_findings(features, planned.plan)
    done = EnvDone(features, planned, found, warning_lines(features, planned.plan, findings_too=True))
    lacking = partial(found)
    if lacking:  # the env of what could be read is not the host's: said, exit 1, never written
        done.code = ExitCode.FINDINGS
        if request.outputs:
            done.errors = [{"message": f"{lacking.message}; nothing was written to {', '.join(request.files)}",
                            "hint": lacking.fix}]
            return done
    if not request.outputs:
        return done
    if request.fail_on_warnings and done.warnings:
        done.code = ExitCode.FINDINGS
        done.errors = [{"message": f"{len(done.warnings)} warning(s), nothing was written: " + "; ".join(done.warnings),
                        "hint": "fix what they name, or run without --fail-on-warnings"}]
        return done
    if request.no_degrade and _refused(request, done, config):
        return done
    write_env(planned, request.outputs, check=request.check, make_dirs=request.mkdir)
    if not request.check:
        accept_written(root, request.files)  # an earlier refusal no longer stands for these files
    done.wrote = True
    return done


def _refused(request: EnvRequest, done: EnvDone, config) -> bool:
    """Whether the plan falls short: then nothing is written, the refusal is in `done` and (unless
    check) its record kept for doctor (doctor-env-refused)."""
    from .env_files import refuse_degraded

    refused = refuse_degraded(done.env, request.outputs, request.plan.root, config, check=request.check)
    if refused is None:
        return False
    verb = "would refuse" if request.check else "refused"
    done.refused, done.code = refused, ExitCode.FINDINGS
    done.errors = [{"message": f"{verb} to replace {', '.join(request.files)} with a degraded env, which stays "
                               "as it was: " + "; ".join(refused["reasons"]),
                    "hint": "repair what is named, then rerun (systemctl restart rocetune-env); to accept "
                            "the node as it is, run once without --no-degrade"}]
    return True


def dialect_names(written: bool = True) -> List[str]:
    """The env dialects rocetune writes (or, without `written`, reads too)."""
    from ..envfiles import dialects

    return list(dialects.names(written=written))


def dialect_for(out: Optional[str]) -> str:
    """The dialect a file's name claims (the fallback when it claims none, or for stdout)."""
    from ..envfiles import dialects

    return dialects.for_output(out)


def fallback_dialect() -> str:
    from ..envfiles import dialects

    return dialects.fallback().name
