"""PCI source: GPUs, NICs and the bridges above them, from /sys/bus/pci/devices."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ...hostfs.context import ProbeContext
from ..source import Source

BDF_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\Z")
NVIDIA = "0x10de"
PCI_DEVICES = "/sys/bus/pci/devices"


def classify(vendor: Optional[str], pci_class: Optional[str]) -> str:
    cls = (pci_class or "").lower()
    if cls.startswith("0x0604"):
        return "bridge"
    if vendor == NVIDIA and cls.startswith("0x0680"):
        return "nvswitch"
    if vendor == NVIDIA and (cls.startswith("0x0300") or cls.startswith("0x0302")):
        return "gpu"
    if cls.startswith("0x02"):
        return "nic"
    return "other"


def _chain(real: str) -> Tuple[Optional[str], List[str]]:
    """`/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0` -> ("pci0000:00", [bdfs top first])."""
    parts = [p for p in real.split("/") if p]
    if len(parts) < 3 or parts[:2] != ["sys", "devices"]:
        return None, []
    rc = parts[2] if parts[2].startswith("pci") else None
    bdfs = [p for p in parts[3:] if BDF_RE.match(p)]
    return rc, bdfs


def _speed_rank(speed: Optional[str]) -> float:
    m = re.match(r"\s*([\d.]+)", speed or "")
    return float(m.group(1)) if m else 0.0


# What is read of each device kept (GPUs, NICs, NVSwitches and the bridges above them), in one
# batch per device (HostRoot.read_texts: its directory resolved and opened once).
_DETAILS = ("device", "numa_node", "current_link_speed", "max_link_speed", "current_link_width", "max_link_width",
            "sriov_totalvfs")


def _link(ctx: ProbeContext, base: str, a: Dict[str, Optional[str]]) -> Optional[dict]:
    speed = a["current_link_speed"]
    max_speed = a["max_link_speed"]
    width = ctx.int_of(f"{base}/current_link_width", a["current_link_width"])
    max_width = ctx.int_of(f"{base}/max_link_width", a["max_link_width"])
    if speed is None and width is None:
        return None
    degraded = False
    if speed and max_speed and _speed_rank(speed) and _speed_rank(speed) < _speed_rank(max_speed):
        degraded = True
    if width and max_width and 0 < width < max_width:
        degraded = True
    return {"speed": speed, "width": width, "max_speed": max_speed, "max_width": max_width,
            "degraded": degraded}


def _numa(ctx: ProbeContext, base: str, text: Optional[str]) -> Optional[int]:
    node = ctx.int_of(f"{base}/numa_node", text)
    return node if node is not None and node >= 0 else None


def probe(ctx: ProbeContext) -> dict:
    names = [n for n in ctx.root.listdir(PCI_DEVICES) if BDF_RE.match(n)]
    if not names:
        ctx.status.ok = False
        ctx.status.reason = f"no PCI devices under {PCI_DEVICES}"
        return {"devices": []}
    seen: Dict[str, dict] = {}
    for bdf in names:
        base = f"{PCI_DEVICES}/{bdf}"
        real = ctx.root.realpath(base)
        rc, chain = _chain(real)
        if not chain or chain[-1] != bdf:
            ctx.warn(f"{base}: link does not lead into /sys/devices/pci*")
            rc, chain = None, [bdf]
        read = ctx.attrs(base, ("vendor", "class"))
        vendor, pci_class = read["vendor"], read["class"]
        seen[bdf] = {"bdf": bdf, "vendor": vendor, "class": pci_class, "root_complex": rc,
                     "chain": chain, "kind": classify(vendor, pci_class)}
    wanted = {b for b, d in seen.items() if d["kind"] in ("gpu", "nic", "nvswitch")}
    for b in list(wanted):
        wanted.update(a for a in seen[b]["chain"][:-1] if a in seen)
    devices = []
    for bdf in sorted(wanted):
        d = seen[bdf]
        base = f"{PCI_DEVICES}/{bdf}"
        chain = d["chain"]
        a = ctx.attrs(base, _DETAILS)
        devices.append({
            "bdf": bdf,
            "kind": d["kind"],
            "class": d["class"],
            "vendor": d["vendor"],
            "device": a["device"],
            "numa_node": _numa(ctx, base, a["numa_node"]),
            "root_complex": d["root_complex"],
            "parent": chain[-2] if len(chain) > 1 else None,
            # A switch is an upstream port below a root/downstream port: every second bridge.
            "switches": chain[1:-1:2],
            "driver": ctx.root.link_name(f"{base}/driver"),
            "link": _link(ctx, base, a),
            "sriov": _sriov(ctx, base, a["sriov_totalvfs"]),
        })
    return {"devices": devices}


def _sriov(ctx: ProbeContext, base: str, totalvfs: Optional[str]) -> Optional[dict]:
    total = ctx.int_of(f"{base}/sriov_totalvfs", totalvfs)
    physfn_target = ctx.root.readlink(f"{base}/physfn")
    if total is None and physfn_target is None:
        return None
    physfn = physfn_target.rstrip("/").rsplit("/", 1)[-1] if physfn_target else None
    return {"total_vfs": total, "num_vfs": ctx.int_attr(f"{base}/sriov_numvfs"), "physfn": physfn}


SOURCE = Source("pci", reads="/sys/bus/pci/devices: class, vendor, NUMA node and the bridges above each device",
                order=20, sysfs=True)
