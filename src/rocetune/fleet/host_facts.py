"""A host's facts as fleet report compares them: those read from its Features (fleet.facts),
with those its doctor run and its plan add (errors, skipped checks, stale env files, warnings,
env variables), and what a fact missing from one host's result means."""

from __future__ import annotations

from typing import Dict, List, Optional

from .facts import OWN_FACT, UNKNOWN, WARNING_PREFIX, Fact
from .results import HostResult


def host_facts(result: HostResult) -> Dict[str, Fact]:
    """Every fact of a host whose result could be used."""
    facts = dict(result.node_facts())
    facts["doctor.errors"] = _doctor_ids(result.doctor_findings, "error")
    facts["doctor.skipped"] = _skipped_ids(result)
    facts["envfile.stale"] = _env_stale(result.doctor_findings)
    for f in result.doctor_findings or ():
        if f.get("severity") == "warning" and f.get("id") not in OWN_FACT:
            key = WARNING_PREFIX + str(f.get("id"))
            if key not in facts:
                facts[key] = Fact(True, detail=f"{f.get('subject')}: {str(f.get('message'))[:200]}")
    facts.update(env_facts(result))
    return facts


def env_facts(result: HostResult) -> Dict[str, Fact]:
    """`env.NAME`: what jobs get -- the values of the env files deployed on the node, with the
    plan's value beside where it differs -- or, where the result has no deployed file, the plan's."""
    plan = result.plan_env
    if result.deployed_env is None:
        return {f"env.{k}": Fact(v, detail="the plan's (no deployed env file in the result)")
                for k, v in (plan or {}).items()}
    deployed = result.deployed_env["values"]
    out = {}
    for name in sorted(set(deployed) | set(plan or {})):
        value = deployed.get(name)
        differs = plan is not None and plan.get(name) != value
        out[f"env.{name}"] = Fact(value, detail=f"plan: {_shown(plan.get(name))}" if plan is not None and differs
                                  else None)
    return out


def _shown(value: Optional[str]) -> str:
    return "unset" if value is None else value


def missing_fact(result: HostResult, key: str) -> Fact:
    """The value of a fact another host has and this one's result does not list: an env
    variable its plan does not set, a warning doctor did not give; unknown when it cannot tell."""
    if key.startswith("env."):
        return env_fact(result, key[4:])
    if key.startswith(WARNING_PREFIX):
        if result.doctor_findings is None:
            return Fact(None, known=False, detail="no doctor run in the result")
        return Fact(False)
    return UNKNOWN


def env_fact(result: HostResult, name: str) -> Fact:
    """An env variable another host's jobs get and this one's do not: unset, or unknown when
    the result has neither a deployed env nor a plan."""
    if result.deployed_env is not None:
        plan = result.plan_env or {}
        return Fact(None, detail=f"plan: {plan[name]}" if name in plan else None)
    if result.plan_env is None:
        return Fact(None, known=False, detail="no plan in the result")
    return Fact(result.plan_env.get(name))


def _env_stale(findings: Optional[List[dict]]) -> Fact:
    """The env files doctor found written by rocetune but no longer what the plan gives (an older
    plan, a hand edit): doctor-env-drift warnings."""
    if findings is None:
        return Fact(None, known=False, detail="no doctor run in the result")
    stale = [f for f in findings if f.get("id") == "doctor-env-drift" and f.get("severity") == "warning"]
    files = sorted({str(f.get("subject")) for f in stale})
    detail = "; ".join(str(f.get("message"))[:200] for f in stale) or None
    return Fact(files, detail=detail)


def _skipped_ids(result: HostResult) -> Fact:
    """The checks the node's check configuration skipped (doctor.yml, --skip), each with its
    reason: a host that skips what the others check is odd, however well it looks."""
    if result.doctor_findings is None:
        return Fact(None, known=False, detail="no doctor run in the result")
    ids = sorted({str(f.get("id")) for f in result.doctor_skipped})
    reasons: Dict[str, str] = {}
    for f in result.doctor_skipped:
        reasons.setdefault(str(f.get("id")), str((f.get("graded") or {}).get("reason") or "")[:160])
    return Fact(ids, detail="; ".join(f"{i}: {reasons[i]}" for i in ids[:20]) or None)


def _doctor_ids(findings: Optional[List[dict]], severity: str) -> Fact:
    """The ids of doctor's findings of one severity (sorted, each once), with their messages."""
    if findings is None:
        return Fact(None, known=False, detail="no doctor run in the result")
    found = [f for f in findings if f.get("severity") == severity]
    ids = sorted({str(f.get("id")) for f in found})
    detail = "; ".join(f"{f.get('id')}: {str(f.get('message'))[:160]}" for f in found[:20]) or None
    return Fact(ids, detail=detail)
