"""rocetune explain: why a variable has its value, from which rule and which host facts.

    rocetune explain                     every planned variable, its rule and reason
    rocetune explain NCCL_IB_HCA         the value, the rule, the reason and the evidence
    rocetune explain VAR --effective     also what NCCL will really use: the process environment,
                                         then $NCCL_CONF_FILE (or ~/.nccl.conf), then /etc/nccl.conf
    rocetune explain --env FILE [VAR]    explain a file rocetune generated (its '# rule:' comments)

Explaining one variable also shows the findings about it (a finding whose subject is the
variable, or whose message names it), each with its fix and its page docs/checks/<id>.md.

The plan comes from --features FILE, or from probing --root; the plan options of `rocetune env`
(--set, --unset, --config, --qos, --local-rank) apply, so explain shows exactly what env emits.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ...errors import ExitCode, RocetuneError
from .. import options, report
from ..result import Result

if TYPE_CHECKING:  # pragma: no cover
    from ...model.finding import Finding
    from ...model.plan import Decision, Plan

NAME = "explain"
ORDER = 30
HELP = "explain a planned variable: its value, the rule that chose it and the host facts behind it"
EXAMPLE = "rocetune explain NCCL_IB_HCA"
EXIT_CODES = {  # beside 2, 3, 4 and 70, which every verb has (cli/main.py)
    0: "the variable was explained (or, without VAR, every planned variable listed)",
}


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("var", nargs="?", metavar="VAR", help="variable to explain (default: all)")
    p.add_argument("--effective", action="store_true",
                   help="also show what NCCL will really use, given its precedence: process env > "
                        "$NCCL_CONF_FILE or ~/.nccl.conf > /etc/nccl.conf (read through --root)")
    p.add_argument("--env", metavar="FILE", dest="env_file",
                   help="explain an env file rocetune generated instead of planning")
    options.add_plan_arguments(p)


# --- the verb ---------------------------------------------------------------------------------------

def _decisions_from_env(path: str) -> Tuple[List[Decision], Optional[str]]:
    from ...envfiles.read import parse_text
    from ...errors import HostReadError
    from ...hostfs.inputs import read_input_text
    from ...lint.checks import MAX_BYTES
    from ...model.plan import Decision

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


def run(args: argparse.Namespace) -> Result:
    from ... import app
    from ...analysis.hostview import HostView
    from ...hostfs.root import HostRoot
    from ...nccl.conf import layers as nccl_layers

    plan: Optional[Plan] = None
    version = None  # the NCCL release planned for (unknown for an env file)
    findings: List[Finding] = []
    if args.env_file:
        decisions, fhash = _decisions_from_env(args.env_file)
        if not decisions:
            raise RocetuneError(f"{args.env_file}: no '# rule:' comments: not a file rocetune generated",
                                hint="explain plans instead: rocetune explain --features FILE", code=ExitCode.INPUT)
        source = f"env file {args.env_file}" + (f" (features sha256:{fhash})" if fhash else "")
        warnings: List[str] = []
    else:
        features = report.collect(args)
        version = HostView(features).nccl_version()
        plan = app.plan_host(features, options.plan_request(args))
        decisions = plan.decisions
        findings = report.all_findings(features, plan)
        source = f"features {args.features}" if args.features else f"host {args.root}"
        warnings = [str(m) for m in plan.warnings]

    layers = None
    if args.effective:
        root = HostRoot(args.root)
        environ = dict(os.environ) if root.is_live else None
        home = os.path.expanduser("~") if root.is_live else None
        layers = nccl_layers(root, environ, home)

    by_key = {d.key: d for d in decisions}
    if args.var:
        data = _explain_one(args.var, by_key.get(args.var), plan, layers, version)
        other_case = _other_case(args.var, by_key)
        if other_case:
            data["did_you_mean"] = other_case
        about = _findings_about(args.var, findings)
        if about:
            data["findings"] = about
        data["source"] = source
        if args.var in _PATH_VARS:
            data["gpu_nic_paths"] = _paths_summary(plan)
        human = _human_one(data)
    else:
        rows = []
        for d in decisions:
            row: Dict[str, Any] = {"key": d.key, "value": d.value, "rule_id": d.rule_id, "reason": d.reason}
            if layers is not None:
                row["effective"] = _effective_entry(d.key, d.value, layers)
            rows.append(row)
        data = {"source": source, "variables": rows,
                "unset": plan.unset if plan else [],
                "notes": [m.to_dict() for m in plan.notes] if plan else [],
                "gpu_nic_paths": _paths_summary(plan)}
        human = _human_all(data, layers is not None, getattr(args, "verbose", 0))
    return Result(command=NAME, data=data, human=human, warnings=warnings)


def _other_case(key: str, planned: Dict[str, Any]) -> Optional[str]:
    """The variable `key` names in another case (`nccl_ib_hca` -> NCCL_IB_HCA): environment
    names are case-sensitive, so it is another variable that NCCL never reads."""
    if key in planned:
        return None
    from ...nccl.catalog import load_catalog

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


def _paths_line(summary: Optional[Dict[str, Any]]) -> List[str]:
    from ...text import printable

    if not summary:
        return []
    return [printable(f"GPU-NIC paths: from the {summary['from']}: {summary['pix_pxb_pairs']} of "
                      f"{summary['pairs']} GPU-NIC pair(s) PIX/PXB (GPUDirect RDMA at NCCL's default level)")]


def _effective_entry(key: str, planned: Optional[str], layers) -> Dict[str, Any]:
    from ...nccl.conf import effective

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
    from ...nccl import defaults
    from ...nccl.catalog import load_catalog

    cat = load_catalog()
    info = cat.info(key)
    data: Dict[str, Any] = {"variable": key, "planned": d is not None}
    if d is not None:
        data.update({"value": d.value, "rule_id": d.rule_id, "reason": d.reason, "evidence": d.evidence,
                     "doc": None if d.rule_id == "override" else f"docs/rules/{d.rule_id}.md"})
        gate = (d.evidence or {}).get("nccl")
        if isinstance(gate, dict):  # a version-gated decision: the NCCL library it was planned for
            from ...analysis.hostview import nccl_evidence_text

            data["gated_on"] = {**gate, "text": nccl_evidence_text(gate)}
    elif plan is not None:
        gone = [u for u in plan.unset if u["key"] == key]
        if gone:
            data["unset_by"] = gone[0]
        related = [m.to_dict() for m in plan.notes + plan.warnings if key in m.message]
        if related:
            data["related"] = related
    if info is not None:
        from ...nccl import releases

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


def _evidence_lines(value: Any, indent: int = 4) -> List[str]:
    from ...text import printable

    pad = " " * indent
    lines: List[str] = []
    if isinstance(value, dict):
        for k in sorted(value):
            v = value[k]
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines += _evidence_lines(v, indent + 2)
            else:
                lines.append(f"{pad}{k}: {json.dumps(v, sort_keys=True)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                lines.append(pad + "- " + ", ".join(f"{k}={json.dumps(item[k], sort_keys=True)}"
                                                    for k in sorted(item)))
            else:
                lines.append(f"{pad}- {json.dumps(item)}")
    else:
        lines.append(pad + json.dumps(value))
    return [printable(x) for x in lines]


def _human_one(data: Dict[str, Any]) -> str:
    from ...text import printable

    key = data["variable"]
    lines = []
    if data["planned"]:
        from ...envfiles.writing import sh_quote

        # as a shell line: NCCL_IB_HCA='=mlx5_0:1', never NCCL_IB_HCA==mlx5_0:1
        lines.append(printable(f"{key}={sh_quote(data['value'])}"))
        lines.append(printable(f"  rule:   {data['rule_id']}" + (f"  ({data['doc']})" if data.get("doc") else "")))
        lines.append(printable(f"  why:    {data['reason']}"))
        if data.get("gated_on"):
            lines.append(printable(f"  gated on: {data['gated_on']['text']}"))
        if data.get("evidence"):
            lines.append("  evidence:")
            lines += _evidence_lines(data["evidence"])
    else:
        lines.append(printable(f"{key} is not set by rocetune for this {data['source']}"))
        if data.get("did_you_mean"):
            lines.append(printable(f"  did you mean {data['did_you_mean']}? (variable names are case-sensitive: "
                                   f"NCCL never reads {key})"))
        if data.get("unset_by"):
            u = data["unset_by"]
            lines.append(printable(f"  removed by {u['origin']} (rule {u['rule_id']} planned {u['value']!r})"))
        for m in data.get("related", []):
            lines.append(printable(f"  {m['rule_id']}: {m['message']}"))
    nccl = data.get("nccl")
    if nccl:
        if "not_read_by_nccl" in nccl:
            lines.append(printable(f"  NCCL:   not an NCCL variable: {nccl['not_read_by_nccl']}"))
        else:
            lines.append(printable(f"  NCCL:   {_default_text(nccl)}"))
            if nccl.get("releases_text"):
                planned = {True: "", False: "; NOT read by the release planned for", None: ""}[
                    nccl.get("read_by_planned_release")]
                lines.append(printable(f"  releases: {nccl['releases_text']}{planned} "
                                       "(NCCL's source at each tag: docs/nccl-releases.md)"))
            for f in nccl.get("release_facts") or []:
                lines.append(printable(f"  release fact {f['id']} ({f['releases']}): {f['what']} [{f['source']}]"))
    eff = data.get("effective")
    if eff:
        where = f" from {eff['from']}" if eff["from"] else ""
        val = eff["value"] if eff["value"] is not None else "(unset)"
        lines.append(printable(f"  effective: {val}{where}: {eff['status']}"))
        lines.append(printable("  NCCL reads, first wins: " + " > ".join(eff["layers"] or ["(nothing found)"])))
    lines += ["  " + x for x in _paths_line(data.get("gpu_nic_paths"))]
    lines += ["  " + line for f in data.get("findings", []) for line in _finding_lines(f)]
    lines.append(printable(f"  source: {data['source']}"))
    return "\n".join(lines) + "\n"


def _finding_lines(doc: Dict[str, Any]) -> List[str]:
    """A finding of the JSON document, as every verb shows one (with its fix and page)."""
    from ...model.finding import Finding, finding_lines

    return finding_lines(Finding(**{k: v for k, v in doc.items() if k in Finding._fields}), verbose=1)


def _default_text(nccl: Dict[str, Any]) -> str:
    """The description and the default of the release planned for; a variable whose default
    rocetune does not track per release is given with the catalog's release named."""
    desc = f"{nccl['description']}; " if nccl.get("description") else ""
    if nccl.get("default_text"):
        return desc + nccl["default_text"]
    default = nccl.get("default")
    means = f" ({nccl['default_means']})" if nccl.get("default_means") else ""
    if nccl.get("catalog_source"):  # a name a release past the catalog's inventory added
        return (f"{desc}default {default if default is not None else 'unset'}{means} from NCCL "
                f"{nccl.get('catalog_release')} ({nccl['catalog_source']})")
    return (f"{desc}default {default if default is not None else 'unset'}{means} in NCCL "
            f"{nccl.get('catalog_release') or '?'} (rocetune's catalog; not tracked per release)")


def _human_all(data: Dict[str, Any], effective_on: bool, verbose: int) -> str:
    from ...text import printable, table

    rows = []
    for r in data["variables"]:
        row = [r["key"], r["value"], r["rule_id"], r["reason"]]
        if effective_on:
            e = r["effective"]
            row.insert(3, f"{e['value'] if e['value'] is not None else '-'} ({e['status']})")
        rows.append(row)
    header = ["VARIABLE", "VALUE", "RULE", "WHY"]
    if effective_on:
        header.insert(3, "EFFECTIVE")
    lines = table(rows, header) if rows else ["nothing planned"]
    for u in data.get("unset", []):
        lines.append(printable(f"unset {u['key']} by {u['origin']}"))
    if verbose:
        lines += [printable(f"note: {n['rule_id']}: {n['message']}") for n in data.get("notes", [])]
    lines += _paths_line(data.get("gpu_nic_paths"))
    lines.append(printable(f"source: {data['source']}"))
    return "\n".join(lines) + "\n"
