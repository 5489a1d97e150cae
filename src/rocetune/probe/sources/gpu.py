"""GPU source: what nvidia-smi reports (topology matrix, bus ids, names)."""

from __future__ import annotations

from typing import Any, Dict

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..parsers.nvsmi_query import parse_gpu_query
from ..parsers.nvsmi_topo import parse_topo_matrix
from ..source import Source

TOPO_ARGV = ["nvidia-smi", "topo", "-m"]
QUERY_ARGV = ["nvidia-smi", "--query-gpu=index,pci.bus_id,name", "--format=csv,noheader"]
# Independent of each other: a live runner runs them side by side (the probe starts them even
# earlier: SOURCE.starts); the query is read only when the matrix is usable.
COMMANDS = (TOPO_ARGV, QUERY_ARGV)


def probe(ctx: ProbeContext, pci: dict) -> dict:
    sysfs_gpus = sum(1 for d in pci["devices"] if d["kind"] == "gpu")
    bus_ids: Dict[str, str] = {}
    names: Dict[str, str] = {}
    data: Dict[str, Any] = {"matrix": None, "bus_ids": bus_ids, "names": names}
    start_commands(ctx.runner, COMMANDS)
    topo = ctx.runner.run(TOPO_ARGV)
    if not topo.found:
        if sysfs_gpus:
            ctx.status.ok = False
            where = "not found" if ctx.root.is_live else "not recorded in this root"
            ctx.status.reason = (f"nvidia-smi topo -m {where} ({topo.reason}) but {sysfs_gpus} "
                                 "NVIDIA GPU(s) on PCI: NVLink and GPU indices unknown")
        return data
    if topo.returncode != 0:
        ctx.status.ok = False
        first = (topo.stderr or topo.stdout or topo.reason).strip().splitlines()
        ctx.status.reason = f"nvidia-smi topo -m failed (exit {topo.returncode})" + (
            f": {first[0][:160]}" if first else "")
        return data
    try:
        matrix = parse_topo_matrix(topo.stdout)
    except ParseError as exc:
        ctx.status.ok = False
        ctx.status.reason = exc.message
        return data
    for w in matrix.pop("warnings", []):
        ctx.warn(f"nvidia-smi topo -m: {w}")
    data["matrix"] = matrix
    query = ctx.runner.run(QUERY_ARGV)
    if query.ok:
        try:
            for row in parse_gpu_query(query.stdout):
                bus_ids[str(row["index"])] = row["bus_id"]
                names[str(row["index"])] = row["name"]
        except ParseError as exc:
            ctx.warn(exc.message)
    elif query.found:
        ctx.warn(f"nvidia-smi --query-gpu failed (exit {query.returncode}): GPU bus ids unknown")
    return data


SOURCE = Source("gpu", reads="`nvidia-smi topo -m` and `nvidia-smi --query-gpu`",
                needs=("pci",), order=40, starts=COMMANDS)
