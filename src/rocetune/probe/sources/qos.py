"""QoS source: the DCB state of each RoCE netdev -- trust mode, DSCP->priority map, PFC.

Read with `mlnx_qos -i IF` (MLNX_OFED / mstflint tools on ConnectX), else with iproute2's
`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF`. A netdev where neither tool
answers is simply absent (most hosts have no QoS tooling, and virtual NICs no DCB).

The readers below follow the same output grammar as the roce_qos role's
plugins/module_utils/roce_qos_state.py (parse_mlnx_qos, dcb_app_dscp, dcb_pfc), which
configures the NICs from the QoS plan: change both together. The probe does not import the
role's code (the agent runs without the roles), so the two are kept consistent by hand and by
the shared recorded outputs in tests/fixtures/qos/.

Per netdev: {"tool", "trust" ("dscp" | "pcp" | None), "dscp_prio" {"26": 3, ...},
"pfc_enabled" [priorities with PFC on]}.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from ...hostfs import ProbeContext, start_commands


class QosParseError(ValueError):
    pass


def parse_mlnx_qos(text: str) -> dict:
    """`mlnx_qos -i IF` -> {trust, dscp_prio, pfc_enabled}."""
    trust: Optional[str] = None
    dscp_prio: Dict[int, int] = {}
    pfc: Optional[List[int]] = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"Priority trust (?:state|mode):\s*(\w+)", line)
        if m:
            trust = m.group(1).lower()
            continue
        m = re.match(r"prio:(\d)\s+dscp:([\d,]+)", line)
        if m:
            for d in filter(None, m.group(2).split(",")):
                dscp_prio[int(d)] = int(m.group(1))
            continue
        if line.startswith("enabled") and pfc is None:
            vals = line.split()[1:]
            if len(vals) == 8 and all(v in ("0", "1") for v in vals):
                pfc = [int(v) for v in vals]
    if trust is None:
        raise QosParseError("mlnx_qos: no 'Priority trust state' line in its output")
    return {"trust": trust, "dscp_prio": dscp_prio,
            "pfc_enabled": [p for p, on in enumerate(pfc or []) if on]}


def parse_dcb(app_text: str, pfc_text: str) -> dict:
    """`dcb -N app show dev IF dscp-prio` and `dcb pfc show dev IF` -> the same shape.

    A DSCP app entry is what puts mlx5 (and other dcbnl drivers) in DSCP trust, so trust is
    "dscp" when the app table has entries and unknown otherwise."""
    dscp_prio: Dict[int, int] = {}
    for line in (app_text or "").splitlines():
        words = line.split()
        if not words or words[0] != "dscp-prio":
            continue
        for word in words[1:]:
            d, _, p = word.partition(":")
            if not d.isdigit() or not p.isdigit():
                raise QosParseError(f"dcb app: unexpected entry {word!r} (dcb needs -N for numeric DSCPs)")
            dscp_prio.setdefault(int(d), int(p))  # several priorities per DSCP: the first
    enabled: List[int] = []
    for line in (pfc_text or "").splitlines():
        words = line.split()
        if words and words[0] == "prio-pfc":
            for word in words[1:]:
                p, _, state = word.partition(":")
                if p.isdigit() and state == "on":
                    enabled.append(int(p))
    return {"trust": "dscp" if dscp_prio else None, "dscp_prio": dscp_prio, "pfc_enabled": sorted(enabled)}


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
            return {"tool": "mlnx_qos", **parse_mlnx_qos(res.stdout)}
        except QosParseError as exc:
            ctx.warn(f"{ifname}: {exc}")
            return None
    app = ctx.runner.run(["dcb", "-N", "app", "show", "dev", ifname, "dscp-prio"])
    pfc = ctx.runner.run(["dcb", "pfc", "show", "dev", ifname])
    if app.ok and pfc.ok:
        try:
            return {"tool": "dcb", **parse_dcb(app.stdout, pfc.stdout)}
        except QosParseError as exc:
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
