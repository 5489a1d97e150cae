"""Read NCCL's own debug output (NCCL_DEBUG=INFO) into what NCCL actually used, per process.

    report = read_log(text)           # NcclLogReport; report.to_dict() is JSON-able and sorted

A log is taken line by line, in one pass, whatever order the processes' lines come in (ranks of
many hosts interleaved, launcher prefixes, ANSI colour, carriage returns, cut lines). Each line
is matched by its own anchored patterns (rocetune.nccl.log_lines, which cites the NCCL source
of every format), so a 100 MB log costs time in proportion to its size. Lines this reader does
not take apart are counted, not guessed at. Text with no NCCL line at all is refused with
RocetuneError (ExitCode.INPUT).
"""

from __future__ import annotations

from typing import Dict, Iterator, Tuple, Union

from ..errors import ExitCode, RocetuneError
from . import log_lines as L
from .log_model import IB_MTU_BYTES, EnvRead, Evidence, IbDevice, NcclLogReport, NetPair, ProcessLog, WarnLine
from .versions import parse_version

MAX_WARNINGS = 10000  # WARN lines kept in the report; all are counted
MAX_PORT_EVENTS = 1000  # port events kept per process; all are counted
MAX_DIAG = 10000  # NCCL DIAG lines kept
_EVIDENCE_CHARS = 300
# The releases whose line forms this reader takes apart (docs/nccl-log.md: each form with its first
# and last release, read in NVIDIA/nccl's source at the tags; 2.31 is the dev branch's 2.31.0).
READS = ((2, 6, 0), (2, 31, 99))
READS_TEXT = "NCCL 2.6 to 2.31"


def read_log(text: Union[str, bytes], source: str = "NCCL log") -> NcclLogReport:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    reader = _Reader(source)
    for number, raw in _physical_lines(text):
        reader.line(number, raw)
    return reader.finish()


def load_log(path: str) -> NcclLogReport:
    """read_log on a file, streamed a line at a time (rocetune.hostfs.inputs.iter_input_lines: a line
    past MAX_LINE is cut, so memory does not grow with the file or one endless line); a regular
    file only, opened without blocking. An unreadable file is a RocetuneError naming it."""
    import os

    from ..errors import HostReadError
    from ..hostfs.inputs import iter_input_lines, open_input

    try:
        fd, _ = open_input(path)
    except HostReadError as e:
        if e.reason.startswith("a directory"):
            raise RocetuneError(f"{path}: is a directory, not an NCCL log", code=ExitCode.INPUT) from None
        raise RocetuneError(f"{path}: cannot read: {e.reason}", code=ExitCode.INPUT) from None
    except OSError as e:
        raise RocetuneError(f"{path}: cannot read: {e.strerror or e}", code=ExitCode.INPUT) from None
    reader = _Reader(path)
    try:
        for number, (raw, _) in enumerate(iter_input_lines(fd, L.MAX_LINE + 1), 1):
            reader.line(number, raw)
    except OSError as e:
        raise RocetuneError(f"{path}: cannot read: {e.strerror or e}", code=ExitCode.INPUT) from None
    finally:
        os.close(fd)
    return reader.finish()


def _physical_lines(text: str) -> Iterator[Tuple[int, str]]:
    start, number, size = 0, 0, len(text)
    while start < size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        number += 1
        yield number, text[start:end]
        start = end + 1


class _Reader:
    def __init__(self, source: str):
        self.report = NcclLogReport(source=source)
        self.processes: Dict[Tuple[str, int], ProcessLog] = {}
        self.loose_versions: Dict[str, Tuple[str, Evidence]] = {}  # prefix-less "NCCL version" lines
        self.cut_lines = 0

    def line(self, number: int, raw: str) -> None:
        self.report.lines += 1
        if len(raw) > L.MAX_LINE:
            self.cut_lines += 1
        shown = L.clean(raw)
        if not shown:
            return
        nccl = False
        for text in shown:
            nccl = self._one(number, text) or nccl
        if nccl:
            self.report.nccl_lines += 1
        else:
            self.report.other_lines += 1

    def _one(self, number: int, text: str) -> bool:
        h = L.split_header(text)
        if h is None:
            if "NCCL DIAG " in text:
                d = L.diag_line(text)
                if d is not None:
                    if len(self.report.diag) < MAX_DIAG:
                        self.report.diag.append((d, self._evidence(number, text)))
                    return True
            v = L.version_in(text)
            if v is None:
                return False
            self.loose_versions.setdefault(v[1], (v[0], self._evidence(number, text)))
            return True
        proc = self._process(h.host, h.pid)
        if h.cuda_dev not in proc.cuda_devs:
            proc.cuda_devs.append(h.cuda_dev)
        ev = self._evidence(number, text)
        if h.level in ("ERROR", "ATTN"):
            proc.levels[h.level] = proc.levels.get(h.level, 0) + 1
        event = L.port_event(h.message)
        if event is not None:
            proc.port_event_count += 1
            if len(proc.port_events) < MAX_PORT_EVENTS:
                proc.port_events.append((event, ev))
        if h.level in ("WARN", "ERROR", "ATTN"):
            mismatch = L.net_mismatch(h.message)
            if mismatch is not None:
                proc.net_mismatch, proc.net_mismatch_evidence = mismatch, proc.net_mismatch_evidence or ev
            self.report.warn_count += 1
            proc.warn_count += 1
            if len(self.report.warnings) < MAX_WARNINGS:
                self.report.warnings.append(WarnLine(proc.key, h.file or "", h.file_line or 0, h.message, ev,
                                                     h.func, h.level))
            return True
        if event is None and not self._info(proc, h.message, ev):
            self.report.unrecognized_lines += 1
        return True

    def _info(self, p: ProcessLog, m: str, ev: Evidence) -> bool:  # noqa: C901 -- one branch per format
        if m.startswith("NCCL version "):
            v = L.version_in(m)
            if v and p.version is None:
                p.version, p.version_text = v
                p.version_evidence = ev
            return v is not None
        if m.startswith("Using network "):
            if p.network is None:
                p.network, p.network_evidence = m[len("Using network "):], ev
            return True
        if m.startswith("NET/IB : Using"):
            devices, relaxed, oob_if, oob_addr = L.ib_devices(m)
            if not p.ib_devices:
                p.ib_devices = [IbDevice(d.number, d.name, d.port, d.link_layer, d.tag, rail=d.rail, plane=d.plane,
                                         evidence=ev) for d in devices]
                p.ib_relaxed_ordering, p.oob_interface, p.oob_address = relaxed, oob_if, oob_addr
            return True
        if m.startswith("NET/IB : No device found"):
            p.ib_no_device = p.ib_no_device or ev
            return True
        if m.startswith("NET/Socket : Using"):
            if not p.socket_interfaces:
                p.socket_interfaces, p.socket_evidence = L.socket_interfaces(m), ev
            return True
        g = L.gdr_hca(m)
        if g is not None:
            net, on, index, name, why = g
            dev = p.device(index)
            if dev is not None and dev.name != name:
                dev = None  # another net's device n ("NET/Socket : ... for HCA 0 'eth0'")
            if dev is None and net == "IB" and p.device(index) is None:
                dev = IbDevice(index, name, -1, "UNSPECIFIED")  # its "NET/IB : Using" line is not in the log
                p.ib_devices.append(dev)
            if dev is not None and dev.gdr is None:
                dev.gdr, dev.gdr_reason, dev.gdr_evidence = on, why, ev
            return True
        if m.startswith("GPU Direct RDMA "):
            path = L.gdr_path(m)
            if path is not None and path[:3] not in p.gdr_path_evidence:
                p.gdr_paths.append(path)
                p.gdr_path_evidence[path[:3]] = ev
            return path is not None
        qp = L.queue_pair(m)
        if qp is not None:
            self._queue_pair(p, qp, ev)
            return True
        if m.startswith("NET/IB:") and "_ece=" in m:
            return True
        if " coll channels, " in m:
            c = L.channels(m)
            if c is not None and not p.channels:
                p.channels = c
            return c is not None
        if " set by environment to " in m or " set to " in m:
            s = L.env_setting(m)
            if s is not None:
                self._env(p, s, ev)
                return True
        if m.startswith("Invalid value "):
            bad = L.env_invalid(m)
            if bad is not None:
                p.env_invalid.setdefault(bad[0], (bad[1], bad[2], ev))
            return bad is not None
        if m.startswith(("Channel ", "Ring ")):
            if " via " in m:
                conn = L.connection(m)
                if conn is not None:
                    self._connection(p, conn, ev)
                return conn is not None
            order = L.ring_order(m)
            if order is not None:
                p.rings.setdefault(order[0], order[1])
                return True
            r = L.ring_neighbours(m)
            if r is not None:
                p.ring_neighbours.setdefault(r[0], (r[1], r[3]))
            return r is not None
        if m.startswith("Trees"):
            p.trees.append(m[len("Trees"):].strip())
            return True
        if "comm " in m and " rank " in m:
            rank = L.rank_line(m)
            if rank is not None:
                if rank[0] not in p.ranks:
                    p.ranks.append(rank[0])
                p.nranks = rank[1]
                p.nnodes = rank[2] if rank[2] is not None else p.nnodes
                p.init_complete = p.init_complete or m.endswith("Init COMPLETE")
                return True
        rg = L.rings_gdr(m)
        if rg is not None:
            p.rings_gdr, p.rings_gdr_evidence = rg, p.rings_gdr_evidence or ev
            return True
        mismatch = L.net_mismatch(m)
        if mismatch is not None:
            p.net_mismatch, p.net_mismatch_evidence = mismatch, p.net_mismatch_evidence or ev
            return True
        count = L.rank_net_count(m)
        if count is not None:
            p.net_counts.setdefault(count[0], (count[1], count[2]))
            return True
        git = L.git_version(m)
        if git is not None:
            p.git_version = p.git_version or git
            return True
        env_plugin = L.env_plugin(m)
        if env_plugin is not None:
            p.env_plugin, p.env_plugin_evidence = p.env_plugin or env_plugin, p.env_plugin_evidence or ev
            return True
        other = L.other_plugin(m)
        if other is not None:
            p.plugins.setdefault(other[0], other[1])
            return True
        plugin = L.plugin_loaded(m)
        if plugin is not None:
            p.net_plugin = p.net_plugin or plugin
            return True
        gpu = L.dmabuf_gpu(m)
        if gpu is not None:
            if gpu not in p.dmabuf_gpus:
                p.dmabuf_gpus.append(gpu)
            return True
        return m.startswith(("NET/Plugin", "Bootstrap", "Using non-device net plugin", "TUNER/Plugin",
                             "PROFILER/Plugin", "ENV/Plugin", "GIN/Plugin"))

    @staticmethod
    def _connection(p: ProcessLog, c: L.Connection, ev: Evidence) -> None:
        kind = f"NET/{c.net}" if c.transport == "NET" else c.transport
        if c.transport in ("P2P", "SHM"):
            kind = c.via.split("/")[0] + ("/" + c.via.split("/")[1] if "/" in c.via else "")
        p.transports[kind] = p.transports.get(kind, 0) + 1
        if c.transport != "NET":
            return
        p.net_connections += 1
        p.gdrdma_connections += 1 if c.gdr else 0
        key = (c.gpu if c.gpu is not None else f"rank {c.local_rank}", c.netdev if c.netdev is not None else -1)
        pair = p.net_pairs.get(key)
        if pair is None:
            pair = p.net_pairs[key] = NetPair(key[0], key[1], c.net or "", evidence=ev)
        pair.connections += 1
        if c.gdr:
            pair.gdr += 1
            pair.gdr_pci += 1 if c.gdr_mode == "PCI" else 0
        elif pair.no_gdr_evidence is None:
            pair.no_gdr_evidence = ev

    def _queue_pair(self, p: ProcessLog, qp: dict, ev: Evidence) -> None:
        index = qp.get("IbDev", qp.get("Dev"))
        dev = p.device(index) if index is not None else None
        mtu = IB_MTU_BYTES.get(qp["mtu"])
        gid = qp.get("GID")
        if mtu is not None and mtu not in p.qp_mtus:
            p.qp_mtus.append(mtu)
            p.qp_mtu_evidence = p.qp_mtu_evidence or ev
        if gid is not None:
            if gid not in p.qp_gid_indexes:
                p.qp_gid_indexes.append(gid)
            p.qp_gid_evidence = p.qp_gid_evidence or ev
        if dev is None:
            return
        if mtu is not None and mtu not in dev.mtus:
            dev.mtus.append(mtu)
        if gid is not None and gid not in dev.gid_indexes:
            dev.gid_indexes.append(gid)
            dev.gid_evidence = dev.gid_evidence or ev

    def _env(self, p: ProcessLog, setting: Tuple[str, str, str], ev: Evidence) -> None:
        name, value, form = setting
        if form == "set by environment":
            p.env_lines += 1
        seen = p.env.get(name)
        if seen is None:
            p.env[name] = EnvRead(name, value, form, ev)
        elif seen.value != value and value not in seen.other_values:
            seen.other_values.append(value)

    def _process(self, host: str, pid: int) -> ProcessLog:
        p = self.processes.get((host, pid))
        if p is None:
            p = self.processes[(host, pid)] = ProcessLog(host, pid)
        return p

    @staticmethod
    def _evidence(number: int, text: str) -> Evidence:
        return Evidence(number, text if len(text) <= _EVIDENCE_CHARS else text[:_EVIDENCE_CHARS] + "...")

    def finish(self) -> NcclLogReport:
        r = self.report
        if r.nccl_lines == 0:
            what = "it is empty" if r.lines == 0 or r.other_lines == 0 else \
                f"none of its {r.lines} lines is an 'NCCL INFO', 'NCCL WARN' or 'NCCL version' line"
            hint = ("capture the job's output with NCCL_DEBUG=INFO "
                    "(NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH shows what rocetune checks)")
            if r.lines == 0 or r.other_lines == 0:
                # a log sink (NCCL_LOG_PLUGIN or ncclSetDebugLogSink) takes every record and NCCL then
                # writes nothing to NCCL_DEBUG_FILE (debug.cc ncclDebugLogV): empty is not "NCCL was quiet"
                hint += ("; an empty NCCL_DEBUG_FILE is also what a job leaves when a log plugin "
                         "(NCCL_LOG_PLUGIN) or the application's log sink took NCCL's lines: read them there")
            raise RocetuneError(f"{r.source}: not an NCCL debug log: {what}", hint=hint, code=ExitCode.INPUT)
        procs = sorted(self.processes.values(), key=lambda p: (p.host, p.pid))
        texts = {text: short for text, (short, _) in self.loose_versions.items()}
        evidence = {text: ev for text, (_, ev) in self.loose_versions.items()}
        for p in procs:
            if p.version_text and p.version_evidence:
                texts[p.version_text] = p.version or ""
                if p.version_text not in evidence or p.version_evidence.line < evidence[p.version_text].line:
                    evidence[p.version_text] = p.version_evidence
        r.versions = sorted(texts, key=lambda t: (parse_version(t) or (0, 0, 0), t))
        r.version_evidence = evidence
        if len(texts) == 1:
            (only_text, only), = texts.items()
            for p in procs:
                if p.version is None:
                    p.version, p.version_text, p.version_inferred = only, only_text, True
        r.processes = procs
        r.reads = READS_TEXT
        r.cannot_tell = _cannot_tell(procs)
        for text in r.versions:
            v = parse_version(text)
            if v is not None and not READS[0] <= v <= READS[1]:
                r.notes.append(f"NCCL {text} is outside the releases this reader knows ({READS_TEXT}): lines "
                               "of other forms are counted, not read")
        if self.cut_lines:
            r.notes.append(f"{self.cut_lines} line(s) longer than {L.MAX_LINE} characters were read "
                           f"only up to that length")
        if len(r.warnings) < r.warn_count:
            r.notes.append(f"{r.warn_count} WARN lines; the first {len(r.warnings)} are listed")
        return r


def _cannot_tell(procs) -> list[str]:
    """What the log cannot show, given the kinds of line it holds (NCCL_DEBUG_SUBSYS decides them):
    NET prints GPUDirect RDMA per NIC and per GPU-NIC pair and the queue pairs; INIT the network,
    the ranks and channels; INIT or NET the connection lines."""
    out = []
    net = any(any(d.gdr is not None for d in p.ib_devices) or p.gdr_paths or p.qp_mtus or p.qp_gid_indexes
              for p in procs)
    init = any(p.network or p.ranks or p.channels or p.rings_gdr or p.dmabuf_gpus for p in procs)
    conns = any(p.transports for p in procs)
    if not net:
        gdr = ("GPUDirect RDMA is read from the connection lines ('/GDRDMA') alone" if conns else
               "neither can GPUDirect RDMA")
        out.append("no line that only the NET subsystem prints (GPU Direct RDMA per NIC or per GPU-NIC pair, "
                   f"queue pairs): the GID index and MTU in use cannot be told, and {gdr} "
                   "(NCCL_DEBUG_SUBSYS=INIT,ENV,NET shows them)")
    if not init:
        out.append("no INIT line ('Using network', ranks, channels): "
                   + ("the network comes from the connection lines only" if conns else
                      "the network NCCL chose, its ranks and channels cannot be told")
                   + " (NCCL_DEBUG_SUBSYS=INIT,ENV,NET shows them)")
    if not conns:
        out.append("no connection line ('Channel ... via ...', INIT or NET): which transport carried each peer "
                   "and whether each GPU-NIC pair used GPUDirect RDMA cannot be told")
    return out
