"""The explain use case: why a variable has its value -- the rule, the reason, the host facts
behind it, what NCCL's releases do with it, what NCCL will really use, and the findings about
it -- from a plan of the host or from an env file rocetune generated (its '# rule:' comments)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.record import FrozenRecord, Record
from .planning import PlanRequest

if TYPE_CHECKING:  # pragma: no cover
    from ..model.finding import Finding
    from ..model.plan import Decision, Plan


class ExplainRequest(FrozenRecord):
    plan: PlanRequest  # root, overrides, QoS plan, expectations
    features_path: Optional[str]  # the host's Features from a file instead of a probe of the root
    nccl_version: Optional[str]  # plan for this NCCL release
    var: Optional[str]  # the variable to explain; None: every planned one
    effective: bool  # also what NCCL will really use, given its precedence
    env_file: Optional[str]  # explain this generated env file instead of planning
    _fields = ("plan", "features_path", "nccl_version", "var", "effective", "env_file")

    def __init__(self, plan: PlanRequest, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                 var: Optional[str] = None, effective: bool = False, env_file: Optional[str] = None) -> None:
        self._set(plan, features_path, nccl_version, var, effective, env_file)


class Explained(Record):
    data: Dict[str, Any]  # one variable's explanation, or {"variables": [...]} for all
    warnings: List[str]  # the plan's warnings
    _fields = ("data", "warnings")

    def __init__(self, data: Dict[str, Any], warnings: List[str]) -> None:
        self.data = data
        self.warnings = warnings


def explain(request: ExplainRequest) -> Explained:
    plan: Optional[Plan] = None
    version = None  # the NCCL release planned for (unknown for an env file)
    findings: List[Finding] = []
    if request.env_file:
        decisions, fhash = _decisions_from_env(request.env_file)
        if not decisions:
            raise RocetuneError(f"{request.env_file}: no '# rule:' comments: not a file rocetune generated",
                                hint="explain plans instead: rocetune explain --features FILE", code=ExitCode.INPUT)
        source = f"env file {request.env_file}" + (f" (features sha256:{fhash})" if fhash else "")
        warnings: List[str] = []
    else:
        from ..analysis.hostview import HostView
        from .expectations import hold_to_expectations
        from .findings import all_findings
        from .inputs import planned_features
        from .planning import plan_host

        features = planned_features(request.plan.root, request.features_path, request.nccl_version,
                                    request.plan.settings_path)
        view = HostView(features)
        version = view.nccl_version()
        plan = hold_to_expectations(plan_host(features, request.plan), features, request.plan.expect(), view)
        decisions = plan.decisions
        findings = all_findings(features, plan)
        source = f"features {request.features_path}" if request.features_path else f"host {request.plan.root}"
        warnings = [str(m) for m in plan.warnings]
    layers = _layers(request.plan.root) if request.effective else None
    by_key = {d.key: d for d in decisions}
    if request.var:
        key = request.var
        data = _explain_one(key, by_key.get(key), plan, layers, version)
        other_case = _other_case(key, by_key)
        if other_case:
            data["did_you_mean"] = other_case
        about = _findings_about(key, findings)
        if about:
            data["findings"] = about
        data["source"] = source
        if key in _PATH_VARS:
            data["gpu_nic_paths"] = _paths_summary(plan)
        return Explained(data, warnings)
    rows = []
    for d in decisions:
        row: Dict[str, Any] = {"key": d.key, "value": d.value, "rule_id": d.rule_id, "reason": d.reason}
        if layers is not None:
            row["effective"] = _effective_entry(d.key, d.value, layers)
        rows.append(row)
    return Explained({"source": source, "variables": rows,
                      "unset": plan.unset if plan else [],
                      "notes": [m.to_dict() for m in plan.notes] if plan else [],
                      "gpu_nic_paths": _paths_summary(plan)}, warnings)


def _layers(root: str):
    """Where NCCL reads its variables on the host, first wins (rocetune.nccl.conf)."""
    from ..hostfs.root import HostRoot
    from ..nccl.conf import layers

    host = HostRoot(root)
    environ = dict(os.environ) if host.is_live else None
    home = os.path.expanduser("~") if host.is_live else None
    return layers(host, environ, home)


def _decisions_from_env(path: str) -> Tuple[List[Decision], Optional[str]]:
    from ..envfiles.read import parse_text
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input_text
    from ..lint.checks import MAX_BYTES
    from ..model.plan import Decision

    try:
        text = read_input_text(path, MAX_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"--env {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"--env {path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    parsed = parse_text(text, "auto", path)
    out = []
    for a in parsed.assignments:
        if a.rule_id is None:
            continue
        out.append(Decision(a.key, a.value if a.value is not None else a.raw, a.rule_id,
                            f"from {path}:{a.line} ({parsed.fmt}); run explain with --features or on "
                            "the host for the evidence", {"file": path, "line": a.line}))
    return out, parsed.features_hash


def _other_case(key: str, planned: Dict[str, Any]) -> Optional[str]:
    """The variable `key` names in another case (`nccl_ib_hca` -> NCCL_IB_HCA): environment
    names are case-sensitive, so it is another variable that NCCL never reads."""
    if key in planned:
        return None
    from ..nccl.catalog import load_catalog

    upper = key.upper()
    if upper != key and (upper in planned or load_catalog().info(upper) is not None):
        return upper
    return None


def _findings_about(key: str, findings: List[Finding]) -> List[Dict[str, Any]]:
    import re

    named = re.compile(r"(?<![A-Z0-9_])" + re.escape(key) + r"(?![A-Z0-9_])")
    return [dict(f.to_dict(), doc=f"docs/checks/{f.id}.md") for f in findings
            if f.subject == key or f.key == key or named.search(f.message)]


# Variables whose explanation rests on the GPU-NIC paths NCCL will see.
_PATH_VARS = ("NCCL_TOPO_FILE", "NCCL_NET_GDR_LEVEL", "NCCL_IB_HCA")


def _paths_summary(plan: Optional[Plan]) -> Optional[Dict[str, Any]]:
    """Where the GPU-NIC paths behind GPUDirect RDMA come from: the planned NCCL topology file
    (which one) or the probe's PCI tree; None without GPUs and compute ports."""
    report = (plan.reports.get("gpudirect-rdma") if plan else None) or {}
    pairs = report.get("pairs") or []
    if not pairs:
        return None
    local = [p for p in pairs if p.get("default_level")]
    return {"from": report.get("paths_from") or "probe's PCI tree (nvidia-smi topo -m, sysfs)",
            "topology_file": bool(report.get("paths_from")), "pairs": len(pairs),
            "pix_pxb_pairs": len(local)}


def _effective_entry(key: str, planned: Optional[str], layers) -> Dict[str, Any]:
    from ..nccl.conf import effective

    value, where = effective(key, layers)
    if value is None:
        status = "not set where NCCL looks" if planned is not None else "unset"
    elif planned is None:
        status = "set, though rocetune plans nothing for it"
    else:
        status = "matches the plan" if value == planned else "differs from the plan"
    return {"value": value, "from": where, "status": status,
            "layers": [label for label, _ in layers]}


def _explain_one(key: str, d: Optional[Decision], plan: Optional[Plan], layers,
                 version=None) -> Dict[str, Any]:
    from ..nccl import defaults
    from ..nccl.catalog import load_catalog

    cat = load_catalog()
    info = cat.info(key)
    data: Dict[str, Any] = {"variable": key, "planned": d is not None}
    if d is not None:
        data.update({"value": d.value, "rule_id": d.rule_id, "reason": d.reason, "evidence": d.evidence,
                     "doc": None if d.rule_id == "override" else f"docs/rules/{d.rule_id}.md"})
        gate = (d.evidence or {}).get("nccl")
        if isinstance(gate, dict):  # a version-gated decision: the NCCL library it was planned for
            from ..analysis.hostview import nccl_evidence_text

            data["gated_on"] = {**gate, "text": nccl_evidence_text(gate)}
    elif plan is not None:
        gone = [u for u in plan.unset if u["key"] == key]
        if gone:
            data["unset_by"] = gone[0]
        related = [m.to_dict() for m in plan.notes + plan.warnings if key in m.message]
        if related:
            data["related"] = related
    if info is not None:
        from ..nccl import releases

        data["nccl"] = {"default": info.get("default"), "default_means": info.get("default_means"),
                        "description": info.get("description"), "kind": info.get("kind"),
                        "catalog_release": info.get("since") or cat.nccl_version,
                        "catalog_source": info.get("source"),
                        "release_default": defaults.describe(key, version),
                        "default_text": defaults.summary(key, version),
                        "releases": releases.variable_releases(key),
                        "releases_text": releases.variable_text(key),
                        "read_by_planned_release": releases.reads(key, version),
                        "release_facts": [{"id": f.id, "releases": f.span(), "what": f.what, "source": f.source}
                                          for f in releases.facts_about(key)]}
    elif key.startswith("NCCL_"):
        data["nccl"] = {"not_read_by_nccl": cat.describe_unknown(key)}
    if layers is not None:
        data["effective"] = _effective_entry(key, d.value if d else None, layers)
    return data
