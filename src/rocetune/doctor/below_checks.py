"""Doctor's checks below NCCL (declared in rocetune.doctor.below_declarations): the kernel log's NIC,
link, PCIe, module and GPU events, judged for the devices that carry the job -- the compute NICs
(the plan's ports, every function of their cards), the GPUs and the PCI bridges above them. The
same events on other devices are info: they are said, not held against the node."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Set, Tuple

from ..model.finding import Finding
from ..probe.parsers.kernel_log import last
from .base import DoctorInput, _finding, check

# Xids NVIDIA's catalog says need a GPU reset, a node reboot or a repair.
SEVERE_XIDS = {48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 149}


def _card(bdf: Optional[str]) -> Optional[str]:
    """`0000:3b:00.1` -> `0000:3b:00` (every function of one card); a short `3b:00.1` gets domain 0000."""
    if not bdf or "." not in bdf:
        return None
    head = bdf.rsplit(".", 1)[0].lower()
    return head if head.count(":") == 2 else f"0000:{head}"


class Scope:
    """The devices that carry the job: compute NIC cards, their netdevs and RDMA devices, the
    GPUs, and the bridges above any of them."""

    def __init__(self, d: DoctorInput):
        ports = list(d.view.selection().chosen)
        self.cards: Set[str] = {c for c in (_card(p.pci) for p in ports) if c}
        self.netdevs: Set[str] = {p.netdev for p in ports if p.netdev}
        self.ibdevs: Set[str] = {p.device for p in ports}
        self.gpus: Set[str] = {c for c in (_card(g.get("bdf")) for g in d.features.get("gpus") or []) if c}
        by_bdf = {x["bdf"]: x for x in (d.features.get("pci") or {}).get("devices", []) if x.get("bdf")}
        self.bridges: Set[str] = set()
        for dev in list(by_bdf):
            if _card(dev) in self.cards | self.gpus:
                parent = by_bdf[dev].get("parent")
                while parent and _card(parent) not in self.bridges:
                    self.bridges.add(_card(parent) or parent)
                    parent = by_bdf.get(parent, {}).get("parent")

    def nic(self, event: dict) -> bool:
        return _card(event.get("dev")) in self.cards or event.get("netdev") in self.netdevs \
            or event.get("ibdev") in self.ibdevs

    def pcie(self, event: dict) -> bool:
        return bool({_card(event.get("dev")), _card(event.get("port"))} & (self.cards | self.gpus | self.bridges))


def _events(d: DoctorInput, kind: str) -> Optional[List[dict]]:
    log = d.readings.get("kernel_log")
    if log is None:
        return None
    return [e for e in log.get("events") or [] if e.get("kind") == kind]


def _where(e: dict) -> str:
    return e.get("netdev") or e.get("ibdev") or e.get("dev") or e.get("port") or "unknown device"


def _window(d: DoctorInput) -> str:
    """How the findings name the window the events were judged in (doctor/kernel_log.py)."""
    log = d.readings.get("kernel_log") or {}
    if log.get("within"):
        return str(log["within"])
    since = log.get("since") or "boot"
    return "since boot" if since == "boot" else f"since {since}"


@check("doctor-kernel-log-unread")
def log_unread(d: DoctorInput) -> List[Finding]:
    if "kernel_log" not in d.readings or d.readings["kernel_log"] is not None:
        return []
    return [_finding("doctor-kernel-log-unread", "info", "host",
                     "not checked: neither `journalctl -k` nor `dmesg` answered (root reads them), so NIC "
                     "firmware faults, link flaps and PCIe errors were not looked for")]


@check("doctor-kernel-nic-health")
def nic_health(d: DoctorInput) -> List[Finding]:
    events = _events(d, "nic-health")
    if not events:
        return []
    scope = Scope(d)
    out = []
    by_dev: Dict[str, List[dict]] = {}
    for e in events:
        by_dev.setdefault(_where(e), []).append(e)
    for dev, found in sorted(by_dev.items()):
        ours = any(scope.nic(e) for e in found)
        first = found[0]
        out.append(_finding("doctor-kernel-nic-health", "error" if ours else "info", dev,
                            f"{dev}{'' if ours else ' (not a compute NIC)'}: {_count(found)} firmware health "
                            f"message(s) {_window(d)}, first at {first.get('time') or '?'}: {first['what']}",
                            {"kernel log": _texts(found)}))
    return out


@check("doctor-kernel-nic-command")
def nic_command(d: DoctorInput) -> List[Finding]:
    events = _events(d, "nic-command")
    if not events:
        return []
    scope = Scope(d)
    out = []
    by_dev: Dict[str, List[dict]] = {}
    for e in events:
        by_dev.setdefault(_where(e), []).append(e)
    for dev, found in sorted(by_dev.items()):
        # A line without the device's prefix (MLNX_OFED's driver) cannot be placed: held as ours.
        ours = any(scope.nic(e) or not e.get("dev") for e in found)
        kinds: Counter = Counter()
        for e in found:
            kinds[f"{e.get('cmd')} {e.get('status')} syndrome {e.get('syndrome')}"] += e.get("count", 1)
        top = ", ".join(f"{k} x{n}" for k, n in kinds.most_common(3))
        out.append(_finding("doctor-kernel-nic-command", "warning" if ours else "info", dev,
                            f"{dev}: {_count(found)} firmware command(s) failed {_window(d)}: {top}",
                            {"kernel log": _texts(found)}))
    return out


@check("doctor-kernel-link-flap")
def link_flap(d: DoctorInput) -> List[Finding]:
    events = _events(d, "link")
    if not events:
        return []
    scope = Scope(d)
    downs: Dict[str, List[dict]] = {}
    for e in events:
        if e.get("state", "").lower() == "down":
            downs.setdefault(_where(e), []).append(e)
    out = []
    for dev, found in sorted(downs.items()):
        ours = any(scope.nic(e) for e in found)
        ups = _count([e for e in events if _where(e) == dev and e.get("state", "").lower() in ("up", "active")])
        latest = max((last(e) for e in found), key=lambda x: x.get("seq") or 0)
        out.append(_finding("doctor-kernel-link-flap", "warning" if ours else "info", dev,
                            f"{dev}{'' if ours else ' (not a compute port)'}: link went down {_count(found)} time(s) "
                            f"{_window(d)} (up again {ups} time(s)), last at {latest.get('time') or '?'}",
                            {"kernel log": _texts(found)}))
    return out


@check("doctor-kernel-pcie-aer")
def pcie_aer(d: DoctorInput) -> List[Finding]:
    events = _events(d, "pcie-aer")
    if not events:
        return []
    scope = Scope(d)
    out = []
    by_dev: Dict[str, List[dict]] = {}
    for e in events:
        by_dev.setdefault(e.get("dev") or e.get("port") or "?", []).append(e)
    for dev, found in sorted(by_dev.items()):
        ours = any(scope.pcie(e) for e in found)
        fatal = [e for e in found if e.get("severity", "").startswith("Uncorr")]
        severity = ("error" if fatal else "warning") if ours else "info"
        kinds: Counter = Counter()
        for e in found:
            kinds[e["what"].split(" error")[0]] += e.get("count", 1)
        out.append(_finding("doctor-kernel-pcie-aer", severity, dev,
                            f"PCIe AER for {dev} (reported by {found[0].get('port')})"
                            f"{'' if ours else ' -- not on a GPU or compute NIC path'}: "
                            + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) + f" {_window(d)}",
                            {"kernel log": _texts(found)}))
    return out


@check("doctor-kernel-module-event")
def module_event(d: DoctorInput) -> List[Finding]:
    events = _events(d, "module")
    if not events:
        return []
    scope = Scope(d)
    out = []
    bad = [e for e in events if e.get("error") or "unplugged" in (e.get("status") or "").lower()]
    by_dev: Dict[str, List[dict]] = {}
    for e in bad:
        by_dev.setdefault(f"{e.get('dev')} module {e.get('module')}", []).append(e)
    for dev, found in sorted(by_dev.items()):
        ours = any(scope.nic(e) for e in found)
        latest = max(found, key=lambda e: last(e).get("seq") or 0)
        out.append(_finding("doctor-kernel-module-event", "warning" if ours else "info", dev,
                            f"{dev}: {_count(found)} module event(s) {_window(d)}, last: "
                            f"{latest.get('status')}{', ' + latest['detail'] if latest.get('detail') else ''}",
                            {"kernel log": _texts(found)}))
    return out


@check("doctor-kernel-gpu-xid")
def gpu_xid(d: DoctorInput) -> List[Finding]:
    events = _events(d, "gpu-xid")
    if not events:
        return []
    by_dev: Dict[str, List[dict]] = {}
    for e in events:
        by_dev.setdefault(e.get("dev") or "?", []).append(e)
    gpus = _node_gpus(d)
    out = []
    for dev, found in sorted(by_dev.items()):
        xids = sorted({int(e["xid"]) for e in found if e.get("xid", "").isdigit()})
        severe = [x for x in xids if x in SEVERE_XIDS]
        # An Xid names its GPU by bus address; one that is none of this node's GPUs is said, not
        # held against the node. A node whose GPUs are unknown cannot place any: each counts.
        ours = not gpus or _xid_card(dev) in gpus
        severity = ("error" if severe else "warning") if ours else "info"
        out.append(_finding("doctor-kernel-gpu-xid", severity, dev,
                            f"GPU {dev}{'' if ours else ' (not a GPU of this node)'}: Xid "
                            f"{', '.join(map(str, xids))} {_window(d)} ({_count(found)} message(s))"
                            + (f"; {', '.join(map(str, severe))} need a GPU reset or a repair"
                               if severe and ours else ""),
                            {"kernel log": _texts(found)}))
    return out


def _count(events: List[dict]) -> int:
    return sum(e.get("count", 1) for e in events)


def _texts(events: List[dict], most: int = 5) -> List[str]:
    """The first and last message of each class, in log order, at most `most`."""
    seen: Dict[int, str] = {}
    for e in events:
        seen[e.get("seq") or 0] = e["text"]
        end = last(e)
        seen[end.get("seq") or 0] = end.get("text") or e["text"]
    return [seen[k] for k in sorted(seen)][:most]


def _xid_card(dev: str) -> Optional[str]:
    """An Xid's `PCI:0000:18:00` (domain:bus:device, no function) -> `0000:18:00`."""
    parts = dev.lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    if len(parts) != 3:
        return None
    return f"{int(parts[0], 16):04x}:{parts[1][-2:]}:{parts[2].split('.')[0]}" if all(parts) else None


def _node_gpus(d: DoctorInput) -> Set[str]:
    """This node's GPUs (cards): what the GPU reader found and every NVIDIA display or 3D
    controller on the PCI bus (a GPU that fell off the bus may be gone from nvidia-smi)."""
    out = {c for c in (_card(g.get("bdf")) for g in d.features.get("gpus") or []) if c}
    for dev in (d.features.get("pci") or {}).get("devices", []):
        card = _card(dev.get("bdf")) if dev.get("kind") == "gpu" else None
        if card:
            out.add(card)
    return out


@check("doctor-gpu-lost")
def gpu_lost(d: DoctorInput) -> List[Finding]:
    out = []
    for lost in d.readings.get("gpu_lost") or []:
        bdf = lost["bus_id"]
        out.append(_finding("doctor-gpu-lost", "error", bdf,
                            f"GPU {bdf}: nvidia-smi cannot reach it ({lost['why']}): it fell off the bus or the "
                            "driver lost it; a job on it fails", {"nvidia-smi": lost}))
    return out


# --- NIC firmware read back -------------------------------------------------------------------------
def _fw_cards(d: DoctorInput) -> Dict[str, Set[int]]:
    """First function of each compute card -> the port numbers (1 = function .0) the job uses."""
    from ..core.nic_firmware_params import FirmwareError, first_function

    out: Dict[str, Set[int]] = {}
    for p in d.view.selection().chosen:
        if not p.pci:
            continue
        try:
            out.setdefault(first_function(p.pci), set()).add(int(p.pci.rsplit(".", 1)[1]) + 1)
        except (FirmwareError, ValueError):
            continue
    return out


def _fw(d: DoctorInput) -> Optional[Dict[str, dict]]:
    sec = d.features.get("nic_firmware")
    return None if not isinstance(sec, dict) else sec.get("devices") or {}


def _value(row: dict, column: str) -> Tuple[Optional[str], Optional[int]]:
    from ..core.nic_firmware_params import parse_value

    text = row.get(column)
    return (None, None) if text is None else parse_value(text)


def _columns(row: dict) -> List[str]:
    return [c for c in ("current", "next_boot") if c in row]


def _qos(d: DoctorInput):
    from ..model.qos import QosPlan

    return (d.qos, d.qos.source) if d.qos is not None else (QosPlan(), "the built-in QoS defaults")


@check("doctor-fw-unread")
def fw_unread(d: DoctorInput) -> List[Finding]:
    devices = _fw(d)
    if devices is None:
        return []
    cards = _fw_cards(d)
    tool = d.features["nic_firmware"].get("tool", "mlxconfig")
    return [_finding("doctor-fw-unread", "info", bdf,
                     f"not checked: {tool} could not read {bdf} ({dev['error']}): its relaxed ordering, "
                     "congestion control and CNP settings are unknown", {f"{tool} -d {bdf} -e q": dev["error"]})
            for bdf, dev in sorted(devices.items()) if dev.get("error") and (bdf in cards or not cards)]


@check("doctor-fw-pci-wr-ordering")
def fw_wr_ordering(d: DoctorInput) -> List[Finding]:
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        row = (dev.get("params") or {}).get("PCI_WR_ORDERING")
        if not row:
            continue
        forced = [c for c in _columns(row) if _value(row, c)[0] == "FORCE_RELAX" or _value(row, c)[1] == 1]
        if forced:
            when = " and ".join(c.replace("_", " ") for c in forced)
            out.append(_finding("doctor-fw-pci-wr-ordering", "warning", bdf,
                                f"{bdf}: PCI_WR_ORDERING is force_relax ({when}): every PCIe write is relaxed, "
                                "NCCL's flag writes included (NCCL's `collective mismatch error`); set it back "
                                "to per_mkey(0)", {"PCI_WR_ORDERING": row}))
    return out


def _port_params(dev: dict, name: str, ports: Set[int]) -> List[Tuple[str, dict]]:
    params = dev.get("params") or {}
    return [(f"{name}_P{n}", params[f"{name}_P{n}"]) for n in sorted(ports or {1}) if f"{name}_P{n}" in params]


@check("doctor-fw-cc-prio-mask")
def fw_cc_mask(d: DoctorInput) -> List[Finding]:
    cards = _fw_cards(d)
    plan, source = _qos(d)
    bit = 1 << plan.data.priority
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        if bdf not in cards:
            continue
        for param, row in _port_params(dev, "ROCE_CC_PRIO_MASK", cards[bdf]):
            bad = [c for c in _columns(row) if _value(row, c)[1] is not None and not _value(row, c)[1] & bit]
            if bad:
                out.append(_finding("doctor-fw-cc-prio-mask", "warning", bdf,
                                    f"{bdf}: {param} is {row[bad[0]]} ({bad[0].replace('_', ' ')}), without bit "
                                    f"{bit} of the data priority {plan.data.priority} ({source}): DCQCN does not "
                                    "slow RoCE data down on congestion", {param: row}))
    return out


@check("doctor-fw-cnp-class")
def fw_cnp(d: DoctorInput) -> List[Finding]:
    cards = _fw_cards(d)
    plan, source = _qos(d)
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        if bdf not in cards:
            continue
        for name, wanted, what in (("CNP_DSCP", plan.cnp.dscp, "DSCP"), ("CNP_802P_PRIO", plan.cnp.priority,
                                                                          "802.1p priority")):
            for param, row in _port_params(dev, name, cards[bdf]):
                bad = [c for c in _columns(row) if _value(row, c)[1] is not None and _value(row, c)[1] != wanted]
                if bad:
                    out.append(_finding("doctor-fw-cnp-class", "warning", bdf,
                                        f"{bdf}: {param} is {row[bad[0]]} ({bad[0].replace('_', ' ')}), the plan's "
                                        f"CNP {what} is {wanted} ({source})", {param: row}))
    return out


@check("doctor-fw-user-cc")
def fw_user_cc(d: DoctorInput) -> List[Finding]:
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        row = (dev.get("params") or {}).get("USER_PROGRAMMABLE_CC")
        if row and any(_value(row, c)[1] == 1 for c in _columns(row)):
            out.append(_finding("doctor-fw-user-cc", "warning", bdf,
                                f"{bdf}: USER_PROGRAMMABLE_CC is on: a DOCA PCC program, not DCQCN, sets the "
                                "rate; the plan's DCQCN/ECN settings do not govern it", {"USER_PROGRAMMABLE_CC": row}))
    return out


@check("doctor-fw-ats")
def fw_ats(d: DoctorInput) -> List[Finding]:
    cmd = (d.features.get("kernel") or {}).get("cmdline") or {}
    said = [f"{k}={cmd[k]}" for k in ("iommu", "intel_iommu", "amd_iommu") if cmd.get(k)]
    iommu = " ".join(said) or "no iommu= setting"
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        row = (dev.get("params") or {}).get("ATS_ENABLED")
        if row and any(_value(row, c)[1] == 1 for c in _columns(row)):
            out.append(_finding("doctor-fw-ats", "info", bdf,
                                f"{bdf}: ATS_ENABLED is on ({iommu} on the kernel command line): translated "
                                "peer-to-peer needs ACS Direct Translated P2P and the IOMMU on; unused with "
                                "iommu=pt", {"ATS_ENABLED": row, "cmdline": iommu}))
    return out


@check("doctor-fw-pending-reset")
def fw_pending(d: DoctorInput) -> List[Finding]:
    out = []
    for bdf, dev in sorted((_fw(d) or {}).items()):
        pending = {k: r for k, r in sorted((dev.get("params") or {}).items())
                   if "current" in r and "next_boot" in r and r["current"] != r["next_boot"]}
        if pending:
            said = ", ".join(f"{k} {r['current']} -> {r['next_boot']}" for k, r in pending.items())
            out.append(_finding("doctor-fw-pending-reset", "info", bdf,
                                f"{bdf}: {said} at the next firmware reset or cold reboot", pending))
    return out


# --- the PHY ------------------------------------------------------------------------------------
NO_ISSUE = "no issue was observed"
MODULE_HOT_C = 70.0


def _phy(d: DoctorInput) -> Optional[Dict[str, dict]]:
    sec = d.features.get("phy")
    return None if not isinstance(sec, dict) else sec.get("ports") or {}


def _phy_ports(d: DoctorInput):
    """(port name, its PHY, whether it carries the job) for every port the PHY section read."""
    chosen = {p.name for p in d.view.selection().chosen}
    for name, entry in sorted((_phy(d) or {}).items()):
        yield name, entry, name in chosen


def _where_port(name: str, entry: dict) -> str:
    return f"{name} ({entry['netdev']})" if entry.get("netdev") else name


def _speed(name: str) -> Optional[float]:
    from ..probe.parsers.phy import speed_gbps

    return speed_gbps(name.split("_")[0])


def _lanes(text: Optional[str]) -> Optional[int]:
    """The lanes a width (`2x`, `4X`) or a speed name (`200G_2X`) says; None where it says none."""
    import re

    m = re.search(r"(?:^|_)(\d+)\s*[xX]$", (text or "").strip())
    return int(m.group(1)) if m else None


def _fits(name: str, lanes: Optional[int]) -> bool:
    """Whether a speed the port lists is one a link of `lanes` lanes can run: `400G_4X` is not
    for a 2-lane link. A name without lanes, or a link whose lanes are unknown, fits."""
    need = _lanes(name)
    return lanes is None or need is None or need <= lanes


@check("doctor-phy-unread")
def phy_unread(d: DoctorInput) -> List[Finding]:
    out = []
    for name, entry, ours in _phy_ports(d):
        if ours and entry.get("errors") and not entry.get("link") and not entry.get("fec") and not entry.get("module"):
            said = "; ".join(f"{k}: {v}" for k, v in sorted(entry["errors"].items()))
            out.append(_finding("doctor-phy-unread", "info", name,
                                f"not checked: the PHY of {_where_port(name, entry)} could not be read ({said})",
                                dict(entry["errors"])))
    return out


@check("doctor-phy-speed")
def phy_speed(d: DoctorInput) -> List[Finding]:
    out = []
    speeds: Dict[str, float] = {}
    for name, entry, ours in _phy_ports(d):
        link = entry.get("link") or {}
        now = link.get("speed_gbps")
        if now is None or (link.get("state") or "").lower() not in ("active", "up", ""):
            continue
        if ours:
            speeds[name] = now
        lanes = _lanes(link.get("width")) or _lanes(link.get("speed"))
        enabled = {s for s in (_speed(x) for x in link.get("enabled_speeds") or [] if _fits(x, lanes)) if s}
        cable = {s for s in (_speed(x) for x in link.get("cable_speeds") or [] if _fits(x, lanes)) if s}
        both = (enabled & cable) if enabled and cable else set()
        if both and now < max(both):
            out.append(_finding("doctor-phy-speed", "warning" if ours else "info", name,
                                f"{_where_port(name, entry)} runs at {link.get('speed')} ({now:g} Gb/s); the port "
                                f"and its cable both support {max(both):g} Gb/s"
                                + ("" if ours else " (not a compute port)"),
                                {"speed": link.get("speed"), "enabled": link.get("enabled_speeds"),
                                 "cable": link.get("cable_speeds")}))
    if len(set(speeds.values())) > 1:
        common = max(set(speeds.values()), key=lambda s: (list(speeds.values()).count(s), s))
        for name, now in sorted(speeds.items()):
            if now != common:
                out.append(_finding("doctor-phy-speed", "warning", name,
                                    f"{name} runs at {now:g} Gb/s, the other compute ports at {common:g} Gb/s: a "
                                    "ring over it runs at its speed", {n: s for n, s in sorted(speeds.items())}))
    return out


def _no_fec(text: Optional[str]) -> bool:
    return text is not None and text.strip().lower() in ("no fec", "none", "off", "no-fec")


@check("doctor-phy-fec")
def phy_fec(d: DoctorInput) -> List[Finding]:
    out = []
    for name, entry, ours in _phy_ports(d):
        link = entry.get("link") or {}
        active = (entry.get("fec") or {}).get("active")
        speed = link.get("speed_gbps")
        if speed is None:
            port = next((p for p in d.view.ports() if p.name == name), None)
            speed = port.rate_gbps if port else None
        ethernet = not (link.get("speed") or "").upper().startswith("IB-")
        if ethernet and speed and speed >= 100 and (_no_fec(link.get("fec")) or _no_fec(active)):
            out.append(_finding("doctor-phy-fec", "warning" if ours else "info", name,
                                f"{_where_port(name, entry)} runs {speed:g} Gb/s Ethernet without FEC "
                                f"({link.get('fec') or 'active FEC ' + str(active)}): bit errors reach the MAC "
                                "and RoCE retransmits" + ("" if ours else " (not a compute port)"),
                                {"mlxlink FEC": link.get("fec"), "ethtool --show-fec": entry.get("fec")}))
    return out


@check("doctor-phy-ber")
def phy_ber(d: DoctorInput) -> List[Finding]:
    out = []
    for name, entry, ours in _phy_ports(d):
        link = entry.get("link") or {}
        eff, raw, errs = link.get("effective_ber"), link.get("raw_ber"), link.get("effective_errors")
        evidence = {k: link.get(k) for k in ("fec", "effective_errors", "effective_ber", "raw_ber",
                                             "raw_errors_per_lane")}
        if errs:
            out.append(_finding("doctor-phy-ber", "error" if ours else "info", name,
                                f"{_where_port(name, entry)}: {errs} error(s) got past FEC (effective BER "
                                f"{eff:.0e}): frames are dropped" if eff is not None else
                                f"{_where_port(name, entry)}: {errs} error(s) got past FEC: frames are dropped",
                                evidence))
            continue
        limit = 1e-12 if _no_fec(link.get("fec")) else 1e-6
        if raw is not None and raw > limit:
            out.append(_finding("doctor-phy-ber", "warning" if ours else "info", name,
                                f"{_where_port(name, entry)}: raw BER {raw:.0e} is above {limit:.0e} "
                                f"({'no FEC' if limit == 1e-12 else 'with FEC'}): little margin left", evidence))
    return out


@check("doctor-phy-recommendation")
def phy_recommendation(d: DoctorInput) -> List[Finding]:
    out = []
    for name, entry, ours in _phy_ports(d):
        link = entry.get("link") or {}
        rec = (link.get("recommendation") or "").strip()
        if rec and not rec.lower().rstrip(".").startswith(NO_ISSUE):
            out.append(_finding("doctor-phy-recommendation", "warning" if ours else "info", name,
                                f"{_where_port(name, entry)}: mlxlink recommends: {rec} (status opcode "
                                f"{link.get('status_opcode')})", {"Recommendation": rec,
                                                                  "Status Opcode": link.get("status_opcode")}))
    return out


@check("doctor-phy-module")
def phy_module(d: DoctorInput) -> List[Finding]:
    out = []
    for name, entry, ours in _phy_ports(d):
        mod = entry.get("module") or {}
        said = []
        if mod.get("alarms"):
            said.append(", ".join(mod["alarms"]) + " on")
        temp, trange = mod.get("temperature_c"), mod.get("temperature_range")
        if trange and trange[0] == trange[1] == 0:
            temp, trange = None, None  # `0 [0..0]`: no sensor (a passive copper cable), unknown
        hot = trange[1] if trange else MODULE_HOT_C
        if temp is not None and temp >= hot:
            said.append(f"{temp:g} C (its high range {hot:g} C)" if trange else f"{temp:g} C (>= {hot:g} C)")
        rx, rrange = mod.get("rx_power_dbm") or [], mod.get("rx_power_range")
        if rrange and rrange[0] == rrange[1]:
            rrange = None  # no alarm range reported (`[0..0]`): unknown, not a low power
        if rrange and any(v < rrange[0] for v in rx):
            said.append("receive power " + ",".join(f"{v:g}" for v in rx) + f" dBm below {rrange[0]:g} dBm")
        if said:
            out.append(_finding("doctor-phy-module", "warning" if ours else "info", name,
                                f"{_where_port(name, entry)} module {mod.get('vendor') or ''} "
                                f"{mod.get('part') or ''}: ".replace("  ", " ") + "; ".join(said),
                                {k: mod.get(k) for k in ("identifier", "vendor", "part", "serial", "temperature_c",
                                                         "rx_power_dbm", "tx_power_dbm", "alarms")}))
    return out


# --- the NVLink fabric --------------------------------------------------------------------------
def _nvlink(d: DoctorInput) -> Optional[dict]:
    sec = d.features.get("nvlink")
    return sec if isinstance(sec, dict) else None


@check("doctor-nvlink-fabric")
def nvlink_fabric(d: DoctorInput) -> List[Finding]:
    sec = _nvlink(d)
    if not sec or not sec.get("fabric"):
        return []
    reported = {b: f for b, f in sec["fabric"].items() if f.get("state")}
    if not sec.get("nvswitches") and not reported:
        return []  # no NVSwitch, no fabric state: a PCIe or NVLink-bridge node
    bad = {b: f for b, f in sorted(sec["fabric"].items())
           if not (f.get("state") == "Completed" and f.get("status") == "Success")}
    if not bad:
        return []
    states = Counter(f"{f.get('state') or 'N/A'}/{f.get('status') or 'N/A'}" for f in bad.values())
    return [_finding("doctor-nvlink-fabric", "error", "host",
                     f"{len(bad)} of {len(sec['fabric'])} GPU(s) not registered with the NVLink fabric ("
                     + ", ".join(f"{k} x{n}" for k, n in sorted(states.items()))
                     + "): CUDA reports `system not yet initialized` until Fabric Manager registers them",
                     {b: f for b, f in bad.items()})]


@check("doctor-nvlink-service")
def nvlink_service(d: DoctorInput) -> List[Finding]:
    sec = _nvlink(d)
    if not sec or sec.get("services") is None:
        return []
    out = []
    for unit, props in sorted(sec["services"].items()):
        if props.get("LoadState") in (None, "not-found"):
            if unit.startswith("nvidia-fabricmanager") and sec.get("nvswitches"):
                out.append(_finding("doctor-nvlink-service", "error", unit,
                                    f"{unit} is not installed on a node with {sec['nvswitches']} NVSwitch "
                                    "function(s): nothing registers the GPUs with the fabric", props))
            continue
        if props.get("ActiveState") != "active":
            fm = unit.startswith("nvidia-fabricmanager")
            if fm and not sec.get("nvswitches"):
                continue
            out.append(_finding("doctor-nvlink-service", "error" if fm else "warning", unit,
                                f"{unit} is {props.get('ActiveState')} ({props.get('SubState')}, result "
                                f"{props.get('Result')})", props))
    return out


@check("doctor-nvlink-links")
def nvlink_links(d: DoctorInput) -> List[Finding]:
    """Active NVLinks per GPU against what `nvidia-smi topo -m` says the GPU has (NV# to its
    peers: their sum on a bridged or meshed board, at most the slots listed on an NVSwitch board,
    where every pair shows all of them). `nvidia-smi nvlink -s` lists every slot of the GPU's
    design, populated or not: an inactive slot beyond the topology's count is no fault. Without
    the topology, GPUs are held to each other: fewer active links than the best one is a fault,
    slots inactive on every GPU alike are not populated."""
    sec = _nvlink(d)
    if not sec or not sec.get("links"):
        return []
    active = {g: sum(1 for v in x["links"].values() if v != "inactive") for g, x in sec["links"].items()}
    if not any(active.values()):
        return []
    expected = _nvlink_expected(d, sec)
    most = max(active.values())
    out = []
    for g, x in sorted(sec["links"].items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0):
        down = sorted((k for k, v in x["links"].items() if v == "inactive"), key=int)
        want = expected.get(g)
        short = active[g] < want if want is not None else active[g] < most
        if short:
            than = (f"`nvidia-smi topo -m` gives it {want}" if want is not None
                    else f"the node's other GPUs up to {most}")
            out.append(_finding("doctor-nvlink-links", "warning", f"GPU{g}",
                                f"GPU {g} ({x.get('name')}): {active[g]} active NVLink(s), {than}"
                                + (f"; inactive: link {', '.join(down)}" if down else ""),
                                {"nvidia-smi nvlink -s": x["links"], "expected": want}))
    return out


def _nvlink_expected(d: DoctorInput, sec: dict) -> Dict[str, int]:
    """GPU index -> the NVLinks `nvidia-smi topo -m` shows it has (absent where it shows none)."""
    out: Dict[str, int] = {}
    for gpu in d.features.get("gpus") or []:
        peers = [n for n in (gpu.get("nvlink") or {}).values() if isinstance(n, int) and n > 0]
        if not peers:
            continue
        slots = len(((sec.get("links") or {}).get(str(gpu.get("index"))) or {}).get("links") or {})
        total = sum(peers)
        # every pair showing the same count a GPU's slots hold: the links go to NVSwitches
        out[str(gpu.get("index"))] = min(total, slots) if slots else total
    return out


@check("doctor-nvlink-errors")
def nvlink_errors(d: DoctorInput) -> List[Finding]:
    sec = _nvlink(d)
    if not sec or not sec.get("link_errors"):
        return []
    out = []
    for g, links in sorted(sec["link_errors"].items()):
        bad = {k: {c: v for c, v in counters.items() if v} for k, counters in links.items()
               if any(counters.values())}
        if bad:
            said = "; ".join(f"link {k}: " + ", ".join(f"{c} {v}" for c, v in sorted(cs.items()))
                             for k, cs in sorted(bad.items(), key=lambda kv: int(kv[0])))
            out.append(_finding("doctor-nvlink-errors", "warning", f"GPU{g}",
                                f"GPU {g} NVLink error counters: {said}", {"nvidia-smi nvlink -e": bad}))
    return out


# --- the pcie_p2p role ----------------------------------------------------------------------------
@check("doctor-pcie-p2p-iommu")
def pcie_p2p_iommu(d: DoctorInput) -> List[Finding]:
    r = d.readings.get("pcie_p2p")
    if not r or "iommu=pt" not in (r.get("dropin") or ""):
        return []
    cmd = (d.features.get("kernel") or {}).get("cmdline") or {}
    if cmd.get("iommu") == "pt":
        return []
    return [_finding("doctor-pcie-p2p-iommu", "warning", "host",
                     "the boot loader has iommu=pt (/etc/default/grub.d/rocetune-pcie-p2p.cfg) but the running "
                     "kernel's command line does not: it applies at the next reboot",
                     {"/proc/cmdline": cmd, "drop-in": r["dropin"].strip().splitlines()[-1]})]
