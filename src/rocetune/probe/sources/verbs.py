"""Verbs source: RDMA ports as libibverbs sees them (pyverbs live, a recorded ibv_devinfo otherwise)."""

from __future__ import annotations

from typing import List, Optional

from ...errors import ParseError
from ...hostfs.context import ProbeContext
from ..parsers.ibv_devinfo import parse_ibv_devinfo
from ..source import Source

IBV_DEVINFO_ARGV = ["ibv_devinfo"]
_MTU_ENUM = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
_PORT_STATES = {0: "PORT_NOP", 1: "PORT_DOWN", 2: "PORT_INIT", 3: "PORT_ARMED", 4: "PORT_ACTIVE",
                5: "PORT_ACTIVE_DEFER"}
_LINK_LAYERS = {0: "Unspecified", 1: "InfiniBand", 2: "Ethernet"}


def _from_pyverbs(ctx: ProbeContext) -> Optional[List[dict]]:
    try:
        from pyverbs import device as pvd
    except Exception as exc:  # ImportError, or a library that does not match the kernel's
        ctx.status.ok = False
        ctx.status.reason = f"pyverbs not importable ({type(exc).__name__}: {exc}); install python3-pyverbs"
        return None
    try:
        dev_list = pvd.get_device_list()
    except Exception as exc:  # pyverbs raises, not returns [], on kernels without RDMA
        ctx.status.ok = False
        ctx.status.reason = f"pyverbs cannot list devices: {exc}"
        return None
    return devices_from_verbs(ctx, dev_list, pvd.Context)


def devices_from_verbs(ctx: ProbeContext, dev_list, context_cls) -> List[dict]:
    """Port facts from pyverbs device objects (or anything with the same attributes)."""
    devices = []
    for d in dev_list:
        name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
        try:
            with context_cls(name=name) as c:
                attr = c.query_device()
                ports = []
                for p in range(1, attr.phys_port_cnt + 1):
                    pa = c.query_port(p)
                    ports.append({
                        "port": p,
                        "state": _PORT_STATES.get(pa.state, str(pa.state)),
                        "link_layer": _LINK_LAYERS.get(pa.link_layer, str(pa.link_layer)),
                        "active_mtu": _MTU_ENUM.get(pa.active_mtu),
                        "max_mtu": _MTU_ENUM.get(pa.max_mtu),
                    })
        except Exception as exc:
            ctx.warn(f"verbs: cannot query {name}: {exc}")
            continue
        devices.append({"name": name, "ports": ports})
    return devices


def _from_ibv_devinfo(ctx: ProbeContext) -> Optional[List[dict]]:
    result = ctx.runner.run(IBV_DEVINFO_ARGV)
    if not result.found:
        ctx.status.ok = False
        ctx.status.reason = "ibv_devinfo not available" if ctx.root.is_live else "no ibv_devinfo output recorded"
        return None
    try:
        parsed, warnings = parse_ibv_devinfo(result.stdout + result.stderr)
    except ParseError as exc:
        ctx.status.ok = False
        ctx.status.reason = exc.message
        return None
    for w in warnings:
        ctx.warn(f"ibv_devinfo: {w}")
    return [{"name": d["name"],
             "ports": [{k: p.get(k) for k in ("port", "state", "link_layer", "active_mtu", "max_mtu")}
                       for p in d["ports"]]}
            for d in parsed]


def _short_state(state: Optional[str]) -> Optional[str]:
    return state[5:] if state and state.startswith("PORT_") else state


def compare(verbs_devices: List[dict], rdma: dict) -> List[str]:
    """Where libibverbs and sysfs disagree about devices, port state or link layer."""
    problems = []
    sysfs = {d["name"]: {p["port"]: p for p in d["ports"]} for d in rdma.get("devices", [])}
    seen = set()
    for d in verbs_devices:
        seen.add(d["name"])
        if d["name"] not in sysfs:
            problems.append(f"{d['name']}: seen by verbs but not in /sys/class/infiniband")
            continue
        for p in d["ports"]:
            s = sysfs[d["name"]].get(p["port"])
            if s is None:
                problems.append(f"{d['name']}:{p['port']}: port missing in sysfs")
                continue
            if s["state"] and _short_state(p["state"]) != s["state"]:
                problems.append(f"{d['name']}:{p['port']}: state {p['state']} (verbs) vs {s['state']} (sysfs)")
            if s["link_layer"] and p["link_layer"] and p["link_layer"] != s["link_layer"]:
                problems.append(f"{d['name']}:{p['port']}: link layer {p['link_layer']} (verbs) "
                                f"vs {s['link_layer']} (sysfs)")
            if s.get("roce_mtu") and p.get("active_mtu") and p["active_mtu"] != s["roce_mtu"]:
                problems.append(f"{d['name']}:{p['port']}: active MTU {p['active_mtu']} (verbs) vs "
                                f"{s['roce_mtu']} derived from {s['netdev']} MTU {s['netdev_mtu']}")
    for name in sorted(set(sysfs) - seen):
        problems.append(f"{name}: in sysfs but not seen by verbs")
    return problems


def probe(ctx: ProbeContext, rdma: dict) -> dict:
    if rdma.get("from_tools"):
        ctx.status.reason = f"nothing to cross-check: RDMA devices came from '{rdma['from_tools']}'"
        return {"via": None, "devices": [], "disagreements": []}
    devices, via = None, None
    if ctx.root.is_live:
        devices, via = _from_pyverbs(ctx), "pyverbs"
    if devices is None:
        pyverbs_reason = ctx.status.reason
        ctx.status.ok, ctx.status.reason = True, None
        devices, via = _from_ibv_devinfo(ctx), "ibv_devinfo"
        if pyverbs_reason and devices is not None:
            ctx.warn(f"{pyverbs_reason}; used ibv_devinfo instead")
        elif pyverbs_reason:
            ctx.status.reason = f"{pyverbs_reason}; {ctx.status.reason}"
    if not devices:
        if not rdma.get("devices"):
            # Nothing to cross-check: failing to open verbs is what a host without RDMA does.
            ctx.status.ok, ctx.status.warnings = True, []
            ctx.status.reason = "no RDMA devices to query"
            return {"via": None, "devices": [], "disagreements": []}
        if devices is None:
            return {"via": None, "devices": [], "disagreements": []}
    devices = sorted(devices, key=lambda d: d["name"])
    return {"via": via, "devices": devices, "disagreements": compare(devices, rdma)}


SOURCE = Source("verbs", reads="pyverbs on a live host, a recorded `ibv_devinfo` elsewhere",
                needs=("rdma",), order=60)
