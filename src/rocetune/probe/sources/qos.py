"""QoS source: the DCB state of each RoCE netdev -- trust mode, DSCP->priority map, PFC.

Read with `mlnx_qos -i IF` (MLNX_OFED / mstflint tools on ConnectX), else with iproute2's
`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF`. A netdev where neither tool
answers is simply absent (most hosts have no QoS tooling, and virtual NICs no DCB).

The outputs are read by core/qos_tool_outputs.py, which the roce_qos role reads the NICs with too
(its generated copy plugins/module_utils/rocetune_qos_tools.py): one reading for both.

Per netdev: {"tool", "trust" ("dscp" | "pcp" | None), "dscp_prio" {"26": 3, ...},
"pfc_enabled" [priorities with PFC on]}.

Beside them, `dcqcn`: per netdev, DCQCN as MLNX_OFED / DOCA-OFED's mlx5 exposes it under
/sys/class/net/IF/ecn (the inbox driver has no such tree, so the key is absent there):
{"roce_np": {"3": true, ...}, "roce_rp": {...}, "cnp_dscp": 48, "cnp_802p_prio": 6}, the
notification point (the receiver that turns ECN marks into CNPs) and reaction point (the sender
that cuts its rate) per priority, and the DSCP and 802.1p priority the NIC sends its CNPs with.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ...core import qos_tool_outputs
from ...hostfs.context import ProbeContext
from ...hostfs.runners import start_commands
from ..source import Source


def _enabled(pfc: Optional[List[int]]) -> List[int]:
    return [p for p, on in enumerate(pfc or []) if on]


def mlnx_qos_state(text: str) -> dict:
    """`mlnx_qos -i IF` -> {trust, dscp_prio {dscp: prio}, pfc_enabled}; QosOutputError when unreadable."""
    m = qos_tool_outputs.parse_mlnx_qos(text)
    return {"trust": m["trust"], "dscp_prio": m["dscp_prio"], "pfc_enabled": _enabled(m["pfc"])}


def dcb_state(app_text: str, pfc_text: str) -> dict:
    """`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF` -> the same shape.

    A DSCP app entry is what puts mlx5 (and other dcbnl drivers) in DSCP trust, so trust is
    "dscp" when the app table has entries and unknown otherwise. A DSCP with several priorities
    maps to the first that dcb prints."""
    dscp_prio = {d: prios[0] for d, prios in qos_tool_outputs.dcb_app_dscp(app_text).items()}
    return {"trust": "dscp" if dscp_prio else None, "dscp_prio": dscp_prio,
            "pfc_enabled": _enabled(qos_tool_outputs.dcb_pfc(pfc_text))}


ECN_SIDES = ("roce_np", "roce_rp")


def ecn_enables(ctx: ProbeContext, netdev: str) -> Optional[Dict[str, Dict[int, bool]]]:
    """DCQCN per priority from mlx5's /sys/class/net/IF/ecn/roce_{np,rp}/enable/N ({side: {prio:
    on}}); None without the tree. The one reader of these files (doctor reads through it)."""
    base = f"/sys/class/net/{netdev}/ecn"
    if not ctx.root.is_dir(base):
        return None
    out: Dict[str, Dict[int, bool]] = {}
    for side in ECN_SIDES:
        values = {}
        for name in ctx.root.listdir(f"{base}/{side}/enable"):
            if name.isdigit() and int(name) < 8:
                value = ctx.attr(f"{base}/{side}/enable/{name}")
                if value in ("0", "1"):
                    values[int(name)] = value == "1"
        out[side] = values
    return out


def _number(text: Optional[str], top: int) -> Optional[int]:
    """A sysfs number in 0..top; None when absent or anything else (not read, not bad)."""
    if text is None or not text.isdigit() or len(text) > 3 or int(text) > top:
        return None
    return int(text)


def dcqcn_state(ctx: ProbeContext, netdev: str) -> Optional[dict]:
    """The netdev's `dcqcn` entry (see the module's doc); None without mlx5's ecn tree."""
    enables = ecn_enables(ctx, netdev)
    if enables is None:
        return None
    base = f"/sys/class/net/{netdev}/ecn/roce_np"
    out: dict = {side: {str(p): on for p, on in sorted(enables[side].items())} for side in ECN_SIDES}
    out["cnp_dscp"] = _number(ctx.attr(f"{base}/cnp_dscp"), 63)
    out["cnp_802p_prio"] = _number(ctx.attr(f"{base}/cnp_802p_prio"), 7)
    return out


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
        except qos_tool_outputs.QosOutputError as exc:
            ctx.warn(f"{ifname}: {exc}")
            return None
    app = ctx.runner.run(["dcb", "-N", "app", "show", "dev", ifname, "dscp-prio"])
    pfc = ctx.runner.run(["dcb", "pfc", "show", "dev", ifname])
    if app.ok and pfc.ok:
        try:
            return {"tool": "dcb", **dcb_state(app.stdout, pfc.stdout)}
        except qos_tool_outputs.QosOutputError as exc:
            ctx.warn(f"{ifname}: {exc}")
    return None


def probe(ctx: ProbeContext, rdma: dict) -> dict:
    interfaces = {}
    dcqcn = {}
    names = _netdevs(rdma)
    start_commands(ctx.runner, [["mlnx_qos", "-i", n] for n in names])  # side by side, live
    for ifname in names:
        state = _one(ctx, ifname)
        if state is not None:
            state["dscp_prio"] = {str(d): p for d, p in sorted(state["dscp_prio"].items())}
            interfaces[ifname] = state
        ecn = dcqcn_state(ctx, ifname)
        if ecn is not None:
            dcqcn[ifname] = ecn
    return {"interfaces": interfaces, **({"dcqcn": dcqcn} if dcqcn else {})}


SOURCE = Source("qos", reads="`mlnx_qos -i IF`, else `dcb` (app, pfc), per RoCE netdev; DCQCN under /sys/class/net",
                needs=("rdma",), order=90)
