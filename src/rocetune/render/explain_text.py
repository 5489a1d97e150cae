"""`rocetune explain` for a person: one variable's explanation, or the table of all."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional


def explain_text(data: Dict[str, Any], effective_on: bool, verbose: int) -> str:
    """The explanation of one variable (data["variable"]) or of all (data["variables"])."""
    return _human_one(data) if "variable" in data else _human_all(data, effective_on, verbose)


def _paths_line(summary: Optional[Dict[str, Any]]) -> List[str]:
    from ..text import printable

    if not summary:
        return []
    return [printable(f"GPU-NIC paths: from the {summary['from']}: {summary['pix_pxb_pairs']} of "
                      f"{summary['pairs']} GPU-NIC pair(s) PIX/PXB (GPUDirect RDMA at NCCL's default level)")]


def _evidence_lines(value: Any, indent: int = 4) -> List[str]:
    from ..text import printable

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
    from ..text import printable

    key = data["variable"]
    lines = []
    if data["planned"]:
        from ..envfiles.writing import sh_quote

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
    from ..model.finding import Finding, finding_lines

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
    from ..text import printable, table

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
