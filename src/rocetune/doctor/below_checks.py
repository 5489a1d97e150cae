"""Doctor's checks below NCCL (declared in rocetune.checks.doctor_below): the kernel log's NIC,
link, PCIe, module and GPU events, judged for the devices that carry the job -- the compute NICs
(the plan's ports, every function of their cards), the GPUs and the PCI bridges above them. The
same events on other devices are info: they are said, not held against the node."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Set

from ..model.finding import Finding
from .checks import DoctorInput, _finding, check

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
    log = d.readings.get("kernel_log") or {}
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
                            f"{dev}{'' if ours else ' (not a compute NIC)'}: {len(found)} firmware health "
                            f"message(s) {_window(d)}, first at {first.get('time') or '?'}: {first['what']}",
                            {"kernel log": [e["text"] for e in found[:5]]}))
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
        kinds = Counter(f"{e.get('cmd')} {e.get('status')} syndrome {e.get('syndrome')}" for e in found)
        top = ", ".join(f"{k} x{n}" for k, n in kinds.most_common(3))
        out.append(_finding("doctor-kernel-nic-command", "warning" if ours else "info", dev,
                            f"{dev}: {len(found)} firmware command(s) failed {_window(d)}: {top}",
                            {"kernel log": [e["text"] for e in found[:5]]}))
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
        ups = sum(1 for e in events if _where(e) == dev and e.get("state", "").lower() in ("up", "active"))
        out.append(_finding("doctor-kernel-link-flap", "warning" if ours else "info", dev,
                            f"{dev}{'' if ours else ' (not a compute port)'}: link went down {len(found)} time(s) "
                            f"{_window(d)} (up again {ups} time(s)), last at {found[-1].get('time') or '?'}",
                            {"kernel log": [e["text"] for e in found[-5:]]}))
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
        kinds = Counter(e["what"].split(" error")[0] for e in found)
        out.append(_finding("doctor-kernel-pcie-aer", severity, dev,
                            f"PCIe AER for {dev} (reported by {found[0].get('port')})"
                            f"{'' if ours else ' -- not on a GPU or compute NIC path'}: "
                            + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) + f" {_window(d)}",
                            {"kernel log": [e["text"] for e in found[:5]]}))
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
        last = found[-1]
        out.append(_finding("doctor-kernel-module-event", "warning" if ours else "info", dev,
                            f"{dev}: {len(found)} module event(s) {_window(d)}, last: "
                            f"{last.get('status')}{', ' + last['detail'] if last.get('detail') else ''}",
                            {"kernel log": [e["text"] for e in found[-5:]]}))
    return out


@check("doctor-kernel-gpu-xid")
def gpu_xid(d: DoctorInput) -> List[Finding]:
    events = _events(d, "gpu-xid")
    if not events:
        return []
    by_dev: Dict[str, List[dict]] = {}
    for e in events:
        by_dev.setdefault(e.get("dev") or "?", []).append(e)
    out = []
    for dev, found in sorted(by_dev.items()):
        xids = sorted({int(e["xid"]) for e in found if e.get("xid", "").isdigit()})
        severe = [x for x in xids if x in SEVERE_XIDS]
        out.append(_finding("doctor-kernel-gpu-xid", "error" if severe else "warning", dev,
                            f"GPU {dev}: Xid {', '.join(map(str, xids))} {_window(d)} ({len(found)} message(s))"
                            + (f"; {', '.join(map(str, severe))} need a GPU reset or a repair" if severe else ""),
                            {"kernel log": [e["text"] for e in found[:5]]}))
    return out
