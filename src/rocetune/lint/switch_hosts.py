"""A switch's running QoS against the NIC QoS the hosts report (the switch-host-* checks of
rocetune.lint.switch_declarations): trust, PFC priorities, the RoCE DSCPs, DCQCN and the CNP class must
agree on both ends of a link. Which port faces which host is not known from the outputs, so each fabric NIC is held
against every group of switch ports; one fault of the switch is one finding, naming every host
and NIC it touches (a fleet of 128 hosts that all disagree with one port group is one line)."""

from __future__ import annotations

from typing import Dict, List, Tuple

from ..checks import finding
from ..checks.binding import emits
from ..model.finding import Finding
from ..model.qos import QosPlan
from ..model.switch_qos import SwitchIntent, SwitchQos, SwitchReading

_HOSTS_LISTED = 6


def compare_hosts(plan: QosPlan, switch: SwitchQos, hosts) -> Tuple[List[Finding], List[str]]:
    """(findings, notes) for the fabric NICs of `hosts` (fleet results.HostResult) that report QoS;
    the DSCPs compared are the ones RoCE uses: the plan's data, CNP and CTS codepoints."""
    from ..analysis.hostview import HostView

    intent = SwitchIntent.from_plan(plan)
    dscps = tuple(c.dscp for c in intent.classes)
    faults: Dict[Tuple[str, int, str], Dict[str, List[str]]] = {}
    notes: List[str] = []
    no_doctor: List[str] = []
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
            for index, group in enumerate(switch.groups):
                for check_id, message in _nic(qos, group, switch, dscps):
                    faults.setdefault((check_id, index, message), {}).setdefault(host.host, []).append(ifname)
        dcqcn = (host.features.get("qos") or {}).get("dcqcn")
        dcqcn = {k: v for k, v in dcqcn.items() if isinstance(v, dict)} if isinstance(dcqcn, dict) else {}
        for ifname in sorted(set(read) & set(dcqcn)):
            for index, group in enumerate(switch.groups):
                message = _cnp(intent, dcqcn[ifname], read[ifname].get("trust"), group, switch)
                if message:
                    faults.setdefault(("switch-host-cnp-mismatch", index, message), {}).setdefault(
                        host.host, []).append(ifname)
        off = set(_dcqcn_off_read(dcqcn, set(read), intent.data.priority))
        if host.doctor_findings is not None:
            off |= set(_dcqcn_off(host.doctor_findings, set(read)))
        elif not set(read) & set(dcqcn):
            no_doctor.append(host.host)
            continue
        for ifname in sorted(off):
            for index, group in enumerate(switch.groups):
                message = _dcqcn(intent, group, switch)
                if message:
                    faults.setdefault(("switch-host-dcqcn-mismatch", index, message), {}).setdefault(
                        host.host, []).append(ifname)
    if no_doctor:
        notes.append(f"DCQCN not compared on {len(no_doctor)} host(s) ({', '.join(no_doctor[:6])}"
                     f"{' ...' if len(no_doctor) > 6 else ''}): their results hold no doctor run and their "
                     "probe read no mlx5 ecn tree")
    out = [_finding(check_id, switch.groups[index], switch, message, touched)
           for (check_id, index, message), touched in faults.items()]
    return out, notes


def _dcqcn_off(findings: List[dict], nics) -> List[str]:
    """The fabric NICs whose doctor run found DCQCN off on the data priority (doctor-ecn-off, read
    from mlx5's /sys/class/net/IF/ecn/roce_np and roce_rp)."""
    return sorted({str(f.get("subject")) for f in findings
                   if f.get("id") == "doctor-ecn-off" and f.get("subject") in nics})


def _dcqcn_off_read(dcqcn: dict, nics, priority: int) -> List[str]:
    """The fabric NICs whose probed DCQCN (Features qos.dcqcn) has the notification or reaction
    point off for the data priority; a priority the tree does not list is not known, not off."""
    return sorted(nic for nic, state in dcqcn.items() if nic in nics and isinstance(state, dict)
                  and any((state.get(side) or {}).get(str(priority)) is False for side in ("roce_np", "roce_rp")))


def _cnp(intent: SwitchIntent, nic: dict, trust, g: SwitchReading, switch: SwitchQos) -> str:
    """The switch's side of the CNP class: the CNPs the NIC sends (its cnp_dscp, or cnp_802p_prio
    where the ports trust the VLAN priority) leave by the queue of the plan's CNP class."""
    word = switch.priority_word
    if g.trust == "pcp" or (g.trust is None and trust == "pcp"):
        value, field_name = nic.get("cnp_802p_prio"), "802.1p priority"
        prio = g.priority_of_pcp(value) if isinstance(value, int) else None
    else:
        value, field_name = nic.get("cnp_dscp"), "DSCP"
        prio = g.priority_of_dscp(value) if isinstance(value, int) else None
    if prio is None:
        return ""
    want = intent.cnp.priority
    if g.queue_of(prio) == g.queue_of(want):
        return ""
    return (f"the NICs send CNPs with {field_name} {value} (mlx5 ecn/roce_np), which the switch puts in {word} "
            f"{prio} (queue {g.queue_of(prio)}), not the CNP class ({word} {want}, queue {g.queue_of(want)}): "
            "congestion notifications wait behind the traffic they should slow, or are dropped with it")


def _dcqcn(intent: SwitchIntent, g: SwitchReading, switch: SwitchQos) -> str:
    """The switch's side of DCQCN: it marks ECN on the queue the plan's data leaves by."""
    queue = g.queue_of(intent.data.priority)
    q = g.queues.get(queue)
    if q is None or not q.ecn:
        return ""
    return (f"the switch marks ECN on queue {queue} ({switch.priority_word} {intent.data.priority}) but DCQCN is off "
            f"for priority {intent.data.priority} on the NICs (mlx5 ecn/roce_np or roce_rp enable/"
            f"{intent.data.priority}): the marks slow no sender and "
            "congestion is left to PFC pauses")


def _finding(check_id: str, group: SwitchReading, switch: SwitchQos, message: str,
             touched: Dict[str, List[str]]) -> Finding:
    nics = sum(len(v) for v in touched.values())
    hosts = sorted(touched)
    shown = "; ".join(f"{h} ({', '.join(touched[h])})" for h in hosts[:_HOSTS_LISTED])
    if len(hosts) > _HOSTS_LISTED:
        shown += f"; and {len(hosts) - _HOSTS_LISTED} more hosts"
    return finding(check_id, group.subject,
                   f"{message}: {nics} NIC{'s' if nics != 1 else ''} on {len(hosts)} host"
                   f"{'s' if len(hosts) != 1 else ''}: {shown}",
                   evidence={"switch": switch.source, "ports": list(group.ports), "hosts": touched})


@emits("switch-host-trust-mismatch", "switch-host-pfc-mismatch", "switch-host-dscp-mismatch",
       "switch-host-dcqcn-mismatch", "switch-host-cnp-mismatch")
def _nic(qos: dict, g: SwitchReading, switch: SwitchQos, dscps: Tuple[int, ...]) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []

    def add(check_id: str, message: str) -> None:
        out.append((check_id, message))

    trust = qos.get("trust")
    if trust and g.trust and g.trust != "both" and trust != g.trust:
        add("switch-host-trust-mismatch", f"the NICs trust {trust}, the switch ports trust {g.trust}")
    host_pfc = qos.get("pfc_enabled")
    if isinstance(host_pfc, list) and g.pfc is not None and set(host_pfc) != set(g.pfc):
        only_host = sorted(set(host_pfc) - set(g.pfc))
        only_switch = sorted(set(g.pfc) - set(host_pfc))
        parts = ([f"only the NIC on {_list(only_host)}"] if only_host else []) + \
                ([f"only the switch on {_list(only_switch)}"] if only_switch else [])
        add("switch-host-pfc-mismatch", "PFC differs: " + "; ".join(parts))
    dscp_prio = qos.get("dscp_prio") or {}
    if trust == "dscp":
        differ = []
        for d in dscps:
            switch_prio = g.priority_of_dscp(d) if d in g.dscp_to_priority else None
            if str(d) in dscp_prio and switch_prio is not None and switch_prio != dscp_prio[str(d)]:
                differ.append(f"DSCP {d}: NIC priority {dscp_prio[str(d)]}, "
                              f"switch {switch.priority_word} {switch_prio}")
        if differ:
            add("switch-host-dscp-mismatch",
                "RoCE's DSCPs land in other priorities on the switch: " + "; ".join(differ))
    return out


def _list(values) -> str:
    return ",".join(str(v) for v in values)
