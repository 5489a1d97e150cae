"""NVLink fabric source: on a node with NVIDIA GPUs, whether each GPU is registered with the NVLink
fabric (the state Fabric Manager -- with the NVLink Subnet Manager on NVLink 5 -- or IMEX drive
to `Completed`), which NVLinks are up, their error counters, and the fabric services' last state
(nvidia-fabricmanager, nvidia-imex).

The GPUs' fabric state comes from `nvidia-smi --query-gpu=pci.bus_id,fabric.state,fabric.status`
and, on a driver without those fields, from `nvidia-smi -q`'s Fabric blocks. Present in the
Features only where nvidia-smi answered.
"""

from __future__ import annotations

from typing import Dict, Optional

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..source import Source

FABRIC_CSV_ARGV = ["nvidia-smi", "--query-gpu=pci.bus_id,fabric.state,fabric.status", "--format=csv,noheader"]
QUERY_ARGV = ["nvidia-smi", "-q"]
STATUS_ARGV = ["nvidia-smi", "nvlink", "-s"]
ERRORS_ARGV = ["nvidia-smi", "nvlink", "-e"]
UNITS = ("nvidia-fabricmanager.service", "nvidia-imex.service")
UNIT_PROPS = "Id,LoadState,ActiveState,SubState,Result,ExecMainStatus"


def _said(result) -> str:
    line = next((ln.strip() for ln in (result.stderr or result.stdout or "").splitlines() if ln.strip()),
                result.reason or "")
    return f"exit {result.returncode}: {line[:200]}".rstrip(": ")


def probe(ctx: ProbeContext, pci: dict) -> Optional[dict]:
    gpus = [d for d in pci.get("devices", []) if d.get("kind") == "gpu"]
    if not gpus:
        return None
    units_argv = ["systemctl", "show", *UNITS, "-p", UNIT_PROPS]
    start_commands(ctx.runner, [FABRIC_CSV_ARGV, STATUS_ARGV, ERRORS_ARGV, units_argv])
    doc: dict = {"nvswitches": sum(1 for d in pci.get("devices", []) if d.get("kind") == "nvswitch"),
                 "fabric": None, "links": None, "link_errors": None, "services": None, "errors": {}}
    res = ctx.runner.run(FABRIC_CSV_ARGV)
    answered = res.found
    problem = None
    if res.found and res.returncode == 0:
        try:
            doc["fabric"] = _parsers().parse_fabric_csv(res.stdout)
        except ParseError as exc:
            problem = exc.message
    else:
        problem = _said(res) if res.found else None
    if doc["fabric"] is None:
        # A driver before the fabric.* fields (or a recording of -q only): the Fabric blocks of -q.
        full = ctx.runner.run(QUERY_ARGV)
        answered |= full.found
        if full.found and full.returncode == 0:
            try:
                doc["fabric"] = {k: {"state": v.get("state"), "status": v.get("status"),
                                     "clique_id": v.get("cliqueid"), "cluster_uuid": v.get("clusteruuid"),
                                     "bandwidth": v.get("bandwidth")}
                                 for k, v in _parsers().parse_fabric_query(full.stdout).items()}
            except ParseError as exc:
                doc["errors"]["nvidia-smi -q"] = exc.message
        elif problem:
            doc["errors"]["fabric"] = problem
    for key, argv, parse in (("links", STATUS_ARGV, "parse_nvlink_status"),
                             ("link_errors", ERRORS_ARGV, "parse_nvlink_errors")):
        res = ctx.runner.run(argv)
        answered |= res.found
        if res.found and res.returncode == 0:
            try:
                doc[key] = getattr(_parsers(), parse)(res.stdout)
            except ParseError as exc:  # this part unread; the fabric state above still counts
                doc["errors"][" ".join(argv[1:])] = exc.message
        elif res.found:
            doc["errors"][" ".join(argv[1:])] = _said(res)
    if not answered:
        return None
    res = ctx.runner.run(units_argv)
    if res.found and res.returncode == 0:
        doc["services"] = _units(res.stdout)
    return doc


def _parsers():
    """parsers.nvsmi_nvlink, imported where nvidia-smi answered (not on a host without GPUs' tools)."""
    from ..parsers import nvsmi_nvlink

    return nvsmi_nvlink


def _units(text: str) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for block in text.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            out[props.pop("Id")] = props
    return out


SOURCE = Source("nvlink", reads="`nvidia-smi` fabric state and NVLink status/errors, systemctl of the fabric services",
                needs=("pci",), order=130, optional=True)
