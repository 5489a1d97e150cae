"""Derived topology: which GPU is which PCI device, GPU-NIC path types, nearest NICs, and
whether the PCI tree is virtualised or flattened."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..model.vocab import PATH_ORDER, natural_key, path_type

_NV_RE = re.compile(r"^NV(\d+)\Z")


def _gpu_bdfs(pci: dict, gpu: dict) -> Tuple[Dict[int, Optional[str]], List[str]]:
    """nvidia-smi index -> PCI address, and warnings about how it was decided."""
    sysfs = sorted(d["bdf"] for d in pci["devices"] if d["kind"] == "gpu")
    known = set(sysfs)
    matrix = gpu.get("matrix")
    warnings = []
    if gpu.get("bus_ids"):
        out = {}
        for idx, bdf in gpu["bus_ids"].items():
            out[int(idx)] = bdf if bdf in known else None
            if bdf not in known and known:
                warnings.append(f"GPU{idx} bus id {bdf} is not on this host's PCI tree")
        for g in (matrix or {}).get("gpus", []):
            out.setdefault(g["index"], None)
        return out, warnings
    if matrix is None:
        return {i: b for i, b in enumerate(sysfs)}, warnings
    indices = [g["index"] for g in matrix["gpus"]]
    if len(indices) == len(sysfs):
        return {i: sysfs[n] for n, i in enumerate(sorted(indices))}, warnings
    if sysfs:
        warnings.append(f"nvidia-smi shows {len(indices)} GPUs and PCI {len(sysfs)}, without bus ids: "
                        "GPUs not matched to PCI devices")
    return {i: None for i in indices}, warnings


def derive_topology(pci: dict, rdma: dict, gpu: dict, host: dict):
    by_bdf = {d["bdf"]: d for d in pci["devices"]}
    matrix = gpu.get("matrix") or {}
    bdf_of, warnings = _gpu_bdfs(pci, gpu)
    nic_label = {n["name"]: f"NIC{n['index']}" for n in matrix.get("nics", []) if n.get("name")}
    rdma_by_name = {d["name"]: d for d in rdma.get("devices", [])}
    numa_cpus = {n["id"]: n["cpulist"] for n in host.get("numa_nodes", [])}
    single_node = len(numa_cpus) <= 1
    affinity = {g["index"]: g for g in matrix.get("gpus", [])}
    links = matrix.get("links", {})
    pairs, disagreements = [], []
    nic_names = sorted(set(rdma_by_name) | set(nic_label), key=natural_key)
    gpus = []
    for idx in sorted(bdf_of):
        bdf = bdf_of[idx]
        dev = by_bdf.get(bdf) if bdf else None
        row = links.get(f"GPU{idx}", {})
        ranked = []
        for name in nic_names:
            nic_dev = by_bdf.get((rdma_by_name.get(name) or {}).get("pci") or "")
            sysfs_path = path_type(dev, nic_dev, single_node) if dev and nic_dev else None
            smi_path = row.get(nic_label[name]) if name in nic_label else None
            path = sysfs_path or smi_path
            if path is None:
                continue
            if sysfs_path and smi_path and sysfs_path != smi_path:
                disagreements.append(f"GPU{idx}-{name}: sysfs says {sysfs_path}, nvidia-smi says {smi_path}")
            pairs.append({"gpu": idx, "nic": name, "path": path, "sysfs": sysfs_path, "nvidia_smi": smi_path})
            ranked.append((path, name))
        gpus.append({
            "index": idx,
            "bdf": bdf,
            "name": gpu.get("names", {}).get(str(idx)),
            "numa_node": _gpu_numa(dev, affinity.get(idx)),
            "cpu_affinity": _gpu_cpus(dev, affinity.get(idx), numa_cpus),
            "nvlink": {k[3:]: int(m.group(1)) for k, v in sorted(row.items())
                       if k.startswith("GPU") and (m := _NV_RE.match(v))},
            "nearest_nics": _nearest(ranked, rdma_by_name),
        })
    return gpus, {"gpu_nic": pairs, "disagreements": sorted(disagreements)}, warnings


def _gpu_numa(dev: Optional[dict], smi: Optional[dict]) -> Optional[int]:
    if dev and dev.get("numa_node") is not None:
        return dev["numa_node"]
    value = (smi or {}).get("numa_affinity")
    return int(value) if value and value.isdigit() else None


def _gpu_cpus(dev: Optional[dict], smi: Optional[dict], numa_cpus: dict) -> Optional[str]:
    if smi and smi.get("cpu_affinity") and smi["cpu_affinity"] != "N/A":
        return smi["cpu_affinity"]
    node = dev.get("numa_node") if dev else None
    return numa_cpus.get(node) if node is not None else None


def _nearest(ranked: List[Tuple[str, str]], rdma_by_name: dict) -> List[dict]:
    order = {p: i for i, p in enumerate(PATH_ORDER)}
    known = [(order[p], n) for p, n in ranked if p in order]
    if not known:
        return []
    best = min(r for r, _ in known)
    out = []
    for rank, name in sorted(known):
        if rank != best:
            continue
        dev = rdma_by_name.get(name)
        ports = dev["ports"] if dev and dev["ports"] else [{}]  # no ports: named by a legend
        for p in ports:
            out.append({"device": name, "port": p.get("port"), "path": PATH_ORDER[best],
                        "netdev": p.get("netdev"), "link_layer": p.get("link_layer"),
                        "state": p.get("state")})
    return out


def virtualization(host: dict, pci: dict, gpus: List[dict], topology: dict) -> dict:
    reasons = []
    devs = [d for d in pci["devices"] if d["kind"] in ("gpu", "nic")]
    domains = {d["bdf"].split(":")[0] for d in devs}
    if devs and len(domains) > 2 and all(d["parent"] is None for d in devs):
        reasons.append(f"GPUs and NICs sit alone on {len(domains)} synthetic PCI domains with no bridges")
    pairs = topology["gpu_nic"]
    numa_ids = {n["id"] for n in host.get("numa_nodes", [])}
    if pairs and all(p["path"] == "SYS" for p in pairs) and len(numa_ids) <= 1:
        reasons.append("every GPU-NIC path is SYS on a single NUMA node")
    if host.get("hypervisor") and gpus and any(
            d["kind"] == "gpu" and not d["switches"] for d in devs):
        reasons.append(f"running under {host['hypervisor']} with GPUs not behind any PCIe switch")
    return {"hypervisor": host.get("hypervisor"), "flattened": bool(reasons and gpus), "reasons": reasons}


def rdma_evidence(status: dict, rdma: dict, gpu: dict) -> Tuple[bool, Optional[str]]:
    """Whether the Features can say if this host has RDMA devices: (known, why not).

    Unknown when the RDMA source could not read, or when nvidia-smi shows NIC columns that the
    host's RDMA devices do not account for (a container without the devices mapped, or a pasted
    matrix whose legend is missing)."""
    if not status.get("ok", True):
        return False, "the RDMA source could not read the host (its warning says why)"
    if rdma.get("devices"):
        return True, None
    nics = ((gpu or {}).get("matrix") or {}).get("nics") or []
    if nics:
        named = sorted((n["name"] for n in nics if n.get("name")), key=natural_key)
        if named:
            return False, ("nvidia-smi lists NICs (" + ", ".join(named[:4]) + ") that the host's RDMA "
                           "devices do not show: RDMA devices not mapped into this container?")
        return False, (f"nvidia-smi shows {len(nics)} NIC column(s) without a legend naming them, "
                       "and no RDMA device is visible")
    return True, None
