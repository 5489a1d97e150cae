"""Which RDMA ports are the compute fabric, stage by stage (`select`): usable ports, one port
per physical link, the front end only where nothing else is, GPU-local ports first, one fabric,
no slow, management-subnet or unaddressed port; each stage says what it left out and why, and
what it doubts. `select_names_only` answers for devices nvidia-smi topo -m's legend alone names.
Everything is read from the host's view (`View`: HostView), which caches the answer."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Protocol, Tuple

from ..model.frontend import FrontEnd
from ..model.record import Record
from ..model.vocab import natural_key
from .ports import VERBS_LINK_LAYERS, Doubt, Port, Selection

# A role in an RDMA device's name (udev or vendor naming): storage or management, not a compute rail.
_ROLE_WORD = re.compile(r"(?:^|[_\-.0-9])(storage|stor|mgmt|mgt|management)(?=$|[_\-.0-9])", re.I)


class View(Protocol):
    """What the selection reads of a host (analysis.hostview.HostView)."""

    f: dict
    front: FrontEnd
    gpus: List[dict]

    def ports(self) -> List[Port]: ...

    def gpu_paths(self) -> Dict[str, Dict[int, str]]: ...

    def rdma_visible(self) -> Tuple[bool, Optional[str]]: ...

    def frontend_reason(self, port: Port) -> Optional[str]: ...

    def mgmt_subnet_reason(self, port: Port) -> Optional[str]: ...


class _Verdicts(Record):
    """What the selection's stages say: ports left out (with why), doubts, notes."""
    excluded: List[Tuple[Port, str]]
    doubts: List[Doubt]
    notes: List[str]
    _fields = ("excluded", "doubts", "notes")

    def __init__(self, excluded: Optional[List[Tuple[Port, str]]] = None,
                 doubts: Optional[List[Doubt]] = None, notes: Optional[List[str]] = None) -> None:
        self.excluded = [] if excluded is None else excluded
        self.doubts = [] if doubts is None else doubts
        self.notes = [] if notes is None else notes

    def doubt(self, text: str, check_id: str = "compute-ports-uncertain", subject: str = "compute ports",
              severity: str = "warning") -> None:
        self.doubts.append(Doubt(check_id=check_id, severity=severity, subject=subject, text=text))


def select_names_only(view: View) -> Selection:
    """RDMA devices that only nvidia-smi topo -m's NIC legend names (pasted outputs, no
    sysfs, no ibv_devinfo): each device's path to every GPU is known, its ports, state and
    link layer are not. A device PIX/PXB to some GPU is a compute NIC; one that no GPU
    reaches at PIX/PXB (NODE/SYS/PHB to all) is front-end or storage. Without any GPU-local
    device nothing tells compute from front-end, and nothing is chosen."""
    devices = view.ports()
    local = [p for p in devices if p.gpu_local]
    if not local:
        names = ", ".join(p.device for p in devices)
        return Selection([], [], [], [], False,
                         f"nvidia-smi topo -m names {names} but none is PIX/PXB to a GPU, and "
                         "without sysfs or ibv_devinfo their state and link layer are unknown: "
                         "compute and front-end NICs cannot be told apart", names_only=True)
    excluded = [(p, f"no GPU at PIX/PXB (nearest GPU path {p.best_path or 'unknown'}) while "
                    "GPU-local devices exist: front-end or storage NIC")
                for p in devices if not p.gpu_local]
    local, side = _drop_side_nics(view, local)
    excluded += side
    covered = {g for p in local for g in p.local_gpus}
    missing = sorted(int(g["index"]) for g in view.gpus if int(g["index"]) not in covered)
    gpus = ", ".join(f"GPU{g}" for g in missing)
    uncertain = ([Doubt(check_id="gpu-without-rail", severity="warning", subject=gpus,
                        text="no GPU-local RDMA device for " + gpus)] if missing else [])
    notes = ["RDMA devices named by nvidia-smi topo -m alone: each chosen device is given "
             "without a port (NCCL then takes every ACTIVE port of it); its link layer is "
             "unknown, so no RoCE setting (GID index, traffic class, queue pairs) is planned"]
    return Selection(local, excluded, uncertain, notes, True, locality_used=True, names_only=True)


def _drop_side_nics(view: View, local: List[Port]) -> Tuple[List[Port], List[Tuple[Port, str]]]:
    """Storage and management NICs among the GPU-near devices of a legend-only topo -m: where
    every GPU has a PIX device of its own (one rail per GPU), a further device that is PIX to
    no GPU -- PXB to several, behind a switch the GPUs share -- is not a rail; and a device
    whose name gives it a storage or management role is not one either, as long as the GPUs
    it is near keep another PIX/PXB device. (kept, [(device, why)])."""
    paths = view.gpu_paths()
    gpus = [int(g["index"]) for g in view.gpus]
    pix = {g: [p for p in local if paths.get(p.device, {}).get(g) == "PIX"] for g in gpus}
    out: List[Tuple[Port, str]] = []
    kept = list(local)
    if gpus and all(pix[g] for g in gpus):
        for p in local:
            if not any(paths.get(p.device, {}).get(g) == "PIX" for g in gpus):
                gpus_near = ", ".join(f"GPU{g}" for g in p.local_gpus)
                out.append((p, f"PIX to no GPU (PXB to {gpus_near}) while every GPU has a PIX device of "
                               "its own: a storage or management NIC behind a shared PCIe switch, not a rail"))
        kept = [p for p in kept if p not in [x for x, _ in out]]
    for p in list(kept):
        m = _ROLE_WORD.search(p.device)
        if not m:
            continue
        others = [q for q in kept if q is not p]
        if all(any(g in q.local_gpus for q in others) for g in p.local_gpus):
            out.append((p, f"its name says '{m.group(1)}' (a storage or management role) and the GPUs near it "
                           "have another PIX/PXB device"))
            kept.remove(p)
    return kept, out


def select(view: View) -> Selection:
    """The compute ports, stage by stage: each stage drops ports with the reason, or doubts
    the choice, into `said`."""
    visible, hidden = view.rdma_visible()
    if not visible:
        return Selection([], [], [], [], False, hidden)
    said = _Verdicts()
    _doubt_the_front_end(view, said)
    candidates, front = _usable_ports(view, said)
    candidates = _one_port_per_link(candidates, said)
    candidates, converged = _fall_back_to_converged(view, candidates, front, said)
    if not candidates:
        _doubt_unusable_local_ports(view, [], said)
        return Selection([], said.excluded, said.doubts, said.notes, True)
    pool, locality = _prefer_gpu_local(view, candidates, said)
    pool = _keep_one_fabric(view, pool, said)
    pool = _drop_slow_ports(pool, said)
    pool = _drop_management_subnet_ports(view, pool, said)
    pool = _drop_roce_ports_without_address(pool, said)
    _doubt_unusable_local_ports(view, pool, said)
    if locality and len(view.gpus) > 1:
        _doubt_uneven_rails(view, pool, said)
    chosen = sorted(pool, key=lambda p: (natural_key(p.device), p.port))
    converged = [(p, why) for p, why in converged if p in chosen]
    return Selection(chosen, said.excluded, said.doubts, said.notes, True, locality_used=locality,
                     converged=converged)


def _doubt_the_front_end(view: View, said: _Verdicts) -> None:
    """The front end's own doubts count where its choice touches an RDMA port."""
    routed = set((view.f.get("net") or {}).get("default_route_interfaces") or [])
    if any(p.netdev in routed for p in view.ports()):
        for text in view.front.doubts:
            said.doubt(text, subject="front end")
        said.notes.extend(view.front.notes)


def _usable_ports(view: View, said: _Verdicts) -> Tuple[List[Port], List[Tuple[Port, str]]]:
    """ACTIVE IB/RoCE ports: (candidates, front-end ports with the reason they are)."""
    candidates: List[Port] = []
    front: List[Tuple[Port, str]] = []
    for p in view.ports():
        if p.link_layer not in VERBS_LINK_LAYERS:
            said.excluded.append((p, f"link layer {p.link_layer or 'unknown'}: not an InfiniBand/RoCE "
                                     "port NCCL's verbs transport can use"))
            continue
        if p.state != "ACTIVE":
            said.excluded.append((p, f"port state {p.state or 'unknown'}: NCCL only uses ACTIVE ports"))
            continue
        why = view.frontend_reason(p)
        if why:
            front.append((p, why))
            continue
        candidates.append(p)
    return candidates, front


def _fall_back_to_converged(view: View, candidates: List[Port], front: List[Tuple[Port, str]],
                            said: _Verdicts) -> Tuple[List[Port], List[Tuple[Port, str]]]:
    """(candidates, converged front-end ports). NCCL's IB transport takes every ACTIVE IB/RoCE
    port (net_ib.cc ncclIbInit): with no other port usable, the front-end port is its fabric
    (a converged port); otherwise the front-end ports are left out."""
    if not candidates and front:
        return _one_port_per_link([p for p, _ in front], said), front
    said.excluded.extend(front)
    return candidates, []


def _prefer_gpu_local(view: View, candidates: List[Port], said: _Verdicts) -> Tuple[List[Port], bool]:
    """(pool, locality used): the ports PIX/PXB to a GPU where there are any, else all."""
    local = [p for p in candidates if p.gpu_local]
    if local:
        for p in candidates:
            if not p.gpu_local:
                said.excluded.append((p, f"no GPU at PIX/PXB (nearest GPU path {p.best_path or 'unknown'}) "
                                         "while GPU-local ports exist: storage or front-end NIC"))
        return local, True
    if view.gpus:
        said.notes.append("no RDMA port is PIX/PXB to a GPU in the PCI tree this host shows: without a "
                          "topology file placing them together, NCCL will not use GPUDirect RDMA at its "
                          "default level; every active port is offered")
    return candidates, False


def _keep_one_fabric(view: View, pool: List[Port], said: _Verdicts) -> List[Port]:
    """One fabric: the dominant link layer (ties: the faster)."""
    layers: Dict[str, int] = {}
    for p in pool:
        layers[p.link_layer or ""] = layers.get(p.link_layer or "", 0) + 1
    if len(layers) <= 1:
        return pool
    ranked = sorted(layers.items(), key=lambda kv: (-kv[1], -_max_rate(pool, kv[0]), kv[0]))
    keep = ranked[0][0]
    if ranked[0][1] == ranked[1][1]:
        said.doubt(f"as many {ranked[0][0]} as {ranked[1][0]} ports: kept {keep} "
                   "(the faster); check which fabric is the compute one")
    for p in pool:
        if p.link_layer != keep:
            said.excluded.append((p, f"link layer {p.link_layer} differs from the other compute ports "
                                     f"({keep}): a separate fabric (storage?)"))
    return [p for p in pool if p.link_layer == keep]


def _drop_slow_ports(pool: List[Port], said: _Verdicts) -> List[Port]:
    """A port at most half as fast as the fastest is not part of the compute rails."""
    rates = [p.rate_gbps for p in pool if p.rate_gbps]
    top = max(rates) if rates else None
    if not top:
        return pool
    kept = []
    for p in pool:
        if p.rate_gbps and p.rate_gbps * 2 <= top:
            said.excluded.append((p, f"rate {_g(p.rate_gbps)} Gb/s is at most half the compute ports' "
                                     f"{_g(top)} Gb/s"))
            continue
        if p.rate_gbps and p.rate_gbps < top:
            said.doubt(f"{p.name} runs at {_g(p.rate_gbps)} Gb/s, the others at {_g(top)} Gb/s",
                       check_id="rail-slower", subject=p.name)
        kept.append(p)
    return kept


def _drop_management_subnet_ports(view: View, pool: List[Port], said: _Verdicts) -> List[Port]:
    """A port with an address on the management subnet is not a compute rail (unless all are)."""
    on_mgmt = [(p, view.mgmt_subnet_reason(p)) for p in pool]
    flagged = [(p, why) for p, why in on_mgmt if why]
    if flagged and len(flagged) < len(pool):
        said.excluded.extend(flagged)
        return [p for p, why in on_mgmt if not why]
    if flagged:
        said.doubt("every compute port has an address on the management subnet: "
                   "the compute and front-end networks are not separated")
    return pool


def _drop_roce_ports_without_address(pool: List[Port], said: _Verdicts) -> List[Port]:
    """RoCE needs an IP address on the port for a routable (v2) GID."""
    roce = [p for p in pool if p.is_roce]
    with_gid = [p for p in roce if p.has_routable_gid]
    if with_gid and len(with_gid) < len(roce):
        for p in roce:
            if not p.has_routable_gid:
                said.excluded.append((p, f"no IPv4/IPv6 RoCE v2 GID (no address on {p.netdev or 'its netdev'}) "
                                         "while the other ports have one"))
        return [p for p in pool if not p.is_roce or p.has_routable_gid]
    if roce and not with_gid:
        said.doubt("no chosen RoCE port has an IP address: RoCE v2 cannot be routed "
                   "(NCCL would fall back to a link-local GID)")
    return pool


def _doubt_uneven_rails(view: View, pool: List[Port], said: _Verdicts) -> None:
    """Every GPU should see as many local compute ports as the others, and at least one."""
    counts: Dict[int, int] = {}
    for p in pool:
        for g in p.local_gpus:
            counts[g] = counts.get(g, 0) + 1
    values = sorted(set(counts.values()))
    if len(values) > 1:
        odd = sorted(g for g, c in counts.items() if c == values[-1])
        said.doubt(
            "GPUs do not all see the same number of local compute ports (" +
            ", ".join(f"GPU{g}: {c}" for g, c in sorted(counts.items())) +
            f"): a storage port beside GPU{odd[0]}? check addresses and ibdev2netdev")
    explained = {g for d in said.doubts if d.check_id == "rail-port-unusable" for g in _gpus_in(d.subject, view)}
    missing = sorted(int(g["index"]) for g in view.gpus
                     if int(g["index"]) not in counts and int(g["index"]) not in explained)
    if missing and counts:
        gpus = ", ".join(f"GPU{g}" for g in missing)
        said.doubt("no GPU-local compute port for " + gpus, check_id="gpu-without-rail", subject=gpus)


def _doubt_unusable_local_ports(view: View, pool: List[Port], said: _Verdicts) -> None:
    """A port at PIX/PXB to a GPU that is left out for being down or unaddressed: an error
    when that GPU has no other rail of its own (the rail is there and broken), else a doubt
    (a spare port of a dual-port NIC, say)."""
    covered = {g for p in pool for g in p.local_gpus}
    for p, _why in list(said.excluded):
        if not p.gpu_local or p.function == "software":
            continue
        down = p.state != "ACTIVE"
        unaddressed = p.is_roce and not p.has_routable_gid and not down
        if not (down or unaddressed) or p.link_layer not in VERBS_LINK_LAYERS:
            continue
        alone = [g for g in p.local_gpus if g not in covered]
        what = (f"{p.state or 'not ACTIVE'}" if down else
                f"without an IPv4/IPv6 RoCE v2 GID (no address on {p.netdev or 'its netdev'})")
        if alone:
            gpus = ", ".join(f"GPU{g}" for g in alone)
            said.doubt(f"{p.name} is GPU-local ({p.best_path}) to {gpus} but {what}, and {gpus} has no "
                       "other rail: its traffic crosses to another GPU's NIC", check_id="rail-port-unusable",
                       subject=p.name, severity="error")
        elif down:
            said.doubt(f"{p.name} is GPU-local ({p.best_path}) but {p.state or 'not ACTIVE'}: "
                       "a compute port that is down?", subject=p.name)


def _one_port_per_link(candidates: List[Port], said: _Verdicts) -> List[Port]:
    """Software RDMA devices only where no hardware port is usable; a sub-function only
    where its PCI function's own port is not (both ride one physical link)."""
    hardware = [p for p in candidates if p.function != "software"]
    kept = []
    for p in candidates:
        if p.function == "software" and hardware:
            said.excluded.append((p, f"software RDMA device on {p.netdev or 'a netdev'} (e.g. rdma_rxe): "
                                     "a stand-in, not used while hardware RDMA ports are present"))
            continue
        if p.function == "auxiliary":
            parent = next((h for h in hardware if h.function == "pci" and h.pci == p.pci), None)
            if parent is not None:
                said.excluded.append((p, f"sub-function {p.auxiliary or ''} of {parent.name}'s PCI function "
                                         f"{p.pci}: both ride one physical port, so NCCL would split "
                                         "one link between them"))
                continue
        kept.append(p)
    if kept and all(p.function == "software" for p in kept):
        said.notes.append("only software RDMA devices (Soft-RoCE/siw): NCCL's IB transport runs over "
                          "them, which exercises the RDMA path but not a NIC's speed, and never GPUDirect")
    return kept


def _max_rate(pool: List[Port], layer: str) -> float:
    return max([p.rate_gbps or 0 for p in pool if (p.link_layer or "") == layer] or [0])


def _gpus_in(port_name: str, view: View) -> List[int]:
    return next((p.local_gpus for p in view.ports() if p.name == port_name), [])


def _g(x: float) -> str:
    return f"{x:g}"
