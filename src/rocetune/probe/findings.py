"""Host findings: what the probe saw that a person should act on, and the warnings to print."""

from __future__ import annotations

from typing import Dict, List, Optional

from ..model.finding import Finding
from ..model.vocab import natural_key
from ..model.frontend import front_end


def _finding(fid: str, severity: str, subject: str, message: str) -> dict:
    return Finding(fid, severity, subject, message).to_dict()


def host_findings(f: dict) -> List[dict]:
    out = []
    for d in f["pci"]["devices"]:
        link = d.get("link") or {}
        if d["kind"] in ("gpu", "nic") and link.get("degraded"):
            out.append(_finding("pci-link-degraded", "warning", d["bdf"],
                                f"{d['kind'].upper()} {d['bdf']} runs at {link['speed']} x{link['width']}, "
                                f"capable of {link['max_speed']} x{link['max_width']}"))
    for text in f["topology"]["disagreements"]:
        out.append(_finding("topology-disagreement", "warning", text.split(":")[0], text))
    for text in f["verbs"]["disagreements"]:
        out.append(_finding("verbs-sysfs-disagreement", "warning", text.split(":")[0], text))
    if not any(d["kind"] == "gpu" for d in f["pci"]["devices"]) and not f["gpus"]:
        out.append(_finding("no-nvidia-gpu", "info", "host", "no NVIDIA GPU found on this host"))
    ports = [(d["name"], p) for d in f["rdma"]["devices"] for p in d["ports"]]
    # Devices named by nvidia-smi's legend alone list no ports: the rdma source's warning says so.
    names_only = any(d.get("ports_known") is False for d in f["rdma"]["devices"])
    if not ports and not names_only and f["rdma"].get("known", True):
        out.append(_finding("no-rdma-device", "info", "host",
                            "no RDMA device found: NCCL would use TCP sockets on this host"))
    elif not ports and not names_only:
        out.append(_finding("rdma-unknown", "warning", "host",
                            f"cannot tell whether this host has RDMA devices: {f['rdma'].get('unknown_reason')}"))
    software = [d for d in f["rdma"]["devices"] if d.get("function") == "software"]
    if software:
        names = ", ".join(f"{d['name']} on {d.get('parent_netdev') or '?'}" for d in software)
        out.append(_finding("software-rdma-device", "info", "host",
                            f"software RDMA device(s) {names} (Soft-RoCE or siw): a stand-in for RDMA "
                            "NICs that exercises the RDMA path; no NIC offload, speed or GPUDirect"))
    front = set(front_end(f["net"]).interfaces)  # an IPv6 RA default on a rail does not count
    addresses_of = _addresses_by_name(f)
    for name, p in ports:
        if p["netdev"] in front:
            continue  # the management path carries no RDMA traffic worth a jumbo MTU
        addresses = addresses_of.get(p["netdev"])
        if addresses is not None and not any(not a["address"].startswith("fe80:") for a in addresses):
            continue  # an unaddressed port (an idle SR-IOV VF) carries no RoCE v2 traffic
        if p["link_layer"] == "Ethernet" and p["state"] == "ACTIVE" and p["roce_mtu"] and p["roce_mtu"] < 4096:
            out.append(_finding("roce-mtu-low", "warning", f"{name}:{p['port']}",
                                f"{name}:{p['port']} RoCE MTU is {p['roce_mtu']} ({p['netdev']} MTU "
                                f"{p['netdev_mtu']}); set the interface MTU to 4200 or more for 4096"))
    memlock = f["kernel"].get("memlock")
    if ports and memlock and memlock != "unlimited":
        out.append(_finding("memlock-limited", "warning", "host",
                            f"max locked memory is {memlock} bytes; RDMA registration needs unlimited"))
    flattened = _flattened_pairing(f)
    if flattened:
        out.append(_finding("host-flattened", "warning", "host", flattened))
    return sorted(out, key=lambda x: (x["id"], x["subject"]))


def _flattened_pairing(f: dict) -> Optional[str]:
    """The host-flattened warning, only where a GPU-NIC decision rests on the PCI tree: NCCL
    pairs each GPU with the NIC(s) it reads as nearest and uses GPUDirect RDMA only at PIX/PXB
    (graph/paths.cc ncclTopoCheckGdr), both from the PCI distances a flattened tree misstates.
    Without a GPU or without a hardware RDMA NIC (a VM with one GPU and virtio-net) nothing
    NCCL decides depends on it, and `probe` only says the host is a VM."""
    virt = f["host"]["virtualization"]
    nics = sorted((d["name"] for d in f["rdma"]["devices"] if d.get("function") != "software"), key=natural_key)
    if not virt["flattened"] or not f["gpus"] or not nics:
        return None
    shown = ", ".join(nics[:4]) + (f" and {len(nics) - 4} more" if len(nics) > 4 else "")
    return ("PCI topology looks virtualised or flattened (" + "; ".join(virt["reasons"]) + "): "
            f"NCCL's pairing of {len(f['gpus'])} GPU(s) with RDMA NIC(s) {shown}, and whether it "
            "uses GPUDirect RDMA, follow PCI distances this tree misstates: NCCL_TOPO_FILE "
            "(rule nccl-topo-file) gives NCCL the real layout")


def source_warnings(f: dict) -> List[str]:
    """What the sources could not read, one line each ("<source>: <why>")."""
    out = []
    for name, st in sorted(f["sources"].items()):
        if not st["ok"]:
            out.append(f"{name}: {st['reason']}")
        out.extend(f"{name}: {w}" for w in st["warnings"])
    return out


def _addresses_by_name(f: dict) -> Dict[str, List[dict]]:
    """Each interface's addresses (the first interface of a name); absent: the interface is unknown."""
    out: Dict[str, List[dict]] = {}
    for i in f["net"].get("interfaces") or []:
        out.setdefault(i["name"], i.get("addresses") or [])
    return out
