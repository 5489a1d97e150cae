"""Declared source: the NCCL settings the host's owner (or its cloud vendor) already ships.

Read through the root, never executed:

* `/etc/nccl.conf`, as NCCL reads it (rocetune.nccl.conf: first `=` splits, no trimming, `#`
  lines skipped) -- unless it is rocetune's own rendering (first line `# rocetune `); then the
  owner's original that the rocetune_env role kept (`/etc/nccl.conf.rocetune-orig`) is the
  declaration, and without one there is none;
* vendor net-plugin env files that jobs source: GCP's gIB `/usr/local/gib/scripts/set_nccl_env.sh`
  and TCPXO `/var/lib/tcpxo/lib64/nccl-env-profile.sh` (`export NAME=value` lines);
* vendor NCCL topology files: `/opt/microsoft/<shape>/topo.xml` (Azure HPC images) and the file an
  `NCCL_TOPO_FILE` line above names, with whether it exists (NCCL only logs an INFO line for a
  missing one, src/graph/xml.cc). An existing one is parsed (rocetune.nccl.topo_read: size cap,
  no entities) into `nodes`, or `read_error` says why it could not be.

* the measured reachability between the rails (`/etc/rocetune/rail-reach.json`, written by
  `rocetune fleet validate --tests cross-rail --rail-reach-out FILE`): its verdict (isolated,
  routed, partial), what was tested and when, as `rail_reach` -- the nccl-cross-nic rule's evidence.
  Absent file, absent key.

A file that is absent is silent; one that cannot be read is a warning of this source.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, List, Optional

from ...errors import HostReadError
from ...hostfs.context import ProbeContext
from ...nccl.conf import SYSTEM_CONF, conf_values
from ...nccl.topo_read import MAX_BYTES, TopoReadError, parse_topology, to_nodes
from ..source import Source

ROCETUNE_HEADER = "# rocetune "
# Where the rocetune_env role keeps an owner's nccl.conf before replacing it (its module says so too).
OWNER_BACKUP_SUFFIX = ".rocetune-orig"
ENV_SCRIPTS = (
    ("/usr/local/gib/scripts/set_nccl_env.sh", "gcp-gib"),
    ("/var/lib/tcpxo/lib64/nccl-env-profile.sh", "gcp-tcpxo"),
)
VENDOR_TOPO_DIRS = (("/opt/microsoft", "topo.xml", "azure"),)
# The file NCCL itself loads when NCCL_TOPO_FILE is unset (v2.30.7-1 src/graph/topo.cc:1774-1781;
# already in v2.10.3-1 topo.cc:589), written by NVIDIA's topology daemon on virtual machines.
NCCL_DEFAULT_TOPO = "/var/run/nvidia-topologyd/virtualTopology.xml"
RAIL_REACH = "/etc/rocetune/rail-reach.json"
RAIL_REACH_SCHEMA = "rocetune.rail-reach/1"
RAIL_REACH_VERDICTS = ("isolated", "routed", "partial")
_EXPORT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z")


def script_values(text: str) -> Dict[str, str]:
    """`export NAME=value` / `NAME=value` lines of a shell env file, the last one winning as in a
    shell; a value the shell would expand (`$`, backquote) is left out rather than guessed."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        m = _EXPORT.match(line)
        if not m:
            continue
        raw = m.group(2).strip()
        if "$" in raw or "`" in raw:
            continue
        try:
            words = shlex.split(raw, comments=True)
        except ValueError:
            continue
        if len(words) <= 1:
            out[m.group(1)] = words[0] if words else ""
    return out


def _file(ctx: ProbeContext, path: str, kind: str) -> Optional[dict]:
    text = ctx.text(path)
    if text is None:
        return None
    if kind == "nccl-conf":
        if text.startswith(ROCETUNE_HEADER):
            # rocetune's own rendering holds nothing the owner declared. The owner's file it
            # replaced was kept by the rocetune_env role: that is still the declaration, under
            # its own path, so a rerun plans exactly what the first run did.
            text = ctx.text(path + OWNER_BACKUP_SUFFIX)
            if text is None or text.startswith(ROCETUNE_HEADER):
                return None
        values = conf_values(text)
    else:
        values = script_values(text)
    return {"path": path, "kind": kind, "values": dict(sorted(values.items())), "ignored": None}


def probe(ctx: ProbeContext) -> dict:
    files: List[dict] = []
    # Highest precedence first: a sourced env script puts its values in the process environment,
    # which beats every nccl.conf (setenv(..., 0) in src/misc/param.cc).
    for path, kind in ENV_SCRIPTS:
        found = _file(ctx, path, kind)
        if found is not None:
            files.append(found)
    conf = _file(ctx, SYSTEM_CONF, "nccl-conf")
    if conf is not None:
        files.append(conf)
    topo: List[dict] = []
    for directory, name, vendor in VENDOR_TOPO_DIRS:
        for sub in sorted(ctx.root.listdir(directory)):
            path = f"{directory}/{sub}/{name}"
            if ctx.root.exists(path):
                topo.append({"path": path, "vendor": vendor, "exists": True, "declared_by": None})
    if ctx.root.exists(NCCL_DEFAULT_TOPO):
        topo.append({"path": NCCL_DEFAULT_TOPO, "vendor": "nvidia-topologyd", "exists": True, "declared_by": None,
                     "nccl_default": True})
    for f in files:
        named = f["values"].get("NCCL_TOPO_FILE")
        if named:
            entry = next((t for t in topo if t["path"] == named), None)
            if entry is None:
                entry = {"path": named, "vendor": None,
                         "exists": named.startswith("/") and ctx.root.exists(named), "declared_by": None}
                topo.append(entry)
            entry["declared_by"] = entry["declared_by"] or f["path"]
    for entry in topo:
        if entry["exists"]:
            entry.update(_layout(ctx, entry["path"]))
    out: dict = {"files": files, "topology_files": topo}
    reach = rail_reach(ctx)
    if reach is not None:
        out["rail_reach"] = reach
    return out


def rail_reach(ctx: ProbeContext) -> Optional[dict]:
    """The measured rail reachability, or None without the file; a file that is not what
    `fleet validate` writes keeps its path and says why (`error`), with no verdict."""
    from ...model.jsonread import load_json

    text = ctx.text(RAIL_REACH)
    if text is None:
        return None
    out: Dict[str, Any] = {"path": RAIL_REACH, "verdict": None, "reached": None, "tested": None, "measured_at": None,
           "hosts": None, "error": None}
    try:
        doc = load_json(text)
    except ValueError as exc:
        out["error"] = f"not JSON: {str(exc)[:200]}"
        return out
    ints = ("reached", "tested")
    if not isinstance(doc, dict) or doc.get("schema") != RAIL_REACH_SCHEMA:
        out["error"] = f"not a {RAIL_REACH_SCHEMA} document (written by fleet validate --rail-reach-out)"
    elif doc.get("verdict") not in RAIL_REACH_VERDICTS:
        out["error"] = f"verdict {str(doc.get('verdict'))[:40]!r} is none of {', '.join(RAIL_REACH_VERDICTS)}"
    elif not all(isinstance(doc.get(k), int) and not isinstance(doc.get(k), bool) and doc[k] >= 0 for k in ints) \
            or doc["reached"] > doc["tested"] or not doc["tested"]:
        out["error"] = "reached/tested are not counts of the paths tested"
    else:
        hosts = doc.get("hosts")
        out.update(verdict=doc["verdict"], reached=doc["reached"], tested=doc["tested"],
                   measured_at=str(doc.get("measured_at"))[:40] if doc.get("measured_at") else None,
                   hosts=len(hosts) if isinstance(hosts, list) else None)
    if out["error"]:
        ctx.warn(f"{RAIL_REACH}: {out['error']}")
    return out


def _layout(ctx: ProbeContext, path: str) -> dict:
    try:
        text = ctx.root.read_text(path, max_bytes=MAX_BYTES)
    except HostReadError as exc:
        return {"read_error": f"cannot read: {exc.reason}"}
    if text is None:
        return {"read_error": "cannot read"}
    try:
        return {"nodes": to_nodes(parse_topology(text))}
    except TopoReadError as exc:
        ctx.warn(f"{path}: {exc}")
        return {"read_error": str(exc)}


SOURCE = Source("declared", reads="/etc/nccl.conf, vendor NCCL env scripts and topology files",
                order=80)
