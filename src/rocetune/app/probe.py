"""The probe use case: read a host, plan it, and name every finding; asked for an env, it is the
env use case (rocetune.app.env) itself, writing through the same code and clearing the same
refusal record."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from ..errors import ExitCode
from ..model.record import FrozenRecord, Record
from .planning import PlanRequest

if TYPE_CHECKING:  # pragma: no cover
    from ..model.finding import Finding
    from ..model.plan import Plan
    from .env import EnvDone, EnvRequest


class ProbeRequest(FrozenRecord):
    plan: PlanRequest  # root, overrides, QoS plan, expectations
    features_path: Optional[str]  # the host's Features from a file instead of a probe of the root
    nccl_version: Optional[str]  # plan for this NCCL release
    env: Optional[EnvRequest]  # also render (and write) the env: probe -o, probe --format
    _fields = ("plan", "features_path", "nccl_version", "env")

    def __init__(self, plan: PlanRequest, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                 env: Optional[EnvRequest] = None) -> None:
        self._set(plan, features_path, nccl_version, env)


class Probed(Record):
    features: dict
    plan: Plan  # held to the expectations
    findings: List[Finding]  # the host's and the plan's, most severe first
    code: ExitCode  # FINDINGS for a partial read (and for an env refused)
    env: Optional[EnvDone]  # the env use case's answer, when an env was asked for
    _fields = ("features", "plan", "findings", "code", "env")

    def __init__(self, features: dict, plan: Plan, findings: List[Finding], code: ExitCode,
                 env: Optional[EnvDone] = None) -> None:
        self.features = features
        self.plan = plan
        self.findings = findings
        self.code = code
        self.env = env


def probe(request: ProbeRequest) -> Probed:
    if request.env is not None:
        from .env import env

        done = env(request.env)
        return Probed(done.features, done.env.plan, done.findings, done.code, done)
    from .expectations import hold_to_expectations
    from .findings import all_findings, partial
    from .inputs import planned_features
    from .planning import plan_host

    features = planned_features(request.plan.root, request.features_path, request.nccl_version,
                                request.plan.settings_path)
    plan = hold_to_expectations(plan_host(features, request.plan), features, request.plan.expect())
    findings = all_findings(features, plan)
    return Probed(features, plan, findings, ExitCode.FINDINGS if partial(findings) else ExitCode.OK)
