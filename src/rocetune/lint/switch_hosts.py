"""A switch's running QoS against the NIC QoS the hosts report (the switch-host-* checks of
rocetune.checks.switch): trust, PFC priorities and the lossless DSCPs must agree on both ends of
a link. Which port faces which host is not known from the outputs, so each fabric NIC is held
against every group of switch ports; a switch with one QoS for all ports (the usual case) gives
one comparison per NIC."""

from __future__ import annotations

from typing import List, Tuple

from ..checks import finding
from ..model.finding import Finding
from ..model.qos import QosPlan
from ..model.switch_qos import SwitchQos, SwitchReading


def compare_hosts(plan: QosPlan, switch: SwitchQos, hosts) -> Tuple[List[Finding], List[str]]:
    """(findings, notes) for the fabric NICs of `hosts` (fleet results.HostResult) that report QoS;
    the DSCPs compared are the ones RoCE uses: the plan's data and CNP codepoints."""
    from ..analysis.hostview import HostView

    out: List[Finding] = []
    notes: List[str] = []
    for host in hosts:
        if not host.ok:
            notes.append(f"{host.host}: not compared ({host.error})")
            continue
        fabric = {p.netdev for p in HostView(host.features).selection().chosen if p.netdev}
        nics = ((host.features.get("qos") or {}).get("interfaces") or {})
        read = {name: q for name, q in sorted(nics.items()) if name in fabric and isinstance(q, dict)}
        if not read:
            notes.append(f"{host.host}: no NIC QoS read on its fabric NICs (no mlnx_qos or dcb output)")
            continue
        for ifname, qos in read.items():
            for group in switch.groups:
                out += _nic(f"{host.host} {ifname} / {group.subject}", qos, group, switch,
                            (plan.data.dscp, plan.cnp.dscp))
    return out, notes


def _nic(subject: str, qos: dict, g: SwitchReading, switch: SwitchQos, dscps: Tuple[int, ...]) -> List[Finding]:
    ev = {"switch": switch.source, "host_nic": {k: qos.get(k) for k in ("trust", "pfc_enabled", "tool")}}
    out: List[Finding] = []
    trust = qos.get("trust")
    if trust and g.trust and g.trust != "both" and trust != g.trust:
        out.append(finding("switch-host-trust-mismatch", subject,
                           f"the NIC trusts {trust}, the switch ports trust {g.trust}", evidence=ev))
    host_pfc = qos.get("pfc_enabled")
    if isinstance(host_pfc, list) and g.pfc is not None and set(host_pfc) != set(g.pfc):
        only_host = sorted(set(host_pfc) - set(g.pfc))
        only_switch = sorted(set(g.pfc) - set(host_pfc))
        parts = ([f"only the NIC on {_list(only_host)}"] if only_host else []) + \
                ([f"only the switch on {_list(only_switch)}"] if only_switch else [])
        out.append(finding("switch-host-pfc-mismatch", subject, "PFC differs: " + "; ".join(parts), evidence=ev))
    dscp_prio = qos.get("dscp_prio") or {}
    if trust == "dscp":
        differ = [f"DSCP {d}: NIC priority {dscp_prio[str(d)]}, switch class {g.dscp_to_tc[d]}"
                  for d in dscps if str(d) in dscp_prio and d in g.dscp_to_tc and g.dscp_to_tc[d] != dscp_prio[str(d)]]
        if differ:
            out.append(finding("switch-host-dscp-mismatch", subject,
                               "RoCE's DSCPs land in other classes on the switch: " + "; ".join(differ), evidence=ev))
    return out


def _list(values) -> str:
    return ",".join(str(v) for v in values)
