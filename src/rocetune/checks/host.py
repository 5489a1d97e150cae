"""Host checks: one function per check over the Features, each declared with its page just above it.

They run when a host is reported (probe, env, lint, explain ask `host_findings`), never at probe
time: findings are not facts, so a saved Features document stays the host's facts alone."""

from __future__ import annotations

import re
from typing import Callable, Dict, Iterable, List, Optional

from ..model.finding import Finding
from ..model.frontend import front_end
from ..model.vocab import natural_key
from .binding import emits
from .registry import declare, finding

HostCheck = Callable[[dict], Iterable[Finding]]
_RUNS: Dict[str, HostCheck] = {}


def host_check(check_id: str) -> Callable[[HostCheck], HostCheck]:
    """Run the decorated function as the host check `check_id` (declared above it), bound to it."""
    bind = emits(check_id)

    def register(fn: HostCheck) -> HostCheck:
        _RUNS[check_id] = bound_fn = bind(fn)
        return bound_fn
    return register


def host_findings(features: dict) -> List[Finding]:
    """Every host check over `features`, sorted by id then subject."""
    out = [f for run in _RUNS.values() for f in run(features)]
    return sorted(out, key=lambda x: (x.id, x.subject))


def host_check_ids() -> List[str]:
    return sorted(_RUNS)


_KERNEL_ROCE_MTU = ("Linux include/rdma/ib_addr.h iboe_get_mtu(): the RoCE MTU is the largest IB MTU "
                    "(256..4096) not above the netdev MTU less the RoCE headers")


declare(
    id="pci-link-degraded", kind="host", severity="warning",
    title="A GPU or NIC runs its PCIe link below what it can do",
    checks="Each GPU's and NIC's PCIe link: the speed and width it trained at against the most "
           "the device and its slot support.",
    reads="/sys/bus/pci/devices/<bdf>/current_link_speed, current_link_width, max_link_speed "
          "and max_link_width (the Features `pci.devices[].link`).",
    why="A link trained down (Gen4 x8 instead of Gen5 x16, a riser that lost lanes) caps what the "
        "device moves to and from host and GPU memory: a 400 Gb/s NIC on a halved link cannot "
        "reach line rate, and NCCL sizes its rings and GPUDirect paths as if the link were whole.",
    fix="reseat the card or its riser, check the slot's BIOS link settings and the cable of a "
        "retimer; an idle GPU may downclock its link to save power, so read the link again under "
        "load before replacing hardware",
    source="Linux drivers/pci/pci-sysfs.c (current_link_speed/width, max_link_speed/width, "
           "added by commit 56c1af4606f0); NCCL #749: a topology that declared a 2.5 GT/s x1 link "
           "gave 0.12 GB/s rings.",
)


@host_check("pci-link-degraded")
def pci_link_degraded(f: dict) -> Iterable[Finding]:
    for d in f["pci"]["devices"]:
        link = d.get("link") or {}
        if d["kind"] in ("gpu", "nic") and link.get("degraded"):
            base = f"/sys/bus/pci/devices/{d['bdf']}"
            yield finding("pci-link-degraded", d["bdf"],
                          f"{d['kind'].upper()} {d['bdf']} runs at {link['speed']} x{link['width']}, "
                          f"capable of {link['max_speed']} x{link['max_width']}",
                          evidence={"file": f"{base}/current_link_speed, current_link_width, "
                                            "max_link_speed, max_link_width", "value": link})


declare(
    id="topology-disagreement", kind="host", severity="warning",
    title="sysfs and nvidia-smi place a GPU-NIC pair differently",
    checks="For each GPU and RDMA NIC, the PCI path type (PIX, PXB, PHB, NODE, SYS) computed from "
           "the sysfs PCI tree against the one `nvidia-smi topo -m` prints.",
    reads="The PCI tree under /sys/bus/pci/devices and the recorded output of `nvidia-smi topo -m` "
          "(the Features `topology.disagreements`).",
    why="NCCL pairs GPUs with NICs and decides GPUDirect RDMA from the sysfs tree (src/graph/topo.cc, "
        "paths.cc); when the two views differ, one of them is wrong about the host (a hypervisor's "
        "synthetic tree, a PCIe switch in a mode that hides its ports), and NCCL may pick a far NIC "
        "or stage transfers through host memory.",
    fix="compare `lspci -tv` with `nvidia-smi topo -m`; on a VM or a host whose tree misstates the "
        "layout, give NCCL the real one with NCCL_TOPO_FILE (rule nccl-topo-file); check the PCIe "
        "switch firmware's mode on bare metal",
    source="NVIDIA/nccl v2.28.9-1 src/graph/xml.cc:413-573 (getPciPath, ncclTopoGetXmlFromSys: "
           "each device's place from its /sys path) and src/graph/paths.cc (path types); the "
           "`nvidia-smi topo -m` legend.",
)


@host_check("topology-disagreement")
def topology_disagreement(f: dict) -> Iterable[Finding]:
    for text in f["topology"]["disagreements"]:
        yield finding("topology-disagreement", text.split(":")[0], text,
                      evidence={"file": "/sys/bus/pci/devices", "command": "nvidia-smi topo -m",
                                "value": text})


declare(
    id="verbs-sysfs-disagreement", kind="host", severity="warning",
    title="libibverbs and sysfs disagree about an RDMA port",
    checks="Each RDMA device and port as libibverbs reports it (pyverbs, else `ibv_devinfo`) "
           "against /sys/class/infiniband: the devices present, port state, link layer, active MTU.",
    reads="/sys/class/infiniband/<dev>/ports/<port>/{state,link_layer}, the netdev MTU, and "
          "libibverbs through pyverbs or `ibv_devinfo -v` (the Features `verbs.disagreements`).",
    why="NCCL opens devices and queries ports through libibverbs, not sysfs: a device libibverbs "
        "cannot open (a missing provider library, a container without /dev/infiniband) or a port "
        "it sees in another state is not used the way the sysfs view suggests.",
    fix="install the device's rdma-core provider (libmlx5, libbnxt_re ...), map /dev/infiniband "
        "into the container, or let the port finish coming up; then probe again",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:673-732 (ncclIbInitDevices: "
           "ibv_get_device_list, then ibv_query_port per port); rdma-core libibverbs.",
)


@host_check("verbs-sysfs-disagreement")
def verbs_sysfs_disagreement(f: dict) -> Iterable[Finding]:
    via = (f.get("verbs") or {}).get("via") or "libibverbs"
    for text in f["verbs"]["disagreements"]:
        yield finding("verbs-sysfs-disagreement", text.split(":")[0], text,
                      evidence={"file": "/sys/class/infiniband", "command": via, "value": text})


declare(
    id="no-nvidia-gpu", kind="host", severity="info",
    title="No NVIDIA GPU on this host",
    checks="Whether the host has an NVIDIA GPU: a PCI display or 3D controller of vendor 0x10de, "
           "or one `nvidia-smi` lists.",
    reads="/sys/bus/pci/devices/*/{vendor,class} and the recorded `nvidia-smi` outputs.",
    why="The env is still planned (sockets, RDMA ports for UCX or MPI), but the GPU settings -- "
        "GPUDirect RDMA, GPU-NIC pairing, the topology file -- have nothing to act on.",
    fix="nothing on a CPU or management node; on a GPU node, check that the GPUs are passed "
        "through to this machine or container and that the NVIDIA driver is loaded (`nvidia-smi`)",
    source="PCI vendor id 0x10de (NVIDIA), class 0x0300/0x0302; NVIDIA nvidia-smi documentation.",
)


@host_check("no-nvidia-gpu")
def no_nvidia_gpu(f: dict) -> Iterable[Finding]:
    if not any(d["kind"] == "gpu" for d in f["pci"]["devices"]) and not f["gpus"]:
        yield finding("no-nvidia-gpu", "host", "no NVIDIA GPU found on this host",
                      evidence={"file": "/sys/bus/pci/devices", "command": "nvidia-smi", "value": 0})


def _ports(f: dict) -> list:
    return [(d["name"], p) for d in f["rdma"]["devices"] for p in d["ports"]]


def _names_only(f: dict) -> bool:
    """RDMA devices named by nvidia-smi's legend alone list no ports: the rdma source's warning says so."""
    return any(d.get("ports_known") is False for d in f["rdma"]["devices"])


declare(
    id="no-rdma-device", kind="host", severity="info",
    title="No RDMA device: NCCL would use TCP sockets",
    checks="Whether the host has an RDMA port: an entry under /sys/class/infiniband with a port.",
    reads="/sys/class/infiniband/<dev>/ports/* (the Features `rdma.devices[].ports`).",
    why="Without an RDMA device NCCL's IB transport finds nothing and inter-node traffic goes "
        "over TCP sockets: a fraction of a RoCE fabric's bandwidth, with more CPU spent per byte.",
    fix="on a node meant for the fabric: load the NIC's RDMA driver (mlx5_ib, bnxt_re, irdma), "
        "install rdma-core (the rdma_core role), map the devices into the container "
        "(/dev/infiniband, an RDMA device plugin)",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:826 ('NET/IB : No device found.') "
           "and src/transport/net_socket.cc (the fallback transport).",
)


@host_check("no-rdma-device")
def no_rdma_device(f: dict) -> Iterable[Finding]:
    if not _ports(f) and not _names_only(f) and f["rdma"].get("known", True):
        yield finding("no-rdma-device", "host", "no RDMA device found: NCCL would use TCP sockets on this host",
                      evidence={"file": "/sys/class/infiniband", "value": 0})


declare(
    id="rdma-unknown", kind="host", severity="warning",
    title="Cannot tell whether the host has RDMA devices",
    checks="Whether an empty RDMA view means \"none\": the RDMA source could not read, or "
           "`nvidia-smi topo -m` lists NIC columns that no RDMA device accounts for.",
    reads="/sys/class/infiniband, the RDMA source's status, and the NIC legend of `nvidia-smi "
          "topo -m` (the Features `rdma.known`, `rdma.unknown_reason`).",
    why="The plan then cannot choose RDMA settings (NCCL_IB_HCA, GID index, traffic class) for "
        "devices it cannot see, though NCCL on the real host may find them.",
    fix="probe where the devices are visible: on the host rather than a container without "
        "/sys/class/infiniband mapped, or capture the host with `rocetune capture` including sysfs",
    source="Linux Documentation/ABI/stable/sysfs-class-infiniband; `nvidia-smi topo -m` NIC legend.",
)


@host_check("rdma-unknown")
def rdma_unknown(f: dict) -> Iterable[Finding]:
    if not _ports(f) and not _names_only(f) and not f["rdma"].get("known", True):
        why = f["rdma"].get("unknown_reason")
        yield finding("rdma-unknown", "host", f"cannot tell whether this host has RDMA devices: {why}",
                      evidence={"file": "/sys/class/infiniband", "command": "nvidia-smi topo -m",
                                "value": why})


declare(
    id="software-rdma-device", kind="host", severity="info",
    title="A software RDMA device (Soft-RoCE or siw)",
    checks="RDMA devices that are not a PCI function or its sub-function: rdma_rxe (Soft-RoCE) or "
           "siw devices on a netdev.",
    reads="/sys/class/infiniband/<dev>/device (absent for software devices) and "
          "/sys/class/infiniband/<dev>/parent (the netdev it runs on).",
    why="A software device exercises the RDMA verbs path end to end, but the CPU does the work: "
        "no NIC offload, no line rate, no GPUDirect RDMA. It is right for a lab, wrong to "
        "benchmark a fabric with.",
    fix="nothing in a lab; on a production node, remove it (`rdma link delete rxe0`) so NCCL "
        "does not pick it beside the real NICs",
    source="Linux drivers/infiniband/sw/rxe and sw/siw; openucx/ucx #8633 (Soft-RoCE untested by UCX).",
)


@host_check("software-rdma-device")
def software_rdma_device(f: dict) -> Iterable[Finding]:
    software = [d for d in f["rdma"]["devices"] if d.get("function") == "software"]
    if software:
        names = ", ".join(f"{d['name']} on {d.get('parent_netdev') or '?'}" for d in software)
        yield finding("software-rdma-device", "host",
                      f"software RDMA device(s) {names} (Soft-RoCE or siw): a stand-in for RDMA "
                      "NICs that exercises the RDMA path; no NIC offload, speed or GPUDirect",
                      evidence={"file": ", ".join(f"/sys/class/infiniband/{d['name']}/parent" for d in software),
                                "value": [d["name"] for d in software]})


declare(
    id="roce-mtu-low", kind="host", severity="warning",
    title="A RoCE port's MTU is below 4096",
    checks="Each active RoCE port that carries traffic (addressed, not the front-end interface): "
           "the RoCE MTU its netdev MTU gives.",
    reads="/sys/class/net/<netdev>/mtu and the port's state and link layer under "
          "/sys/class/infiniband/<dev>/ports/<port> (the Features `rdma.devices[].ports[]`).",
    why="The kernel derives the RoCE MTU from the netdev MTU; a 1500-byte interface gives 1024-byte "
        "RDMA packets, four times the packets and headers of 4096 for the same data. Nodes with "
        "different RoCE MTUs can also hang NCCL's queue pairs (NCCL PR #2135).",
    fix="set the interface MTU to 4200 or more (9000 is common; the switch ports must allow it): "
        "the roce_net role, or `ip link set dev <if> mtu 9000` and the distribution's network config",
    source=_KERNEL_ROCE_MTU + "; NVIDIA/dgx-spark-playbooks PR #103 (4200 for RoCE MTU 4096).",
)


@host_check("roce-mtu-low")
def roce_mtu_low(f: dict) -> Iterable[Finding]:
    front = set(front_end(f["net"]).interfaces)  # an IPv6 RA default on a rail does not count
    addresses_of = _addresses_by_name(f)
    for name, p in _ports(f):
        if p["netdev"] in front:
            continue  # the management path carries no RDMA traffic worth a jumbo MTU
        addresses = addresses_of.get(p["netdev"])
        if addresses is not None and not any(not a["address"].startswith("fe80:") for a in addresses):
            continue  # an unaddressed port (an idle SR-IOV VF) carries no RoCE v2 traffic
        if p["link_layer"] == "Ethernet" and p["state"] == "ACTIVE" and p["roce_mtu"] and p["roce_mtu"] < 4096:
            yield finding("roce-mtu-low", f"{name}:{p['port']}",
                          f"{name}:{p['port']} RoCE MTU is {p['roce_mtu']} ({p['netdev']} MTU "
                          f"{p['netdev_mtu']}); set the interface MTU to 4200 or more for 4096",
                          evidence={"file": f"/sys/class/net/{p['netdev']}/mtu",
                                    "value": {"netdev_mtu": p["netdev_mtu"], "roce_mtu": p["roce_mtu"]}})


declare(
    id="memlock-limited", kind="host", severity="warning",
    title="Locked memory is limited where RDMA needs it unlimited",
    checks="The soft `Max locked memory` limit of the process that probed, on a host with RDMA ports.",
    reads="/proc/self/limits (the Features `kernel.memlock`).",
    why="RDMA registers (pins) every buffer it sends from; a limited RLIMIT_MEMLOCK makes "
        "ibv_reg_mr or ibv_create_qp fail, and NCCL aborts or falls back. The limit belongs to the "
        "process: a login shell, a systemd unit and a container each have their own.",
    fix="raise it where jobs start: `* soft memlock unlimited` and `* hard memlock unlimited` in "
        "/etc/security/limits.conf, LimitMEMLOCK=infinity for a systemd unit, --ulimit "
        "memlock=-1:-1 for a container (the rdma_core role sets the first)",
    source="NCCL documentation, Troubleshooting (ibv_create_qp / ibv_reg_mr failures: raise memlock); "
           "getrlimit(2) RLIMIT_MEMLOCK.",
)


@host_check("memlock-limited")
def memlock_limited(f: dict) -> Iterable[Finding]:
    memlock = f["kernel"].get("memlock")
    if _ports(f) and memlock and memlock != "unlimited":
        yield finding("memlock-limited", "host",
                      f"max locked memory is {memlock} bytes; RDMA registration needs unlimited",
                      evidence={"file": "/proc/self/limits", "value": memlock})


declare(
    id="host-flattened", kind="host", severity="warning",
    title="A virtualised or flattened PCI tree under GPU-NIC decisions",
    checks="Whether the PCI tree looks synthetic (GPUs and NICs alone on many PCI domains with no "
           "bridges, every GPU-NIC path SYS on one NUMA node, GPUs under a hypervisor behind no "
           "switch) on a host with GPUs and hardware RDMA NICs.",
    reads="The PCI tree under /sys/bus/pci/devices, /sys/devices/system/node, the hypervisor "
          "(/sys/hypervisor, the CPU flags) and `nvidia-smi topo -m` (the Features "
          "`host.virtualization`).",
    why="NCCL pairs each GPU with the NIC(s) it reads as nearest and uses GPUDirect RDMA only at "
        "PIX/PXB, both from PCI distances; a flattened tree misstates them, so NCCL may stage "
        "every transfer through host memory or cross the CPU for each GPU.",
    fix="give NCCL the real layout with NCCL_TOPO_FILE: the cloud vendor's file (Azure's "
        "/opt/microsoft/ndv4/topo.xml) or the one rule nccl-topo-file generates",
    source="NVIDIA/nccl v2.28.9-1 src/graph/paths.cc:418 (ncclTopoCheckGdr: GPUDirect RDMA up "
           "to NCCL_NET_GDR_LEVEL, PXB by default), src/graph/topo.cc:1421 (NCCL_TOPO_FILE) and "
           "src/graph/xml.cc:387 (ncclTopoGetXmlFromFile).",
)


@host_check("host-flattened")
def host_flattened(f: dict) -> Iterable[Finding]:
    text = _flattened_pairing(f)
    if text:
        yield finding("host-flattened", "host", text,
                      evidence={"file": "/sys/bus/pci/devices", "value": f["host"]["virtualization"]["reasons"]})


def _flattened_pairing(f: dict) -> Optional[str]:
    """Only where a GPU-NIC decision rests on the PCI tree: without a GPU or without a hardware
    RDMA NIC (a VM with one GPU and virtio-net) nothing NCCL decides depends on it, and `probe`
    only says the host is a VM."""
    virt = f["host"]["virtualization"]
    nics = sorted((d["name"] for d in f["rdma"]["devices"] if d.get("function") != "software"), key=natural_key)
    if not virt["flattened"] or not f["gpus"] or not nics:
        return None
    shown = ", ".join(nics[:4]) + (f" and {len(nics) - 4} more" if len(nics) > 4 else "")
    return ("PCI topology looks virtualised or flattened (" + "; ".join(virt["reasons"]) + "): "
            f"NCCL's pairing of {len(f['gpus'])} GPU(s) with RDMA NIC(s) {shown}, and whether it "
            "uses GPUDirect RDMA, follow PCI distances this tree misstates: NCCL_TOPO_FILE "
            "(rule nccl-topo-file) gives NCCL the real layout")


def _addresses_by_name(f: dict) -> Dict[str, List[dict]]:
    """Each interface's addresses (the first interface of a name); absent: the interface is unknown."""
    out: Dict[str, List[dict]] = {}
    for i in f["net"].get("interfaces") or []:
        out.setdefault(i["name"], i.get("addresses") or [])
    return out


# Where a probe reads what the plan rests on. A denied path elsewhere -- another user's home in
# the NCCL library search -- costs the system plan nothing (that user's library is that user's).
_EVIDENCE_TREES = ("/sys/", "/proc/", "/etc/", "/dev/", "/run/", "/var/lib/rocetune/", "/commands/",
                   "/recorded/")
_DENIED = re.compile(r"cannot (?:read|list) (/\S*): Permission denied\Z")


def unread_evidence(f: dict) -> List[str]:
    """The host paths the probe may not read (permission denied) where the plan's evidence is."""
    out = set()
    for status in (f.get("sources") or {}).values():
        for line in list(status.get("warnings") or []) + [status.get("reason") or ""]:
            m = _DENIED.search(line)
            if m and (m.group(1) == "/" or (m.group(1) + "/").startswith(_EVIDENCE_TREES)):
                out.add(m.group(1))
    return sorted(out)


declare(
    id="root-unreadable", kind="host", severity="error",
    title="The probe could not read part of the host: the result is partial",
    checks="Whether any file or directory the probe reads for the plan's evidence (under /sys, "
           "/proc, /etc, /dev, /run, the recorded commands of a capture) was refused to the user "
           "running it.",
    reads="The sources' warnings in the Features (`sources.*.warnings`): each `cannot read` or "
          "`cannot list` with `Permission denied`.",
    why="A directory the probe may not list reads as empty: without /sys/class/infiniband a host "
        "with four RDMA NICs plans as one without RDMA (4 variables instead of 9, NCCL over TCP). "
        "The plan is then not the host's, and a capture of it replays the same gap anywhere.",
    fix="run as root, or as a user who may read the whole root; `env -o` writes nothing meanwhile",
    source="open(2)/getdents(2) EACCES; rocetune.hostfs.root.HostRoot turns it into a warning, never "
           "into an empty answer taken as the host's.",
)


@host_check("root-unreadable")
def root_unreadable(f: dict) -> Iterable[Finding]:
    denied = unread_evidence(f)
    if denied:
        shown = ", ".join(denied[:4]) + (f" and {len(denied) - 4} more" if len(denied) > 4 else "")
        yield finding("root-unreadable", "host",
                      f"partial result: {len(denied)} path(s) the plan reads could not be read (permission "
                      f"denied): {shown}; what they hold is missing from the plan",
                      evidence={"file": denied[0], "value": denied})
