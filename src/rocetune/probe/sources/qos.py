"""QoS source: the DCB state of each RoCE netdev -- trust mode, DSCP->priority map, PFC.

Read with `mlnx_qos -i IF` (MLNX_OFED / mstflint tools on ConnectX), else with iproute2's
`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF`. A netdev where neither tool
answers is simply absent (most hosts have no QoS tooling, and virtual NICs no DCB).

The outputs are read by parsers/qos_tools.py, which the roce_qos role reads the NICs with too
(its generated copy plugins/module_utils/rocetune_qos_tools.py): one reading for both.

Per netdev: {"tool", "trust" ("dscp" | "pcp" | None), "dscp_prio" {"26": 3, ...},
"pfc_enabled" [priorities with PFC on]}.
"""

from __future__ import annotations

from typing import List, Optional

from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..parsers import qos_tools


def _enabled(pfc: Optional[List[int]]) -> List[int]:
    return [p for p, on in enumerate(pfc or []) if on]


def mlnx_qos_state(text: str) -> dict:
    """`mlnx_qos -i IF` -> {trust, dscp_prio {dscp: prio}, pfc_enabled}; QosOutputError when unreadable."""
    m = qos_tools.parse_mlnx_qos(text)
    return {"trust": m["trust"], "dscp_prio": m["dscp_prio"], "pfc_enabled": _enabled(m["pfc"])}


def dcb_state(app_text: str, pfc_text: str) -> dict:
    """`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF` -> the same shape.

    A DSCP app entry is what puts mlx5 (and other dcbnl drivers) in DSCP trust, so trust is
    "dscp" when the app table has entries and unknown otherwise. A DSCP with several priorities
    maps to the first that dcb prints."""
    dscp_prio = {d: prios[0] for d, prios in qos_tools.dcb_app_dscp(app_text).items()}
    return {"trust": "dscp" if dscp_prio else None, "dscp_prio": dscp_prio,
            "pfc_enabled": _enabled(qos_tools.dcb_pfc(pfc_text))}


def _netdevs(rdma: dict) -> List[str]:
    out = set()
    for dev in (rdma or {}).get("devices", []):
        for p in dev.get("ports", []):
            nd = p.get("netdev")
            if p.get("link_layer") == "Ethernet" and nd:
                out.add(nd)
    return sorted(out)


def _one(ctx: ProbeContext, ifname: str) -> Optional[dict]:
    res = ctx.runner.run(["mlnx_qos", "-i", ifname])
    if res.ok:
        try:
            return {"tool": "mlnx_qos", **mlnx_qos_state(res.stdout)}
        except qos_tools.QosOutputError as exc:
            ctx.warn(f"{ifname}: {exc}")
            return None
    app = ctx.runner.run(["dcb", "-N", "app", "show", "dev", ifname, "dscp-prio"])
    pfc = ctx.runner.run(["dcb", "pfc", "show", "dev", ifname])
    if app.ok and pfc.ok:
        try:
            return {"tool": "dcb", **dcb_state(app.stdout, pfc.stdout)}
        except qos_tools.QosOutputError as exc:
            ctx.warn(f"{ifname}: {exc}")
    return None


def probe(ctx: ProbeContext, rdma: dict) -> dict:
    interfaces = {}
    names = _netdevs(rdma)
    start_commands(ctx.runner, [["mlnx_qos", "-i", n] for n in names])  # side by side, live
    for ifname in names:
        state = _one(ctx, ifname)
        if state is not None:
            state["dscp_prio"] = {str(d): p for d, p in sorted(state["dscp_prio"].items())}
            interfaces[ifname] = state
    return {"interfaces": interfaces}
