"""Doctor's checks: one function per check, each declared with its id, what it reads, the fix
and the source it rests on. A check returns findings (nothing when the node is right) and says
"not checked" (info) when the node lacks what it would read, never a silent pass.

The host's own findings (probe) and the plan's (rules) are added by report.py; these are the
checks only a node-side look at the running state can make.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..analysis.ports import Port
from ..checks import emits
from ..core import pcie_p2p as p2p
from ..model.finding import Finding
from .base import CHECKS, DoctorInput, Run, _finding, check  # noqa: F401  (DoctorInput, Run: this module's face)


def _compute_ports(d: DoctorInput) -> List[Port]:
    return list(d.view.selection().chosen)


def _named(d: DoctorInput, port: Port) -> bool:
    return port.name in d.named or port.device in d.named


def _rail_ports(d: DoctorInput) -> List[Port]:
    """The plan's compute ports and every port the expectations or the deployed env name: a
    rail the node as it is now would leave out is still a rail."""
    chosen = {p.name for p in _compute_ports(d)}
    return [p for p in d.view.ports() if p.name in chosen or _named(d, p)]


def _whose(d: DoctorInput, port: Port) -> str:
    return "" if port in _compute_ports(d) else " (a rail the expectations or the deployed env name)"


@check("doctor-port-down")
def port_down(d: DoctorInput) -> List[Finding]:
    return [_finding("doctor-port-down", "error", p.name,
                     f"{p.name} ({p.netdev or 'no netdev'}) is {p.state}, not ACTIVE{_whose(d, p)}: NCCL "
                     "will not use it and the job loses a rail",
                     {f"/sys/class/infiniband/{p.device}/ports/{p.port}/state": p.state})
            for p in d.view.ports() if p.state not in (None, "ACTIVE") and (_is_rail(d, p) or _named(d, p))]


def _is_rail(d: DoctorInput, port: Port) -> bool:
    """A port the plan would use were it up: not the front end, not software, not an SR-IOV VF
    (idle VFs are down by design), not an unaddressed RoCE port (a spare port of a NIC), of the
    chosen ports' link layer."""
    if port.function == "software" or d.view.frontend_reason(port) is not None:
        return False
    if port.is_roce and port.iface is not None and not any(
            not a["address"].startswith("fe80:") for a in port.iface.get("addresses") or []):
        return False
    pci = next((x for x in d.features["pci"]["devices"] if x["bdf"] == port.pci), None)
    if pci and (pci.get("sriov") or {}).get("physfn"):
        return False
    layers = {c.link_layer for c in _compute_ports(d)}
    return not layers or port.link_layer in layers


@check("doctor-no-ipv4-roce-gid")
def no_ipv4_gid(d: DoctorInput) -> List[Finding]:
    return [_finding("doctor-no-ipv4-roce-gid", "error", p.name,
                     f"{p.name} ({p.netdev}) has no IPv4 RoCE v2 GID{_whose(d, p)}: NCCL finds no GID to "
                     "use on it", {"roce_v2_ipv4_gids": [], "roce_v2_ipv6_gids": p.v6_gids})
            for p in _rail_ports(d) if p.is_roce and p.state == "ACTIVE"
            and not p.v4_gids and not p.types_unreadable]


@check("doctor-rail-mtu-mismatch")
def rail_mtu(d: DoctorInput) -> List[Finding]:
    mtus: Dict[str, int] = {}
    for p in _rail_ports(d):
        if p.is_roce and p.netdev and p.iface and p.iface.get("mtu"):
            mtus[p.netdev] = p.iface["mtu"]
    if len(set(mtus.values())) < 2:
        return []
    common = max(set(mtus.values()), key=lambda m: (list(mtus.values()).count(m), m))
    return [_finding("doctor-rail-mtu-mismatch", "error", netdev,
                     f"{netdev} has MTU {mtu}, the other rails {common}: NCCL sets each connection's QP "
                     "MTU to the smaller port's active MTU, so RoCE over this rail carries "
                     f"{_roce_packet(mtu)} packets where the others carry {_roce_packet(common)}",
                     {f"/sys/class/net/{n}/mtu": m for n, m in sorted(mtus.items())})
            for netdev, mtu in sorted(mtus.items()) if mtu != common]


def _roce_packet(netdev_mtu: int) -> str:
    """The RoCE MTU the kernel derives from a netdev MTU (iboe_get_mtu: the largest IB MTU that
    fits under it less 96 bytes of headers), as packet size text."""
    room = netdev_mtu - 96
    fits = [m for m in (4096, 2048, 1024, 512, 256) if room >= m]
    return f"{fits[0]}-byte" if fits else "no RoCE"


def _unlimited(value: Optional[str]) -> bool:
    return value is not None and value.lower() in ("unlimited", "infinity", "-1")


@check("doctor-memlock-services")
def memlock_services(d: DoctorInput) -> List[Finding]:
    if not _compute_ports(d):
        return []
    m = d.readings["memlock"]
    if _unlimited(m["systemd_default"]):
        return []
    if not m.get("systemd_seen", True):
        return [_finding("doctor-memlock-services", "info", "host",
                         "not checked: no /etc/systemd/system.conf or system.conf.d/ under this root")]
    where = f"DefaultLimitMEMLOCK={m['systemd_default']} in {m['systemd_file']}" if m["systemd_default"] \
        else "no DefaultLimitMEMLOCK set (systemd's default, 8 MiB since systemd 253)"
    return [_finding("doctor-memlock-services", "warning", "host",
                     f"{where}: jobs that a service starts (slurmd, containerd, kubelet) cannot pin "
                     "their RDMA buffers", {"DefaultLimitMEMLOCK": m["systemd_default"], "file": m["systemd_file"]})]


@check("doctor-memlock-logins")
def memlock_logins(d: DoctorInput) -> List[Finding]:
    if not _compute_ports(d):
        return []
    if not d.readings["memlock"].get("limits_seen", True):
        return [_finding("doctor-memlock-logins", "info", "host",
                         "not checked: no /etc/security/limits.conf or limits.d/ under this root")]
    limits = d.readings["memlock"]["limits"]
    short = [k for k in ("soft", "hard") if not _unlimited(limits[k])]
    if not short:
        return []
    text = ", ".join(f"{k} {limits[k] or 'not set'}" for k in short)
    return [_finding("doctor-memlock-logins", "warning", "host",
                     f"memlock for logins (ssh, mpirun over ssh): {text}, not unlimited",
                     {"limits": dict(limits), "files": dict(d.readings["memlock"].get("limits_files") or {})})]


@check("doctor-iommu-translated")
def iommu(d: DoctorInput) -> List[Finding]:
    kernel = d.features["kernel"]
    cmd = kernel.get("cmdline") or {}
    groups = kernel.get("iommu_groups") or 0
    if d.features["host"]["virtualization"].get("hypervisor") or groups == 0:
        return []  # a guest's IOMMU is the hypervisor's business
    if cmd.get("iommu") == "pt" or "off" in (cmd.get("intel_iommu"), cmd.get("amd_iommu")):
        return []
    return [_finding("doctor-iommu-translated", "warning", "host",
                     f"the IOMMU is on ({groups} IOMMU groups) without iommu=pt: every GPUDirect "
                     "and peer-to-peer DMA is remapped", {"/proc/cmdline": cmd, "iommu_groups": groups})]


def _ancestors(by_bdf: Dict[str, dict], bdf: str) -> List[str]:
    out, seen = [], set()
    parent = by_bdf.get(bdf, {}).get("parent")
    while parent and parent not in seen:
        seen.add(parent)
        out.append(parent)
        parent = by_bdf.get(parent, {}).get("parent")
    return out


@check("doctor-acs-redirect")
def acs_redirect(d: DoctorInput) -> List[Finding]:
    """The bridges between each GPU and the rails it reaches at PIX/PXB (the pairs the pcie_p2p
    role clears between), and those the role's unit is told to hold, with the redirect bits off:
    one reader and one bit set with the role (core.pcie_p2p)."""
    controls = {bdf: tuple(v) if isinstance(v, list) else v for bdf, v in (d.readings.get("acs") or {}).items()}
    role = d.readings.get("pcie_p2p") or {}
    unit = role.get("acs")
    by_bdf = {x["bdf"]: x for x in d.features["pci"]["devices"]}
    rails = {p.device: p.pci for p in _rail_ports(d) if p.pci}
    names = {str(g.get("bdf")): f"GPU{g['index']}" for g in d.features["gpus"] if g.get("bdf")}
    names.update({pci: device for device, pci in rails.items()})

    def parents(bdf: str) -> List[str]:
        return _ancestors(by_bdf, bdf)

    if role.get("error"):
        return [_finding("doctor-acs-redirect", "info", "host", f"not checked: {role['error']}")]
    try:
        held = p2p.targets((), parents, "gpu_nic", (), p2p.gpu_nic_pairs(d.features, rails))
        if unit:
            scope_all = sorted(controls) if unit["scope"] == "all" else ()
            for bdf, why in p2p.targets(scope_all, parents, unit["scope"], unit["devices"], unit["pairs"]).items():
                held.setdefault(bdf, []).extend(why)
        steps, unreadable = p2p.steps(held, controls)
    except p2p.P2PError as exc:
        return [_finding("doctor-acs-redirect", "info", "host", f"not checked: {exc}")]
    again = " although rocetune-pcie-p2p clears it at boot" if unit else ""
    out = []
    for step in steps:
        on = p2p.redirect_on(step["before"])
        if on:
            between = ", ".join("-".join(names.get(b, b) for b in why.split("-", 1)) if "-" in why else why
                                for why in step["why"])
            out.append(_finding("doctor-acs-redirect", "error", step["bdf"],
                                f"PCI bridge {step['bdf']} has ACS redirect on ({' '.join(n + '+' for n in on)}) "
                                f"for {between}{again}: GPUDirect RDMA goes through the root complex",
                                {"ACS Control": p2p.flags(step["before"]), "offset": hex(step["offset"])}))
    if unreadable:
        out.append(_finding("doctor-acs-redirect", "info", "host",
                            "not checked: the extended configuration space of " + ", ".join(unreadable)
                            + " cannot be read (run doctor as root)"))
    return out


def _qos_ports(d: DoctorInput) -> List[str]:
    return _qos_ports_of(_rail_ports(d))


@check("doctor-qos-mismatch")
def qos_mismatch(d: DoctorInput) -> List[Finding]:
    if d.qos is None:
        if not _qos_ports(d):
            return []
        return [_finding("doctor-qos-mismatch", "info", "qos",
                         "not checked: no QoS plan (/etc/rocetune/qos.yml under the root, or --qos): the "
                         "rails' PFC, DSCP trust, global pause and ECN are held to no plan (only to each "
                         "other, doctor-rail-qos-mismatch)", {"not_checked": "QoS (no QoS plan)"})]
    out = []
    seen = d.features["qos"]["interfaces"]
    plan = d.qos
    for netdev in _qos_ports(d):
        state = seen.get(netdev)
        if state is None:
            out.append(_finding("doctor-qos-mismatch", "info", netdev,
                                f"not checked on {netdev}: neither mlnx_qos nor dcb reported its QoS"))
            continue
        problems = []
        if state.get("trust") and state["trust"] != plan.trust:
            problems.append(f"trust {state['trust']} (plan: {plan.trust})")
        pfc = set(state.get("pfc_enabled") or [])
        missing = [p for p in plan.lossless_priorities if p not in pfc]
        if missing:
            problems.append(f"PFC off on priority {','.join(map(str, missing))} (plan: lossless "
                            f"{','.join(map(str, plan.lossless_priorities))})")
        extra = sorted(pfc - set(plan.lossless_priorities))
        if extra:
            problems.append(f"PFC on priority {','.join(map(str, extra))}, which the plan keeps lossy")
        mapped = (state.get("dscp_prio") or {}).get(str(plan.data.dscp))
        if plan.trust == "dscp" and state.get("dscp_prio") and mapped != plan.data.priority:
            problems.append(f"DSCP {plan.data.dscp} -> priority {mapped} (plan: {plan.data.priority})")
        if problems:
            out.append(_finding("doctor-qos-mismatch", "error", netdev,
                                f"{netdev} QoS differs from the plan ({plan.source}): " + "; ".join(problems),
                                {state.get("tool") or "qos": {k: state.get(k) for k in ("trust", "pfc_enabled")}}))
    return out


@check("doctor-rail-qos-mismatch")
def rail_qos(d: DoctorInput) -> List[Finding]:
    """The rails against each other, plan or no plan: one rail with PFC off (or another trust or
    DSCP map) makes the traffic class that suits the others wrong for it."""
    seen = d.features["qos"]["interfaces"]
    states = {n: seen[n] for n in _qos_ports_of(_rail_ports(d)) if seen.get(n)}
    if len(states) < 2:
        return []

    def shape(s: dict) -> tuple:
        return (s.get("trust"), tuple(sorted(s.get("pfc_enabled") or [])),
                tuple(sorted((s.get("dscp_prio") or {}).items())))

    shapes = {n: shape(s) for n, s in states.items()}
    values = list(shapes.values())
    common = max(set(values), key=lambda v: (values.count(v), v[1], str(v)))
    if values.count(common) * 2 <= len(values):
        return [_finding("doctor-rail-qos-mismatch", "error", "rails",
                         "the rails' NIC QoS differs with no majority: " + "; ".join(
                             f"{n}: {_qos_text(states[n])}" for n in sorted(states)),
                         {n: _qos_evidence(states[n]) for n in sorted(states)})]
    ref = next(n for n in sorted(states) if shapes[n] == common)
    return [_finding("doctor-rail-qos-mismatch", "error", n,
                     f"{n} has {_qos_text(states[n], states[ref])}, the other rails {_qos_text(states[ref])}: "
                     "a traffic class that is lossless on them is lossy here, and a re-derived env drops NCCL_IB_TC "
                     "on every rail", {n: _qos_evidence(states[n]), ref: _qos_evidence(states[ref])})
            for n in sorted(states) if shapes[n] != common]


def _qos_text(s: dict, other: Optional[dict] = None) -> str:
    pfc = s.get("pfc_enabled") or []
    text = f"trust {s.get('trust') or '?'}, PFC on {','.join(map(str, pfc)) if pfc else 'no priority'}"
    if other is not None and (s.get("dscp_prio") or {}) != (other.get("dscp_prio") or {}):
        text += ", another DSCP-to-priority map"
    return text


def _qos_evidence(s: dict) -> dict:
    return {"tool": s.get("tool"), "trust": s.get("trust"), "pfc_enabled": s.get("pfc_enabled")}


def _qos_ports_of(ports: List[Port]) -> List[str]:
    return sorted({p.netdev for p in ports if p.is_roce and p.netdev})


@check("doctor-global-pause")
def global_pause(d: DoctorInput) -> List[Finding]:
    if d.qos is None or not d.qos.lossless_priorities:
        return []
    out = []
    for netdev in _qos_ports(d):
        state = d.readings["pause"].get(netdev)
        if state and (state.get("rx") or state.get("tx")):
            on = "/".join(k.upper() for k in ("rx", "tx") if state.get(k))
            out.append(_finding("doctor-global-pause", "error", netdev,
                                f"global pause is on ({on}) on {netdev}, which the plan makes lossless with PFC",
                                {f"ethtool -a {netdev}": state}))
    return out


@check("doctor-ecn-off")
def ecn_off(d: DoctorInput) -> List[Finding]:
    if d.qos is None:
        return []
    out = []
    prio = d.qos.data.priority
    for netdev in _qos_ports(d):
        ecn = d.readings["ecn"].get(netdev)
        if not ecn:
            continue
        off = [side for side in ("roce_np", "roce_rp") if ecn.get(side, {}).get(prio) is False]
        if off:
            out.append(_finding("doctor-ecn-off", "warning", netdev,
                                f"ECN {' and '.join(off)} is off for priority {prio} on {netdev}: "
                                "congestion is met with PFC pauses alone",
                                {f"/sys/class/net/{netdev}/ecn/{side}/enable/{prio}": "0" for side in off}))
    return out


@check("doctor-env-drift")
def env_drift(d: DoctorInput) -> List[Finding]:
    from ..envfiles.changes import MANAGED_MARKER, env_changes
    from .readings import ENV_FILES

    out = []
    for fmt, text in sorted(d.readings["env_files"].items()):
        if text is None or fmt not in d.planned:
            continue
        if not text.startswith(MANAGED_MARKER):
            out.append(_finding("doctor-env-drift", "info", ENV_FILES[fmt],
                                f"{ENV_FILES[fmt]} was not written by rocetune (the site's own file): "
                                "not compared with the plan"))
            continue
        changes, kept = _overrides_kept(text, env_changes(text, d.planned[fmt], fmt), fmt)
        if kept and not changes:
            out.append(_finding("doctor-env-drift", "info", ENV_FILES[fmt],
                                f"{ENV_FILES[fmt]} holds overrides the plan does not ({', '.join(kept)}): written "
                                "with --set or --config, as its comments say; the boot unit's next run drops them "
                                "unless the node settings hold them (env.set in /etc/rocetune/doctor.yml)",
                                {"file": ENV_FILES[fmt], "overrides": kept}))
            continue
        if changes:
            out.append(_finding("doctor-env-drift", "warning", ENV_FILES[fmt],
                                f"{ENV_FILES[fmt]} differs from the plan now: " + ", ".join(changes),
                                {"file": ENV_FILES[fmt], "changes": changes}))
        elif text != d.planned[fmt]:
            out.append(_finding("doctor-env-drift", "info", ENV_FILES[fmt],
                                f"{ENV_FILES[fmt]} has the planned values but other text (a comment "
                                "edited, or the host changed in a way no variable follows)"))
    return out


def _overrides_kept(text: str, changes: List[str], fmt: str):
    """The changes ("KEY old -> new") less those of variables the deployed file itself records as
    an override (`# rule: override (...)`): rocetune's documented way to change the env, not
    drift. -> (the other changes, the overrides kept as KEY=VALUE)."""
    from ..envfiles.read import parse_text

    overridden = {a.key: a.value for a in parse_text(text, fmt).assignments if a.rule_id == "override"}
    kept = [c for c in changes if c.split(" ", 1)[0] in overridden]
    return [c for c in changes if c not in kept], [f"{c.split(' ', 1)[0]}={overridden[c.split(' ', 1)[0]]}"
                                                    for c in kept]


@check("doctor-boot-unit-failed")
def boot_units(d: DoctorInput) -> List[Finding]:
    out = []
    for unit, props in sorted(d.readings["units"].items()):
        if props is None:
            out.append(_finding("doctor-boot-unit-failed", "info", unit,
                                f"not checked: {unit} is installed but systemctl did not answer"))
        elif props.get("Result") not in (None, "success") or props.get("ActiveState") == "failed":
            out.append(_finding("doctor-boot-unit-failed", "error", unit,
                                f"{unit} failed at its last run (Result={props.get('Result')}, "
                                f"exit status {props.get('ExecMainStatus')})", {f"systemctl show {unit}": props}))
    return out


@check("doctor-env-refused")
def env_refused(d: DoctorInput) -> List[Finding]:
    from ..envfiles.degrade import RECORD_PATH

    record = d.readings.get("env_refused")
    if not record:
        return []
    return [_finding("doctor-env-refused", "error", ", ".join(record["files"]) or RECORD_PATH,
                     "the boot unit refused to replace the env with a degraded one and left the previous "
                     "one in place: " + "; ".join(record["reasons"] or ["no reason recorded"]),
                     {RECORD_PATH: record})]


@check("doctor-module-not-loaded")
def module_not_loaded(d: DoctorInput) -> List[Finding]:
    return [_finding("doctor-module-not-loaded", "error", name,
                     f"{name} is listed in {info['file']} but not loaded: what depends on it (its RDMA "
                     "devices, peer memory) is missing", {info["file"]: name, f"/sys/module/{name}": "absent"})
            for name, info in sorted(d.readings.get("modules_load", {}).items()) if not info["loaded"]]


@emits("expect-unchecked")
def expect_unchecked(expected: Optional[dict], source: Optional[str]) -> Finding:
    """The one info finding that says what the expectations leave unchecked (or that there are
    none: said on doctor's summary line too)."""
    from ..model.expect import DEFAULT_PATH, declares_nothing, unset_fields

    if expected is None:
        return _finding("expect-unchecked", "info", "expectations",
                        f"not checked: no expectations ({DEFAULT_PATH} under the root, or --expect FILE): "
                        "the node is held to nothing declared", {"not_checked": "expectations (none declared)"})
    if declares_nothing(expected):
        return _finding("expect-unchecked", "info", "expectations",
                        f"not checked: {source or 'the expectations'} declares no field: no expectations, the node "
                        "is held to nothing declared", {"not_checked": "expectations (the document is empty)"})
    fields = unset_fields(expected)
    where = source or "the expectations"
    if not fields:
        return _finding("expect-unchecked", "info", "expectations", f"{where} declares every field", {"unset": []})
    return _finding("expect-unchecked", "info", "expectations",
                    f"not checked ({where} leaves them out): " + ", ".join(fields), {"unset": fields})


def run_checks(d: DoctorInput) -> List[Finding]:
    from . import below_checks, deployed_env, reader_checks  # noqa: F401  (register their checks)

    out: List[Finding] = []
    for run in CHECKS.values():
        out.extend(run(d))
    return out
