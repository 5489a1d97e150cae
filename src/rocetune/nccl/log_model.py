"""What an NCCL debug log shows, per process: the types read_log returns (JSON-able, sorted)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .log_lines import DiagLine, GdrPath, PortEvent

IB_MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}  # enum ibv_mtu


class Evidence(NamedTuple):
    """One line of the log: its 1-based number and its text (prefix kept, cut to 300 chars)."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass
class IbDevice:
    index: int
    name: str
    port: int
    link_layer: str                  # IB | RoCE | UNSPECIFIED
    tag: Optional[str] = None        # what a plugin adds after the link layer ("SHARP")
    rail: Optional[int] = None       # 2.30.7+: the rail id NCCL_IB_HCA gave it
    plane: Optional[int] = None      # 2.30.7+: the plane id NCCL_IB_HCA gave it
    gdr: Optional[bool] = None       # "GPU Direct RDMA Enabled|Disabled for HCA"
    gdr_reason: Optional[str] = None
    gid_indexes: List[int] = field(default_factory=list)   # from the queue-pair lines
    mtus: List[int] = field(default_factory=list)          # bytes
    evidence: Optional[Evidence] = None
    gdr_evidence: Optional[Evidence] = None
    gid_evidence: Optional[Evidence] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"index": self.index, "name": self.name, "port": self.port, "link_layer": self.link_layer,
                "tag": self.tag, "rail": self.rail, "plane": self.plane, "gdr": self.gdr,
                "gdr_reason": self.gdr_reason, "gid_indexes": sorted(self.gid_indexes), "mtus": sorted(self.mtus)}


@dataclass
class EnvRead:
    """A variable NCCL says it read: the value it printed, and how ("set by environment" / "set to")."""

    name: str
    value: str
    form: str
    evidence: Evidence
    other_values: List[str] = field(default_factory=list)  # a later line in this process said otherwise

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"value": self.value, "form": self.form, "line": self.evidence.line}
        if self.other_values:
            out["other_values"] = sorted(set(self.other_values))
        return out


@dataclass(frozen=True)
class WarnLine:
    process: str
    file: str
    file_line: int
    message: str
    evidence: Evidence
    func: Optional[str] = None   # 2.30.7+ names the function after file:line
    level: str = "WARN"          # WARN | ERROR | ATTN (a notice, not an error)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.file_line}" + (f" ({self.func})" if self.func else "")

    def to_dict(self) -> Dict[str, Any]:
        return {"process": self.process, "where": self.where, "message": self.message,
                "line": self.evidence.line, "level": self.level}


@dataclass
class NetPair:
    """What the connection lines say of one GPU and one NET device of a process: how many of its
    connections used GPUDirect RDMA ("/GDRDMA"), how many over PCIe on a C2C system ("(PCI)")."""

    gpu: str                   # the GPU as the line prints it (bus id up to 2.17, NVML index from 2.18)
    netdev: int
    net: str
    connections: int = 0
    gdr: int = 0
    gdr_pci: int = 0
    evidence: Optional[Evidence] = None          # the first line
    no_gdr_evidence: Optional[Evidence] = None   # the first line without /GDRDMA

    @property
    def state(self) -> str:
        """on | off | mixed | pci (every connection GDR over PCIe)."""
        if self.gdr == 0:
            return "off"
        if self.gdr < self.connections:
            return "mixed"
        return "pci" if self.gdr_pci == self.gdr else "on"

    def to_dict(self) -> Dict[str, Any]:
        return {"gpu": self.gpu, "netdev": self.netdev, "net": self.net, "connections": self.connections,
                "gdr": self.gdr, "gdr_pci": self.gdr_pci, "state": self.state}


@dataclass
class ProcessLog:
    """One process (host:pid) of the job: what its own lines say."""

    host: str
    pid: int
    cuda_devs: List[int] = field(default_factory=list)
    ranks: List[int] = field(default_factory=list)
    nranks: Optional[int] = None
    nnodes: Optional[int] = None
    version: Optional[str] = None           # "2.20.5"
    version_text: Optional[str] = None      # "2.20.5+cuda12.4"
    version_inferred: bool = False          # from the log's one prefix-less version line
    version_evidence: Optional[Evidence] = None
    network: Optional[str] = None           # "Using network X"
    network_evidence: Optional[Evidence] = None
    net_plugin: Optional[str] = None        # an external plugin it loaded
    ib_no_device: Optional[Evidence] = None
    ib_devices: List[IbDevice] = field(default_factory=list)
    ib_relaxed_ordering: Optional[bool] = None
    oob_interface: Optional[str] = None
    oob_address: Optional[str] = None
    socket_interfaces: List[Tuple[int, str, str]] = field(default_factory=list)
    socket_evidence: Optional[Evidence] = None
    gdr_paths: List[GdrPath] = field(default_factory=list)
    gdr_path_evidence: Dict[Tuple[bool, str, str], Evidence] = field(default_factory=dict)
    dmabuf_gpus: List[int] = field(default_factory=list)
    qp_gid_indexes: List[int] = field(default_factory=list)  # every queue pair's GID index, all devices
    qp_gid_evidence: Optional[Evidence] = None
    net_connections: int = 0                # "via NET/..." channel connections
    gdrdma_connections: int = 0             # ... of which "/GDRDMA"
    transports: Dict[str, int] = field(default_factory=dict)   # "NET/IB", "P2P/IPC", "SHM" -> connections
    net_pairs: Dict[Tuple[str, int], NetPair] = field(default_factory=dict)
    rings_gdr: Optional[Tuple[int, int]] = None  # "Connected all rings, use ring PXN %d GDR %d" (2.24.3+)
    rings_gdr_evidence: Optional[Evidence] = None
    net_mismatch: Optional[Tuple[int, int, bool]] = None  # (min, max, ignored), 2.30.3+
    net_mismatch_evidence: Optional[Evidence] = None
    net_counts: Dict[int, Tuple[int, int]] = field(default_factory=dict)  # rank -> (its NET devices, max)
    git_version: Optional[str] = None       # "NCCL git version <branch> <hash>" (2.29.2+)
    env_plugin: Optional[str] = None        # an external env plugin NCCL loaded (2.28.7+)
    env_plugin_evidence: Optional[Evidence] = None
    plugins: Dict[str, str] = field(default_factory=dict)     # tuner|profiler|gin -> the plugin's name
    qp_mtus: List[int] = field(default_factory=list)          # every queue pair's MTU (bytes), all devices
    qp_mtu_evidence: Optional[Evidence] = None
    channels: Dict[str, int] = field(default_factory=dict)
    env: Dict[str, EnvRead] = field(default_factory=dict)
    env_invalid: Dict[str, Tuple[str, str, Evidence]] = field(default_factory=dict)
    env_lines: int = 0                      # "... set by environment ..." lines: ENV was logged
    rings: Dict[int, List[int]] = field(default_factory=dict)
    ring_neighbours: Dict[int, Tuple[int, int]] = field(default_factory=dict)
    trees: List[str] = field(default_factory=list)
    init_complete: bool = False
    warn_count: int = 0
    port_events: List[Tuple[PortEvent, Evidence]] = field(default_factory=list)  # the first MAX_PORT_EVENTS
    port_event_count: int = 0
    levels: Dict[str, int] = field(default_factory=dict)  # ERROR | ATTN -> lines (2.32: ATTN)

    @property
    def key(self) -> str:
        return f"{self.host}:{self.pid}"

    @property
    def net_name(self) -> Optional[str]:
        """The network NCCL chose: its "Using network" line, else the one its NET connections name."""
        if self.network is not None:
            return self.network
        nets = sorted(k[len("NET/"):] for k in self.transports if k.startswith("NET/"))
        return nets[0] if len(nets) == 1 else None

    @property
    def network_from(self) -> Optional[str]:
        """Which lines told the network: "Using network" (INIT), the connection lines, or none."""
        if self.network is not None:
            return "using-network"
        return "connections" if self.net_name is not None else None

    @property
    def transport(self) -> Optional[str]:
        """ib, socket or plugin, from the network name NCCL chose."""
        name = self.net_name
        if name is None:
            return None
        if name == "Socket":
            return "socket"
        if name == "IB" or name.startswith("IBext"):
            return "ib"
        return "plugin"

    def device(self, index: int) -> Optional[IbDevice]:
        for d in self.ib_devices:
            if d.index == index:
                return d
        return None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "process": self.key, "host": self.host, "pid": self.pid,
            "cuda_devs": sorted(self.cuda_devs), "ranks": sorted(self.ranks), "nranks": self.nranks,
            "nnodes": self.nnodes, "version": self.version, "version_text": self.version_text,
            "version_inferred": self.version_inferred, "network": self.net_name,
            "network_from": self.network_from, "transport": self.transport,
            "net_plugin": self.net_plugin, "ib_no_device": self.ib_no_device is not None,
            "ib_devices": [d.to_dict() for d in sorted(self.ib_devices, key=lambda d: d.index)],
            "ib_relaxed_ordering": self.ib_relaxed_ordering,
            "oob": {"interface": self.oob_interface, "address": self.oob_address} if self.oob_interface else None,
            "socket_interfaces": [{"index": i, "name": n, "address": a} for i, n, a in sorted(self.socket_interfaces)],
            "gdr_paths": [{"enabled": g.enabled, "gpu": g.gpu, "hca": g.hca, "distance": g.distance, "level": g.level,
                           "rank": g.rank, "mode": g.mode} for g in sorted(self.gdr_paths, key=repr)],
            "dmabuf_gpus": sorted(self.dmabuf_gpus), "qp_gid_indexes": sorted(self.qp_gid_indexes),
            "net_connections": self.net_connections, "gdrdma_connections": self.gdrdma_connections,
            "transports": dict(sorted(self.transports.items())),
            "net_pairs": [p.to_dict() for _, p in sorted(self.net_pairs.items(), key=lambda kv: (kv[0][1], kv[0][0]))],
            "rings_gdr": {"pxn": self.rings_gdr[0], "gdr": self.rings_gdr[1]} if self.rings_gdr else None,
            "net_mismatch": {"min": self.net_mismatch[0], "max": self.net_mismatch[1], "ignored": self.net_mismatch[2]}
            if self.net_mismatch else None,
            "git_version": self.git_version, "env_plugin": self.env_plugin,
            "plugins": dict(sorted(self.plugins.items())),
            "qp_mtus": sorted(self.qp_mtus),
            "channels": dict(sorted(self.channels.items())),
            "env": {k: v.to_dict() for k, v in sorted(self.env.items())},
            "env_invalid": {k: {"value": v, "default": d, "line": e.line}
                            for k, (v, d, e) in sorted(self.env_invalid.items())},
            "rings": {str(c): r for c, r in sorted(self.rings.items())},
            "ring_neighbours": {str(c): list(p) for c, p in sorted(self.ring_neighbours.items())},
            "trees": list(self.trees),
            "init_complete": self.init_complete, "warn_count": self.warn_count,
            "port_events": [{"device": e.device, "port": e.port, "kind": e.kind, "detail": e.detail, "line": ev.line}
                            for e, ev in self.port_events],
            "port_event_count": self.port_event_count, "levels": dict(sorted(self.levels.items())),
        }


@dataclass
class NcclLogReport:
    """read_log's answer. `lines` counts what was read; `nccl_lines` those with NCCL's prefix or
    its version string; `unrecognized_lines` those NCCL lines this reader does not take apart
    (topology dumps, timings, ...); `other_lines` the rest (the application's own output)."""

    source: str
    lines: int = 0
    nccl_lines: int = 0
    unrecognized_lines: int = 0
    other_lines: int = 0
    versions: List[str] = field(default_factory=list)
    version_evidence: Dict[str, Evidence] = field(default_factory=dict)  # first line of each version
    processes: List[ProcessLog] = field(default_factory=list)
    warnings: List[WarnLine] = field(default_factory=list)
    warn_count: int = 0
    notes: List[str] = field(default_factory=list)
    diag: List[Tuple[DiagLine, Evidence]] = field(default_factory=list)  # "NCCL DIAG" lines (2.31.2+)
    reads: str = ""                                   # the releases whose lines this reader takes apart
    cannot_tell: List[str] = field(default_factory=list)  # what the log's debug subsystems leave out

    def process(self, key: str) -> Optional[ProcessLog]:
        for p in self.processes:
            if p.key == key:
                return p
        return None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "source": self.source, "lines": self.lines, "nccl_lines": self.nccl_lines,
            "unrecognized_lines": self.unrecognized_lines, "other_lines": self.other_lines,
            "versions": list(self.versions),
            "version_lines": {v: e.line for v, e in sorted(self.version_evidence.items())},
            "processes": [p.to_dict() for p in self.processes],
            "warnings": [w.to_dict() for w in self.warnings], "warn_count": self.warn_count,
            "notes": list(self.notes), "reads": self.reads,
            "diag": [{"process": f"{d.host}:{d.pid}" if d.host else None, "tag": d.tag, "check": d.check,
                      "text": d.text, "line": ev.line} for d, ev in self.diag], "cannot_tell": list(self.cannot_tell),
        }
