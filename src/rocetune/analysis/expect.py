"""A node's facts in the expectations' terms (rocetune.model.expect.NodeFacts), from its Features
and its plan: the GPUs, the rails the plan gives NCCL, the other ports an expectation or the
deployed env names (so that a port the selector dropped is still looked at), GPUDirect,
versions, whether it has a QoS plan, the variables the plan sets."""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional

from ..model.expect import NodeFacts, PortFacts
from ..model.vocab import natural_key
from .hostview import HostView
from .ports import Port


def node_facts(features: dict, plan: Any = None, *, qos_source: Optional[str] = None,
               names: Iterable[str] = (), view: Optional[HostView] = None) -> NodeFacts:
    """`plan` gives the variables and the GPUDirect route (None: neither is known); `qos_source`
    where the node's QoS plan came from (None: it has none); `names` are port or device names
    (or shell patterns) whose ports are described too, rails or not."""
    view = view or HostView(features)
    sel = view.selection()
    chosen = {p.name for p in sel.chosen}
    why_not = {p.name: why for p, why in sel.excluded}
    wanted = list(names)
    ports: List[PortFacts] = []
    for p in view.ports():
        if p.name in chosen or p.gpu_local or _named(p, wanted):
            ports.append(_port(view, p, p.name in chosen, why_not.get(p.name)))
    kernel = features.get("kernel") or {}
    driver = kernel.get("nvidia_driver") or {}
    verbs = kernel.get("libibverbs") or {}
    versions = {
        "nvidia_driver": driver.get("version"),
        "rdma_core": str(verbs["rdma_core"]) if verbs.get("rdma_core") is not None else None,
        "nccl": view.nccl_version_text(),
        "kernel": (features.get("host") or {}).get("kernel_release"),
    }
    gpus = sorted(view.gpus, key=lambda g: int(g["index"]))
    return NodeFacts(
        gpus=[g.get("name") or "" for g in gpus],
        ports=ports,
        gpus_without_rail=_gpus_without_rail(view, sel.chosen),
        gpudirect=_gpudirect(plan),
        versions=versions,
        qos_plan=qos_source,
        env=dict(plan.env) if plan is not None else {},
        rdma_known=sel.rdma_visible,
        firmware=_firmware(features, {p.device for p in sel.chosen}),
    )


def _firmware(features: dict, rail_devices: set) -> Optional[Dict[str, Any]]:
    """The Features' NVCONFIG read-back per card, with the card's RDMA devices and whether a rail
    is on it; None where neither mlxconfig nor mstconfig answered."""
    from ..core.nic_firmware_params import FirmwareError, first_function

    sec = features.get("nic_firmware")
    if not isinstance(sec, dict):
        return None
    devices: Dict[str, List[str]] = {}
    for dev in (features.get("rdma") or {}).get("devices", []):
        try:
            card = first_function(dev["pci"]) if dev.get("pci") else None
        except FirmwareError:
            card = None
        if card:
            devices.setdefault(card, []).append(dev["name"])
    cards = {}
    for bdf, read in sorted((sec.get("devices") or {}).items()):
        names = sorted(devices.get(bdf, []), key=natural_key)
        cards[bdf] = {"devices": names, "rail": any(n in rail_devices for n in names),
                      "error": read.get("error"), "params": read.get("params") or {}}
    return {"tool": sec.get("tool") or "mlxconfig", "cards": cards}


def _named(port: Port, names: List[str]) -> bool:
    from fnmatch import fnmatchcase

    return any(port.name == n or port.device == n or fnmatchcase(port.name, n) or fnmatchcase(port.device, n)
               for n in names)


def _port(view: HostView, p: Port, rail: bool, why_not: Optional[str]) -> PortFacts:
    link = (view.pci.get(p.pci or "") or {}).get("link") or {}
    device: Dict[str, Any] = next((d for d in (view.f.get("rdma") or {}).get("devices", [])
                                   if d["name"] == p.device), {})
    mtu = (p.iface or {}).get("mtu")
    return PortFacts(name=p.name, device=p.device, rail=rail, why_not=None if rail else why_not,
                     link_layer=p.link_layer, state=p.state, speed_gbps=p.rate_gbps, mtu=mtu,
                     ipv4_gid=bool(p.v4_gids), pcie_speed_gts=_gts(link.get("speed")),
                     pcie_width=link.get("width"), firmware=device.get("fw_ver"),
                     local_gpus=list(p.local_gpus))


def _gts(text: Optional[str]) -> Optional[float]:
    """`32.0 GT/s PCIe` -> 32.0 (the kernel's current_link_speed)."""
    m = re.match(r"\s*([0-9.]+)\s*GT/s", text or "")
    return float(m.group(1)) if m else None


def _gpus_without_rail(view: HostView, chosen: List[Port]) -> List[int]:
    """GPUs that no rail reaches at PIX/PXB."""
    covered = {g for p in chosen for g in p.local_gpus}
    return sorted(int(g["index"]) for g in view.gpus if int(g["index"]) not in covered)


def _gpudirect(plan: Any) -> Optional[str]:
    report = ((plan.reports if plan is not None else {}) or {}).get("gpudirect-rdma")
    if not report:
        return None
    if not report.get("available"):
        return "none"
    route = report.get("route") or ""
    return "peermem" if route.startswith("peer memory") else "dmabuf" if route == "DMA-BUF" else None


def exact_names(expected: Optional[Dict[str, Any]]) -> List[str]:
    """The ports and devices an expectations document names without a pattern."""
    entries = ((expected or {}).get("rails") or {}).get("devices") or []
    return sorted((e for e in entries if not any(c in e for c in "*?[")), key=natural_key)
