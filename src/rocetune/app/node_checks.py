"""A node held to its plan: the host's findings, the plan's, doctor's own checks over what the
node runs and deploys, its NIC counters and a job's NCCL log, graded by the node's check
configuration. What `doctor` (app.doctor) and the fleet build on."""

from __future__ import annotations

from typing import Dict, Optional, Set

from ..model.plan import Plan
from .expectations import hold_to_expectations, node_facts_of
from .inputs import qos_plan
from .planning import PlanRequest, plan_env


def doctor_checks(features: dict, request: PlanRequest, nccl_log: Optional[str] = None, counters: bool = True,
                  save_baseline: bool = False, config=None, since: Optional[str] = None):
    """Check a node (live, or a capture under `root`) against its plan and the pitfalls:
    -> (findings, data). The host's findings, the plan's, and doctor's own checks, as the node's
    check configuration (`config`, rocetune.model.check_config) grades them: what it skips is in
    data["skipped"], its rules (with how many findings each matched) in data["check_config"]."""
    from ..analysis.expect import exact_names
    from ..analysis.hostview import HostView
    from ..doctor import checks, readings
    from ..hostfs.context import ProbeContext
    from ..hostfs.root import HostRoot
    from ..hostfs.runners import runner_for

    root = request.root
    host = HostRoot(root or "/")
    declared_qos = qos_plan(root, request.qos_path, fallback=False)
    env = plan_env(features, tuple(readings.ENV_FILES), env_dir=readings.ENV_DIR, request=request)
    view = HostView(features)
    ctx = ProbeContext(host, runner_for(host))
    read = readings.read(ctx, features, since=since)
    # The plan held to the expectations, a step of its own; the node's facts read once, for the
    # ports the document names (or, without one, those the deployed env files name).
    expect = request.expect()
    expected = exact_names(expect.document) if expect is not None else []
    named = deployed_ports(read["env_files"]) | set(expected)
    facts = node_facts_of(env.plan, features, expected if expect is not None else sorted(named), view)
    hold_to_expectations(env.plan, features, expect, facts=facts)
    found = checks.run_checks(checks.DoctorInput(features, read, view, env.texts, declared_qos, named))
    from ..checks import host_findings

    findings = host_findings(features) + env.plan.findings + found
    expect_data, unchecked = _expect_data(env.plan, facts)
    findings.append(unchecked)
    data = {"readings": read, "qos": declared_qos.to_dict() if declared_qos else None,
            "plan": env.plan.to_dict(), "expect": expect_data}
    if counters:
        results, data["counters"] = nic_counters(root, read, save_baseline)
        findings += results
    if nccl_log:
        from ..render.nccl_log import summary_lines

        report, differences = nccl_log_against(nccl_log, env.plan.env, plan_facts(features, env.plan, view))
        data["nccl_log"] = dict(report.to_dict(), used=summary_lines(report))
        findings += differences
    from ..checks.config import apply

    applied = apply(findings, config)
    data["skipped"] = [f.to_dict() for f in applied.skipped]
    data["check_config"] = {"sources": list(config.sources) if config else [], "rules": applied.rules}
    return applied.findings, data


def deployed_ports(env_files: Dict[str, Optional[str]]) -> set:
    """The RDMA ports (`mlx5_0:1`) and devices the deployed env files' NCCL_IB_HCA name: rails
    the node had when its env was written, whatever it shows now."""
    from ..envfiles.read import parse_text
    from ..nccl.syntax import ib_hca_entries

    out: Set[str] = set()
    for fmt, text in env_files.items():
        if not text:
            continue
        values = {a.key: a.value for a in parse_text(text, fmt).assignments if a.value is not None}
        if not values.get("NCCL_IB_HCA"):
            continue
        exclude, _exact, entries = ib_hca_entries(values["NCCL_IB_HCA"])
        if not exclude:
            out.update(name if port < 0 else f"{name}:{port}" for name, port in entries)
    return out


def _expect_data(plan: Plan, facts) -> tuple:
    """doctor's `data.expect` -- where the expectations came from, the document, the verdict
    (met, short, none), the differences, and the node's facts (NodeFacts.to_dict(): what
    `--write-expect` and a fleet's majority are made from) -- and the expect-unchecked finding."""
    from ..doctor.checks import expect_unchecked as unchecked

    source, document = (plan.expect["source"], plan.expect["document"]) if plan.expect else (None, None)
    differences = [f.to_dict() for f in plan.findings if f.kind == "expect"]
    short = any(d["severity"] == "error" for d in differences)
    verdict = "none" if document is None else "short" if short else "met"
    return ({"source": source, "document": document, "verdict": verdict, "differences": differences,
             "facts": facts.to_dict()}, unchecked(document, source))


def nic_counters(root: str, readings: dict, save: bool):
    """(findings, data) from the NIC counters judged as rates against the saved baseline (lifetime
    counts only, as info, without one); with `save`, this reading becomes the baseline."""
    from ..doctor import nic_baseline, nic_health
    from ..probe.sources.nic_counters import take_snapshot

    snapshot = take_snapshot(root, netdevs=sorted(readings.get("pause") or {}))
    previous = nic_baseline.load_baseline(root)
    results = nic_health.judge(previous, snapshot)
    data = {"baseline": nic_baseline.baseline_file(root) if previous else None,
            "rates": [{"check": c, "subject": s, "unit": u, "rate": r}
                      for c, s, u, r in nic_health.rates(previous, snapshot)],
            "saved": nic_baseline.save_baseline(snapshot, root) if save else None,
            "warnings": snapshot.get("warnings", [])}
    return [r.to_finding() for r in results], data


def plan_facts(features: dict, plan, view=None):
    """What a log is held to beyond the plan's env (rocetune.nccl.log_compare.PlanFacts): the NCCL
    release the plan was made for, whether it expects GPUDirect RDMA, and the RDMA ports it left out."""
    from ..analysis.hostview import HostView
    from ..nccl.log_compare import PlanFacts

    host = view or HostView(features)
    ev = host.nccl_evidence()
    version = ev.get("version")
    came = {"declared": "declared"}.get(ev.get("basis") or "", "") or \
        (f"the library {ev['library']}" if ev.get("library") else "the host's NCCL")
    gdr = plan.reports.get("gpudirect-rdma") or {}
    hca = plan.get("NCCL_IB_HCA")
    excluded = tuple((e["port"], e["why"]) for e in ((hca.evidence or {}).get("excluded") or [])) if hca else ()
    gpu_source = ((features.get("sources") or {}).get("gpu") or {}).get("ok")
    return PlanFacts(nccl_version=version, nccl_from=came, gdr_expected=gdr.get("expected"),
                     gdr_why=gdr.get("expected_why") or "", excluded=excluded,
                     gpus=len(host.gpus) if host.gpus or gpu_source else None)


def nccl_log_against(path: str, plan_env: Dict[str, str], facts=None):
    """(NCCL's own report read from its INFO log, its differences from the plan as findings)."""
    from ..checks.doctor import nccl_log_finding
    from ..nccl.log import load_log
    from ..nccl.log_compare import compare_with_plan

    report = load_log(path)
    return report, [nccl_log_finding(d, path) for d in compare_with_plan(report, plan_env, facts)]
