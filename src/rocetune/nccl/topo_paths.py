"""GPU-NIC path types over an NCCL topology file's tree, as NCCL classifies them.

NCCL builds its graph from the file (a `<cpu>` per NUMA node, each `<pci>` a PCI node linked
to its parent, CPUs linked to each other by SYS links) and sets each path's type to the worst
link on it (src/graph/paths.cc ncclTopoSetPaths; v2.28.9-1 lines 91-101, the same from 2.18
to 2.30.7):

* a PCI link is PIX;
* a link between two PCI nodes (a second switch level) makes it PXB;
* a PCI link to or from a CPU makes it PHB;
* the link between two CPUs is SYS.

So a GPU and a NIC under one bridge are PIX, under nested bridges with a common one PXB, only
under the same `<cpu>` PHB (NCCL has no NODE: nvidia-smi's PHB and NODE are both PHB to it),
under different `<cpu>`s SYS. NCCL's later rewrites (PXN through a peer GPU over NVLink, C2C,
flattened Broadcom switches) are not modelled: they never make a PHB/SYS path PIX/PXB.

Devices are matched by bus id (the file's `busid` against the host's GPU and RDMA-device PCI
addresses, compared as numbers: NVML's 8-digit domains match 4-digit ones), and a NIC also by a
`<net name>` under its `<pci>`.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .topo import TopoNode, busid_key

Chain = Tuple[TopoNode, ...]


def _index(tree: TopoNode) -> Tuple[Dict[tuple, Chain], Dict[str, Chain]]:
    by_bus: Dict[tuple, Chain] = {}
    by_net: Dict[str, Chain] = {}
    for node, parents in tree.walk():
        if node.tag == "pci":
            key = busid_key(node.attrs.get("busid"))
            if key is not None:
                by_bus.setdefault(key, parents + (node,))
        elif node.tag == "net" and node.attrs.get("name"):
            pci = [i for i, p in enumerate(parents) if p.tag == "pci"]
            if pci:
                by_net.setdefault(node.attrs["name"], parents[:pci[-1] + 1])
    return by_bus, by_net


def _cpu(chain: Chain) -> Optional[TopoNode]:
    return next((p for p in chain if p.tag == "cpu"), None)


def classify(a: Chain, b: Chain) -> str:
    """The NCCL path type between the last nodes of two chains (root first)."""
    ca, cb = _cpu(a), _cpu(b)
    if ca is None or cb is None:
        return "SYS"
    if ca is not cb and (ca.attrs.get("numaid"), ca.attrs.get("host_hash")) != \
            (cb.attrs.get("numaid"), cb.attrs.get("host_hash")):
        return "SYS"
    pa = [n for n in a[a.index(ca) + 1:]]
    pb = [n for n in b[b.index(cb) + 1:]]
    common = 0
    for x, y in zip(pa, pb):
        if x is not y:
            break
        common += 1
    if common == 0:
        return "PHB"
    # bridges on the way: the common one plus each level below it on either side
    bridges = 1 + max(0, len(pa) - common - 1) + max(0, len(pb) - common - 1)
    return "PIX" if bridges <= 1 else "PXB"


def gpu_nic_paths(tree: TopoNode, gpus: Dict[int, str], nics: Dict[str, Optional[str]]
                  ) -> Tuple[Dict[str, Dict[int, str]], List[int], List[str]]:
    """({RDMA device: {GPU index: path}} for the pairs the file places, the GPUs and the
    devices the file does not place). `gpus`: index -> PCI address; `nics`: name -> address."""
    by_bus, by_net = _index(tree)
    g_chain = {i: by_bus.get(busid_key(b) or ()) for i, b in gpus.items()}
    n_chain = {}
    for name, bdf in nics.items():
        n_chain[name] = by_bus.get(busid_key(bdf) or ()) if bdf else None
        if n_chain[name] is None:
            n_chain[name] = by_net.get(name)
    out: Dict[str, Dict[int, str]] = {}
    for name, nc in n_chain.items():
        if nc is None:
            continue
        for i, gc in g_chain.items():
            if gc is not None:
                out.setdefault(name, {})[i] = classify(gc, nc)
    missing_g = sorted(i for i, c in g_chain.items() if c is None)
    missing_n = sorted(n for n, c in n_chain.items() if c is None)
    return out, missing_g, missing_n


# NCCL's path types as the numbers its log prints ("distance %d <= %d"), per release: the PATH_*
# defines of src/graph/topo.h at each tag (first tag of each numbering; v2.6.4-1 :48, v2.8.3-1 :51,
# v2.12.7-1 :52, v2.18.1-1 :54, v2.26.2-1 :59, v2.27.3-1 :62, v2.27.5-1 :62). The same number means
# another path in another release: PXB is 4 up to 2.25, 5 from 2.26.2.
PATH_NUMBERING = (
    ((2, 6, 4), ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "NET")),
    ((2, 8, 3), ("LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS")),
    ((2, 12, 7), ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS")),
    ((2, 18, 1), ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS")),
    ((2, 26, 2), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS")),
    ((2, 27, 3), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS")),
    ((2, 27, 5), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")),
)


def path_name(number: Optional[int], version: Optional[Tuple[int, ...]]) -> Optional[str]:
    """The path type NCCL `version` means by `number` in its log; None when either is unknown."""
    if number is None or version is None or tuple(version)[:3] < PATH_NUMBERING[0][0]:
        return None
    names = [n for first, n in PATH_NUMBERING if tuple(version)[:3] >= first][-1]
    return names[number] if 0 <= number < len(names) else None
