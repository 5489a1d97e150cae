"""NIC firmware source: the persistent (NVCONFIG) settings of each ConnectX card that carries RDMA,
read back with `mlxconfig -d BDF -e q` (NVIDIA MFT) or `mstconfig` (mstflint) -- read only, never
a `set`.

The query is parsed by rocetune.core.nic_firmware_params, which the nic_firmware role runs as its copy
plugins/module_utils/nic_firmware_state.py: one reader for what the role sets
and what doctor and fleet read back. Only the parameters RoCE depends on are kept, each with its
Default / Current / Next Boot; a card whose Next Boot differs from Current has a firmware reset
pending.

Present in the Features only where a tool answered (neither installed, or a recorded root without
the recording: no section, and the Features hash as before).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ... import nics
from ...core.nic_firmware_params import FirmwareError, first_function, parse_query, query_argv
from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..source import Source

TOOLS = ("mlxconfig", "mstconfig")
FIRMWARE_VENDORS = nics.vendors_read_by("mlxconfig")  # the PCI vendors whose NVCONFIG mlxconfig reads
# The parameters a RoCE fabric depends on (the nic_firmware role's README says why each matters).
WATCHED = (
    "PCI_WR_ORDERING", "ATS_ENABLED", "USER_PROGRAMMABLE_CC", "ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ",
    "ROCE_CONTROL", "ROCE_ADAPTIVE_ROUTING_EN", "SRIOV_EN", "LINK_TYPE_P1", "LINK_TYPE_P2",
    "ROCE_CC_PRIO_MASK_P1", "ROCE_CC_PRIO_MASK_P2", "CNP_DSCP_P1", "CNP_DSCP_P2",
    "CNP_802P_PRIO_P1", "CNP_802P_PRIO_P2",
)
_COLUMNS = {"Default": "default", "Current": "current", "Next Boot": "next_boot"}


def cards(rdma: dict, pci: dict) -> List[str]:
    """The first function of every NVIDIA/Mellanox card with an RDMA device of its own (not a
    software device; a sub-function counts through its parent PF)."""
    vendors = {d["bdf"]: d.get("vendor") for d in pci.get("devices", []) if d.get("bdf")}
    out = set()
    for dev in rdma.get("devices", []):
        bdf = dev.get("pci")
        vendor = vendors.get(bdf) if bdf else None
        if not bdf or dev.get("function") == "software" or vendor not in (*FIRMWARE_VENDORS, None):
            continue
        try:
            out.add(first_function(bdf))
        except FirmwareError:
            continue
    return sorted(out)


def probe(ctx: ProbeContext, rdma: dict, pci: dict) -> Optional[dict]:
    devices = cards(rdma, pci)
    if not devices:
        return None
    tool = None
    for name in TOOLS:
        first = ctx.runner.run(query_argv(name, devices[0], []))
        if first.found:
            tool = name
            break
    if tool is None:
        return None
    start_commands(ctx.runner, [query_argv(tool, bdf, []) for bdf in devices[1:]])
    out: Dict[str, dict] = {}
    for bdf in devices:
        out[bdf] = read_card(ctx.runner.run(query_argv(tool, bdf, [])))
    return {"tool": tool, "devices": out}


def read_card(result) -> dict:
    if result.returncode != 0:
        said = next((ln.strip() for ln in (result.stderr or result.stdout or "").splitlines() if ln.strip()),
                    result.reason or "")
        return {"error": f"exit {result.returncode}: {said[:300]}".rstrip(": "), "params": {}}
    try:
        rows = parse_query(result.stdout)
    except FirmwareError as exc:
        return {"error": str(exc), "params": {}}
    params = {}
    for name in WATCHED:
        row = rows.get(name)
        if row is not None:
            params[name] = {_COLUMNS.get(col, col.lower().replace(" ", "_")): value for col, value in row.items()}
    return {"error": None, "params": params}


SOURCE = Source("nic_firmware", reads="`mlxconfig -d BDF -e q` (or mstconfig) per ConnectX card with RDMA",
                needs=("rdma", "pci"), order=110, optional=True)
