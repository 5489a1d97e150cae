"""nvidia-smi's NVLink fabric readings: the per-GPU fabric registration (`nvidia-smi -q`'s Fabric
block, or `--query-gpu=...,fabric.state,fabric.status` where the driver knows those fields), the
links (`nvidia-smi nvlink -s`: each link's speed, `<inactive>` for a link that is down) and the
links' error counters (`nvidia-smi nvlink -e`). Recorded real outputs:
tests/fixtures/outputs/nvlink (SOURCES.md).
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from ...errors import ParseError
from ._common import guarded

_GPU_Q = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_GPU_LINE = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]+)\))?\s*$")
_LINK = re.compile(r"^\s*Link\s+(\d+):\s*(.*)$")
_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\Z")


def short_bdf(bus_id: str) -> str:
    """nvidia-smi's `00000000:18:00.0` -> `0000:18:00.0` (the kernel's form), lower case."""
    dom, rest = bus_id.split(":", 1)
    return f"{int(dom, 16):04x}:{rest}".lower()


@guarded("nvidia-smi -q")
def parse_fabric_query(text: str) -> Dict[str, Dict[str, Optional[str]]]:
    """Per GPU bus id, its Fabric block from `nvidia-smi -q`: State, Status, CliqueId,
    ClusterUUID and the Health rows (N/A kept as None)."""
    out: Dict[str, Dict[str, Optional[str]]] = {}
    gpu, in_fabric, indent = None, False, 0
    for raw in text.splitlines():
        m = _GPU_Q.match(raw.strip()) if not raw.startswith(" ") else None
        if m:
            gpu, in_fabric = short_bdf(m.group(1)), False
            continue
        if gpu is None:
            continue
        stripped = raw.strip()
        lead = len(raw) - len(raw.lstrip())
        if stripped == "Fabric":
            in_fabric, indent = True, lead
            out[gpu] = {}
            continue
        if in_fabric:
            if stripped and lead <= indent:
                in_fabric = False
                continue
            key, sep, value = stripped.partition(":")
            if sep:
                v = value.strip()
                out[gpu][key.strip().lower().replace(" ", "_")] = None if v in ("N/A", "") else v
    if not out and "GPU " not in text:
        raise ParseError("nvidia-smi -q", "no GPU in the output")
    return out


@guarded("nvidia-smi fabric query")
def parse_fabric_csv(text: str) -> Dict[str, Dict[str, Optional[str]]]:
    """`nvidia-smi --query-gpu=pci.bus_id,fabric.state,fabric.status --format=csv,noheader`."""
    out: Dict[str, Dict[str, Optional[str]]] = {}
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 3 or not _BUS_ID.match(cols[0]):  # a row is a GPU's bus id, then its state and status
            continue
        state, status = (None if c in ("N/A", "[N/A]", "") else c for c in cols[1:3])
        out[short_bdf(cols[0])] = {"state": state, "status": status}
    if not out and text.strip():
        raise ParseError("nvidia-smi fabric query", f"no GPU rows ({text.strip().splitlines()[0][:120]})")
    return out


@guarded("nvidia-smi nvlink -s")
def parse_nvlink_status(text: str) -> Dict[str, dict]:
    """`nvidia-smi nvlink -s`: per GPU index, {"name", "links": {link: "25 GB/s" | "inactive"}}.
    A GPU without NVLink prints nothing (an empty result, not an error)."""
    out: Dict[str, dict] = {}
    gpu = None
    for line in text.splitlines():
        m = _GPU_LINE.match(line.strip())
        if m and not line.startswith((" ", "\t")):
            gpu = m.group(1)
            out[gpu] = {"name": m.group(2), "links": {}}
            continue
        m = _LINK.match(line)
        if m and gpu is not None:
            value = m.group(2).strip()
            out[gpu]["links"][m.group(1)] = "inactive" if "inactive" in value.lower() else value
    return out


@guarded("nvidia-smi nvlink -e")
def parse_nvlink_errors(text: str) -> Dict[str, Dict[str, Dict[str, int]]]:
    """`nvidia-smi nvlink -e`: per GPU index, per link, {counter name: value} (`Replay Errors`,
    `Recovery Errors`, `CRC Errors`, and what newer drivers add)."""
    out: Dict[str, Dict[str, Dict[str, int]]] = {}
    gpu = None
    for line in text.splitlines():
        m = _GPU_LINE.match(line.strip())
        if m and not line.startswith((" ", "\t")):
            gpu = m.group(1)
            out[gpu] = {}
            continue
        m = _LINK.match(line)
        if m and gpu is not None:
            name, sep, value = m.group(2).rpartition(":")
            if sep and value.strip().isascii() and value.strip().isdigit():
                out[gpu].setdefault(m.group(1), {})[name.strip()] = int(value.strip())
    return out
