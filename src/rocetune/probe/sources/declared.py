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

A file that is absent is silent; one that cannot be read is a warning of this source.
"""

from __future__ import annotations

import re
import shlex
from typing import Dict, List, Optional

from ...errors import HostReadError
from ...hostfs import ProbeContext
from ...nccl.conf import SYSTEM_CONF, conf_values
from ...nccl.topo_read import MAX_BYTES, TopoReadError, parse_topology, to_nodes

ROCETUNE_HEADER = "# rocetune "
# Where the rocetune_env role keeps an owner's nccl.conf before replacing it (its module says so too).
OWNER_BACKUP_SUFFIX = ".rocetune-orig"
ENV_SCRIPTS = (
    ("/usr/local/gib/scripts/set_nccl_env.sh", "gcp-gib"),
    ("/var/lib/tcpxo/lib64/nccl-env-profile.sh", "gcp-tcpxo"),
)
VENDOR_TOPO_DIRS = (("/opt/microsoft", "topo.xml", "azure"),)
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
    return {"files": files, "topology_files": topo}


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
