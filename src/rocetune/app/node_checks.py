"""A node held to its plan: the host's findings, the plan's, doctor's own checks over what the
node runs and deploys, its NIC counters and a job's NCCL log, graded by the node's check
configuration. What `doctor` (app.doctor) and the fleet build on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Set

from ..envfiles.changes import MANAGED_MARKER
from ..errors import RocetuneError
from ..model.plan import Plan
from .expectations import hold_node
from .inputs import node_settings, qos_plan
from .planning import PlanRequest, plan_texts

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.hostview import HostView
    from ..nccl.log_compare import PlanFacts


def doctor_checks(
    features: dict,
    request: PlanRequest,
    nccl_log: Optional[str] = None,
    counters: bool = True,
    save_baseline: bool = False,
    config=None,
    since: Optional[str] = None,
    keep_window: bool = False,
):
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
    recorded = recorded_overrides({fmt: host.read_text(path) for fmt, path in readings.ENV_FILES.items()})
    if recorded:  # the command line's own --set still wins
        request = PlanRequest(
            request.root,
            request.config,
            tuple(recorded) + tuple(request.sets),
            request.unsets,
            request.qos_path,
            request.local_rank,
            request.expect_path,
            request.settings_path,
        )
    plan, texts = plan_texts(features, tuple(readings.ENV_FILES), readings.ENV_DIR, request)
    from ..doctor.repair import load_mark

    view = HostView(features)
    ctx = ProbeContext(host, runner_for(host))
    settings = node_settings(root, request.settings_path)
    mark = load_mark(root or "/")
    read = readings.read(ctx, features, since=since, env_files=settings.env_files, mark=mark)
    # The plan held to the expectations, a step of its own; the node's facts read once, for the
    # ports the document names (or, without one, those the deployed env files name).
    expect = request.expect()
    expected = exact_names(expect.document) if expect is not None else []
    named = deployed_ports(read["deployed_env"]) | set(expected)
    facts = hold_node(plan, view, expect, expected if expect is not None else sorted(named))
    found = checks.run_checks(checks.DoctorInput(features, read, view, texts, declared_qos, named, set(expected)))
    from ..checks import host_findings

    findings = host_findings(features) + plan.findings + found
    expect_data, unchecked = _expect_data(plan, facts)
    findings.append(unchecked)
    from ..doctor.deployed_env import effective

    data = {
        "readings": read,
        "qos": declared_qos.to_dict() if declared_qos else None,
        "plan": plan.to_dict(),
        "expect": expect_data,
        "deployed_env": effective(read["deployed_env"]),
    }
    if counters:
        results, data["counters"] = nic_counters(root or "/", read, save_baseline, keep_window, mark)
        findings += results
    if nccl_log:
        from ..render.nccl_log import summary_lines

        report, differences = nccl_log_against(nccl_log, plan, view)
        data["nccl_log"] = dict(report.to_dict(), used=summary_lines(report))
        findings += differences
    from ..checks.config import apply

    applied = apply(findings, config)
    data["skipped"] = [f.to_dict() for f in applied.skipped]
    data["check_config"] = {"sources": list(config.sources) if config else [], "rules": applied.rules}
    return applied.findings, data


def recorded_overrides(env_files: Dict[str, Optional[str]]) -> List[str]:
    """KEY=VALUE of each variable an env file rocetune wrote records as `--set` (its
    `# rule: override (--set)` comment): rocetune's documented way to change the env, so doctor
    plans with it rather than calling it drift. The node settings' overrides need no record."""
    from ..envfiles.read import parse_text

    out: Dict[str, str] = {}
    for fmt, text in sorted(env_files.items()):
        if not text or not text.startswith(MANAGED_MARKER):
            continue
        comments = {i + 2: line for i, line in enumerate(text.splitlines()) if line.startswith("# rule: override")}
        for a in parse_text(text, fmt).assignments:
            if a.rule_id == "override" and a.value is not None and comments.get(a.line, "").endswith("(--set)"):
                out.setdefault(a.key, a.value)
    return [f"{k}={v}" for k, v in sorted(out.items())]


def deployed_ports(env_files: List[dict]) -> set:
    """The RDMA ports (`mlx5_0:1`) and devices the deployed env files' NCCL_IB_HCA name
    (readings' `deployed_env`): rails the node had when its env was written, whatever it shows now."""
    from ..envfiles.read import parse_text
    from ..nccl.syntax import ib_hca_entries

    out: Set[str] = set()
    for item in env_files:
        if not item.get("text"):
            continue
        parsed = parse_text(item["text"], item.get("format") or "auto", item["path"])
        values = {a.key: a.value for a in parsed.assignments if a.value is not None}
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
    from ..model.expect import declares_nothing

    source, document = (plan.expect["source"], plan.expect["document"]) if plan.expect else (None, None)
    differences = [f.to_dict() for f in plan.findings if f.kind == "expect"]
    short = any(d["severity"] == "error" for d in differences)
    verdict = "none" if declares_nothing(document) else "short" if short else "met"
    return (
        {
            "source": source,
            "document": document,
            "verdict": verdict,
            "differences": differences,
            "facts": facts.to_dict(),
        },
        unchecked(document, source),
    )


def nic_counters(root: str, readings: dict, save: bool, keep: bool = False, mark: Optional[dict] = None):
    """(findings, data) from the NIC counters judged as rates over the sliding window
    (rocetune.doctor.nic_baseline; lifetime counts only, as info, without an earlier reading).
    With `save` (--save-baseline) this reading joins the window, and a failure to write it is an
    error; with `keep` (the gate) the same, but a failure is said in the data, not raised.
    Readings taken before the operator's repair mark (`mark`) are left out."""
    from ..doctor import nic_baseline, nic_health
    from ..doctor.repair import before_mark
    from ..probe.sources.nic_counters import take_snapshot

    snapshot = take_snapshot(root, netdevs=sorted(readings.get("pause") or {}))
    window = [s for s in nic_baseline.load_window(root) if not before_mark(mark, s)]
    previous = nic_baseline.reference(window, snapshot)
    results = nic_health.judge(previous, snapshot)
    data = {
        "baseline": nic_baseline.baseline_file(root) if previous else None,
        "window": {
            "span_s": nic_baseline.WINDOW_S,
            "readings": len(window),
            "judged_from": previous["taken_at"]["wall"] if previous else None,
        },
        "rates": [
            {"check": c, "subject": s, "unit": u, "rate": r} for c, s, u, r in nic_health.rates(previous, snapshot)
        ],
        "saved": None,
        "warnings": snapshot.get("warnings", []),
    }
    if save or keep:
        slid = nic_baseline.slide(window, snapshot)
        try:
            data["saved"] = nic_baseline.save_window(slid, root) if slid is not None else None
        except RocetuneError as exc:
            if save:
                raise
            data["warnings"] = data["warnings"] + [f"the counter window was not kept: {exc.message}"]
    return [r.to_finding() for r in results], data


def plan_facts(plan: Plan, view: HostView) -> PlanFacts:
    """What a log is held to beyond the plan's env (rocetune.nccl.log_compare.PlanFacts): the NCCL
    release the plan was made for (its nccl-version report), whether it expects GPUDirect RDMA,
    the RDMA ports it left out, and the GPUs of the host (`view`, analysis.hostview.HostView)."""
    from ..nccl.log_compare import PlanFacts

    ev = plan.reports.get("nccl-version") or {}
    came = {"declared": "declared"}.get(ev.get("basis") or "", "") or (
        f"the library {ev['library']}" if ev.get("library") else "the host's NCCL"
    )
    gdr = plan.reports.get("gpudirect-rdma") or {}
    hca = plan.get("NCCL_IB_HCA")
    excluded = tuple((e["port"], e["why"]) for e in ((hca.evidence or {}).get("excluded") or [])) if hca else ()
    gpu_source = ((view.f.get("sources") or {}).get("gpu") or {}).get("ok")
    return PlanFacts(
        nccl_version=ev.get("version"),
        nccl_from=came,
        gdr_expected=gdr.get("expected"),
        gdr_why=gdr.get("expected_why") or "",
        excluded=excluded,
        gpus=len(view.gpus) if view.gpus or gpu_source else None,
    )


def nccl_log_against(path: str, plan: Plan, view: HostView):
    """(NCCL's own report read from its INFO log, its differences from the plan as findings):
    the plan's env and what else the log is held to (plan_facts)."""
    from ..doctor.nccl_findings import nccl_log_finding
    from ..nccl.log import load_log
    from ..nccl.log_compare import compare_with_plan

    facts = plan_facts(plan, view)
    report = load_log(path)
    return report, [nccl_log_finding(d, path) for d in compare_with_plan(report, plan.env, facts)]
