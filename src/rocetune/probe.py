"""Run every source through one root and merge them into the Features document."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from . import __version__
from .hostfs import HostRoot, ProbeContext, Recorder, runner_for
from .sources import gpu as gpu_source
from .sources import host as host_source
from .sources import kernel as kernel_source
from .sources import net as net_source
from .sources import pci as pci_source
from .sources import rdma as rdma_source
from .sources import verbs as verbs_source
from .sources.pci import PATH_ORDER, path_type

SCHEMA_VERSION = 1
_NV_RE = re.compile(r"^NV(\d+)$")


def _run(name: str, ctx: ProbeContext, statuses: dict, fn, *args):
    sctx = ctx.for_source()
    try:
        data = fn(sctx, *args)
    except Exception as exc:  # a source fails alone; the rest of the probe goes on
        sctx.status.ok = False
        sctx.status.reason = f"{type(exc).__name__}: {exc}"
        data = None
    statuses[name] = sctx.status.to_dict()
    return data


def collect_features(root: str = "/", recorder: Optional[Recorder] = None, runner=None) -> dict:
    host_root = HostRoot(root, recorder=recorder)
    ctx = ProbeContext(host_root, runner if runner is not None else runner_for(host_root, recorder))
    st: Dict[str, dict] = {}
    host = _run("host", ctx, st, host_source.probe) or {}
    pci = _run("pci", ctx, st, pci_source.probe) or {"devices": []}
    net = _run("net", ctx, st, net_source.probe) or {"interfaces": [], "default_route_interfaces": []}
    rdma = _run("rdma", ctx, st, rdma_source.probe, net) or {"devices": []}
    verbs = _run("verbs", ctx, st, verbs_source.probe, rdma) or {"via": None, "devices": [],
                                                                 "disagreements": []}
    n_gpus = sum(1 for d in pci["devices"] if d["kind"] == "gpu")
    gpu = _run("gpu", ctx, st, gpu_source.probe, n_gpus) or {"matrix": None, "bus_ids": {}, "names": {}}
    kernel = _run("kernel", ctx, st, kernel_source.probe) or {}
    gpus, topology, warnings = derive_topology(pci, rdma, gpu, host)
    st["gpu"]["warnings"] = sorted(set(st["gpu"]["warnings"]) | set(warnings))
    host["virtualization"] = virtualization(host, pci, gpus, topology)
    features = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rocetune", "version": __version__},
        "host": host,
        "sources": st,
        "pci": pci,
        "net": net,
        "rdma": rdma,
        "verbs": verbs,
        "gpu": gpu,
        "gpus": gpus,
        "topology": topology,
        "kernel": kernel,
    }
    features["findings"] = findings(features)
    return features


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
    nic_names = sorted(set(rdma_by_name) | set(nic_label), key=rdma_source.natural_key)
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
        ports = dev["ports"] if dev else [{}]
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


def _finding(fid: str, severity: str, subject: str, message: str) -> dict:
    return {"id": fid, "severity": severity, "subject": subject, "message": message}


def findings(f: dict) -> List[dict]:
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
    if not ports:
        out.append(_finding("no-rdma-device", "info", "host",
                            "no RDMA device found: NCCL would use TCP sockets on this host"))
    front_end = set(f["net"]["default_route_interfaces"])
    for name, p in ports:
        if p["netdev"] in front_end:
            continue  # the management path carries no RDMA traffic worth a jumbo MTU
        if p["link_layer"] == "Ethernet" and p["state"] == "ACTIVE" and p["roce_mtu"] and p["roce_mtu"] < 4096:
            out.append(_finding("roce-mtu-low", "warning", f"{name}:{p['port']}",
                                f"{name}:{p['port']} RoCE MTU is {p['roce_mtu']} ({p['netdev']} MTU "
                                f"{p['netdev_mtu']}); set the interface MTU to 4200 or more for 4096"))
    memlock = f["kernel"].get("memlock")
    if ports and memlock and memlock != "unlimited":
        out.append(_finding("memlock-limited", "warning", "host",
                            f"max locked memory is {memlock} bytes; RDMA registration needs unlimited"))
    if f["host"]["virtualization"]["flattened"]:
        out.append(_finding("host-flattened", "warning", "host",
                            "PCI topology looks virtualised or flattened: "
                            + "; ".join(f["host"]["virtualization"]["reasons"])))
    return sorted(out, key=lambda x: (x["id"], x["subject"]))


def warnings_of(f: dict) -> List[str]:
    out = []
    for name, st in sorted(f["sources"].items()):
        if not st["ok"]:
            out.append(f"{name}: {st['reason']}")
        out.extend(f"{name}: {w}" for w in st["warnings"])
    out.extend(x["message"] for x in f["findings"] if x["severity"] in ("warning", "error"))
    return out


def summary(f: dict, verbose: int = 0) -> str:
    h = f["host"]
    lines = [f"host {h.get('hostname') or '?'}  kernel {h.get('kernel_release') or '?'}  "
             f"cpus {h.get('logical_cpus') or '?'}  numa nodes {len(h.get('numa_nodes', []))}"]
    gpus = f["gpus"]
    ports = [(d, p) for d in f["rdma"]["devices"] for p in d["ports"]]
    if not gpus and not ports:
        lines.append("no NVIDIA GPU and no RDMA device: nothing for NCCL to tune beyond TCP sockets")
    if gpus:
        lines.append(f"{len(gpus)} GPU(s)")
        for g in gpus:
            near = ", ".join(f"{n['device']}:{n['port']}" if n["port"] else n["device"]
                             for n in g["nearest_nics"]) or "none"
            path = g["nearest_nics"][0]["path"] if g["nearest_nics"] else "-"
            lines.append(f"  GPU{g['index']} {g['bdf'] or '?'} numa {g['numa_node']}  nearest NIC {path}: {near}")
    if ports:
        lines.append(f"{len(ports)} RDMA port(s)")
        for d, p in ports:
            gids = ",".join(str(i) for i in p["roce_v2_ipv4_gids"]) or "-"
            lines.append(f"  {d['name']}:{p['port']} {p['state'] or '?'} {p['link_layer'] or '?'} "
                         f"{p['rate'] or '?'} netdev {p['netdev'] or '-'} mtu {p['netdev_mtu'] or '-'} "
                         f"roce-v2-ipv4-gids {gids}")
    nets = [i for i in f["net"]["interfaces"] if i["default_route"]]
    if nets:
        lines.append("default route via " + ", ".join(i["name"] for i in nets))
    for x in f["findings"]:
        lines.append(f"[{x['severity']}] {x['id']}: {x['message']}")
    if verbose:
        for name, st in sorted(f["sources"].items()):
            lines.append(f"source {name}: {'ok' if st['ok'] else 'FAILED: ' + str(st['reason'])}")
    return "\n".join(lines) + "\n"
