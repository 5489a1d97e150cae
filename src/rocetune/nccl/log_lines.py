"""The lines NCCL prints with NCCL_DEBUG=INFO, and how to take each apart.

Every pattern here is anchored and free of nested quantifiers, and a line is cut to MAX_LINE
characters before it is looked at, so one line costs at most a few passes over MAX_LINE
characters whatever it holds.

Where each format comes from (NVIDIA/nccl tags; file:line):

* Prefix, src/debug.cc: "%s:%d:%d [%d] NCCL INFO " (host, pid, tid, CUDA device) and
  "\\n%s:%d:%d [%d] %s:%d NCCL WARN " (with the WARN's file:line; the leading newline leaves an
  empty line before each WARN) -- v2.18.3-1 debug.cc:172-175, v2.21.5-1 debug.cc:179-183; v2.28.9-1
  builds the same text in pieces (debug.cc:349-363) after an optional timestamp
  (NCCL_DEBUG_TIMESTAMP_FORMAT), which ends up before the host name.
* "NCCL version %d.%d.%d%s+cuda%d.%d": init.cc VERSION_STRING (v2.18.3-1 init.cc:448,
  v2.21.5-1 init.cc:472, v2.28.9-1 init.cc:603). Up to 2.21.5 showVersion printf()s it to stdout
  without a prefix (and repeats it as INFO only when NCCL_DEBUG_FILE is set: v2.21.5-1 init.cc:476);
  from 2.22.3 it is an INFO line with the prefix (v2.22.3-1 init.cc:495), still prefix-less at
  NCCL_DEBUG=VERSION or WARN (forms `version-printf`, `version-info` of tests/fixtures/nccl-logs/forms.json).
* "Using network %s": init.cc (v2.18.3-1 :310, v2.21.5-1 :322, v2.28.9-1 :428); the name is
  the net plugin's: "IB", "Socket", or an external plugin's ("IBext_v8", "AWS Libfabric", ...).
* "NET/IB : Using%s %s; OOB %s:%s" with " [%d]%s:%d/%s" per device (name, port, IB|RoCE):
  transport/net_ib.cc (v2.18.3-1 :259-264, v2.28.9-1 :835-839, where the link layer may also be
  "UNSPECIFIED"); v2.21.5-1 :521-538 prints merged devices as " [%d]={[%d] %s:%d/%s, ...}".
  "[RO]" after the list: relaxed ordering on. "NET/IB : No device found." when none is usable.
* "NET/Socket : Using" with " [%d]%s:%s" per interface: transport/net_socket.cc (v2.18.3-1 :58-62,
  v2.28.9-1 :72-76).
* "NET/%s : GPU Direct RDMA %s for HCA %d '%s'" (Enabled|Disabled): graph/topo.cc (v2.18.3-1
  :643/:664, v2.21.5-1 :720/:741, v2.28.9-1 :1357); up to 2.12 net_ib.cc printed
  "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)" (v2.12.12-1 net_ib.cc:290).
* "GPU Direct RDMA %s for GPU %lx / HCA %d (distance %d <= %d), read %d": graph/paths.cc
  (v2.18.3-1 :393-398; v2.21.5-1 :414-419 with the HCA as a hex net id; v2.28.9-1 :473-483 with
  the GPU's rank and ", read %d mode %s").
* "DMA-BUF is available on GPU device %d": init.cc (v2.18.3-1 :267, v2.28.9-1 :367).
* Queue pairs, transport/net_ib.cc: "NET/IB: Dev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX)" or
  "... LID %d" (v2.18.3-1 :674 prints ncclParamIbGidIndex(), the configured index);
  "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d query_ece={...} GID %ld (...) fifoRkey=..."
  (v2.20.5-1 :855 still prints ncclParamIbGidIndex(); v2.21.5-1 :1065 the index in use);
  "NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %ld (%lX/%lX) fifoRkey=0x%x fifoLkey=0x%x"
  (v2.28.9-1 :1490, the index in use). mtu is the verbs enum (1=256 .. 5=4096).
* "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels per
  peer": init.cc (v2.21.5-1 :1297, v2.28.9-1 :1358); 2.17-2.19 have no collnet count (v2.18.3-1
  init.cc:1113), 2.16 and older neither collnet nor nvls (v2.16.5-1 graph/paths.cc:737).
* Variables: "%s set by environment to %lld." for every integer parameter (misc/param.cc:
  v2.18.3-1 :75, v2.21.5-1 :75, v2.28.9-1 :89), "Invalid value %s for %s, using default %lld."
  when strtoll fails (same function); string variables print "NCCL_X set by environment to %s"
  without the full stop (socket.cc, tuning.cc, topo.cc, ...), path levels the level's name
  (graph/paths.cc ncclGetLevel: v2.28.9-1 :247); NCCL_IB_HCA, NCCL_SOCKET_IFNAME and
  NCCL_OOB_NET_IFNAME also as "NCCL_X set to %s" (net_ib.cc v2.18.3-1 :180, v2.28.9-1 :702;
  socket.cc v2.28.9-1 :366; bootstrap.cc since 2.23). NCCL never logs that it read nccl.conf:
  misc/param.cc setEnvFile setenv()s each line (its printf is commented out), so a variable from
  NCCL_CONF_FILE, ~/.nccl.conf or /etc/nccl.conf shows up as "set by environment" like any other.
* "Channel %02d/%02d :" followed by the ring's ranks: graph/rings.cc (v2.18.3-1 :35,
  v2.28.9-1 :47); "Ring %02d : %d -> %d -> %d" and "Trees%s": init.cc (v2.18.3-1 :1042-1045,
  v2.28.9-1 :1223-1226); "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d..."
  transport/net.cc (v2.18.3-1 :186, v2.28.9-1 :313), "/GDRDMA" when the connection uses GDR.
* "[%s ]comm %p rank %d nranks %d cudaDev %d ... - Init START|COMPLETE": init.cc (v2.18.3-1
  :1356/:1375; the function name prefix since 2.23, v2.28.9-1 :1561-1598).
* Net plugins: "NET/Plugin: Loaded net plugin %s (v%d)" (v2.18.3-1 net.cc:200-206,
  v2.28.9-1 plugin/net/net_v*.cc), "Successfully loaded external network plugin %s"
  (v2.28.9-1 plugin/net.cc:134).
* Port events, transport/net_ib (the async event thread): "NET/IB : %s:%d GID table changed" (WARN,
  v2.28.3-1 net_ib.cc:239 .. v2.30.7-1 net_ib/common.cc:153: NCCL keeps the GID it cached); before 2.28.3
  the same event is "NET/IB : %s:%d unknown event type (%d)" with 18, IBV_EVENT_GID_CHANGE of rdma-core's
  enum ibv_event_type (v2.23.4-1 net_ib.cc:176). v2.31.2-1 net_ib/common.cc (ncclIbEventGidChange)
  refreshes the GID instead: INFO "NET/IB: %s: GID table changed on %s:%d", "NET/IB : %s:%d GID
  refreshed: idx %d -> %d, gid %s -> %s", "NET/IB : %s:%d link is not Ethernet; ignoring GID change",
  and WARN "NET/IB : %s:%d marking device with fatal error after GID-change event handler failed" (after
  "... query_port failed during GID change (res=%d)" or "... GID info query failed (%d) during GID
  change"). "NET/IB : %s:%d Got non-fatal async event: %s(%d)" (WARN, every release with the thread;
  "port error", "port active", ... from ibv_event_type_str; "... Got async error event: %s" from v2.23.4-1
  net_ib.cc:171 to v2.28.3-1 :212) and "NET/IB : %s:%d async fatal event: %s" (v2.23.4-1 :140 on).
  "NET/IB : %s:%d speed change detected: %d -> %s Mbps" (v2.30.7-1 common.cc:163, the old speed as
  NCCL's device speed and the new one or "N/A") and "... %lu -> %lu Mbps" (v2.31.2-1 common.cc
  ncclIbUpdateDeviceSpeed, both in Mbps; NCCL_IB_EVENT_BASED_LB weighs the ports by it).
* "NCCL DIAG" lines (2.31.2): "%s:%d NCCL DIAG %s" for RAS diagnostics (v2.31.2-1 ras/diagnostics.cc
  rasDiagnosticsFormatLine), "NCCL DIAG %s" for NCCL_RUN_DIAGNOSTICS (diagnostics/p2p.cc DIAG_PRINT);
  the result tags "[OK]   " and "[INFO] " (ras/diagnostics_checks_common.h RAS_DIAG_TAG_OK/INFO), a
  "=== ... ===" header and "... diagnostics completed in %.1f ms across %d ranks|RAS peers".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple

MAX_LINE = 16384  # NCCL's own buffer is 1-2 KiB (debug.cc); anything longer is not one of its lines

# The words after "NCCL " that start a debug line. INFO and WARN: every release (debug.cc); ERROR and
# ATTN: levels NCCL announced after 2.31 (2.32.3 release notes: ATTN), read like WARN, whose format
# they are not known to differ from.
LEVELS = ("INFO", "WARN", "ERROR", "ATTN")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_HOST_SEPARATORS = " \t>]:"


@dataclass(frozen=True)
class Header:
    host: str
    pid: int
    tid: int
    cuda_dev: int
    level: str               # INFO | WARN | ERROR | ATTN
    file: Optional[str]      # a WARN's source file and line
    file_line: Optional[int]
    message: str             # what follows "NCCL INFO " / "NCCL WARN ", trailing blanks dropped
    func: Optional[str] = None  # the function a 2.30.7+ WARN names after its file:line


def _numbers(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled with each `\\d+` cut to the 20 digits a C integer prints: a longer run of
    digits is not a number NCCL wrote, and the line does not match."""
    return re.compile(pattern.replace(r"\d+", r"\d{1,20}(?!\d)"))


def _count(text: str) -> bool:
    """Whether `text` is a number NCCL prints (%d, %ld): ASCII digits, no more than 20 of them."""
    return 0 < len(text) <= 20 and text.isascii() and text.isdigit()


def clean(raw: str) -> List[str]:
    """One physical line of the file as the lines it shows: ANSI escapes dropped, a carriage
    return taken as a line break (progress bars, \\r\\n endings), cut to MAX_LINE."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    parts = raw.split("\r") if "\r" in raw else [raw]
    return [p[:MAX_LINE] for p in parts if p.strip()]


def split_header(line: str) -> Optional[Header]:
    """The NCCL prefix of an INFO or WARN line, or None when the line is not one.

    Launchers put their own prefix before NCCL's ("[1,0]<stdout>:", "[rank0]:", a timestamp):
    the host name is the last word before ":pid:tid".
    """
    k, level = -1, ""
    for word in LEVELS:
        at = line.find(f"NCCL {word} ")
        if at >= 0 and (k < 0 or at < k):
            k, level = at, word
    if k < 0:
        return None
    message = line[k + len(level) + 6:].rstrip()
    head = line[:k]
    if not head.endswith(" "):
        return None
    head = head[:-1]
    file = file_line = func = None
    # WARN always names its file:line; ERROR and ATTN (released after the last tree read here) may
    if level == "WARN" or (level in ("ERROR", "ATTN") and not head.endswith("]")):
        if head.endswith(")"):  # 2.30.7: "file:line (function) NCCL WARN"
            at = head.rfind(" (")
            if at < 0:
                return None
            func, head = head[at + 2:-1], head[:at]
            if not func or " " in func:
                return None
        head, _, where = head.rpartition(" ")
        path, _, num = where.rpartition(":")
        if not path or not _count(num):
            return None
        file, file_line = path, int(num)
    if not head.endswith("]"):
        return None
    head, _, dev = head[:-1].rpartition("[")
    if not (_count(dev) or (dev[:1] == "-" and _count(dev[1:]))):
        return None
    rest, _, tid = head.rstrip(" ").rpartition(":")
    host, _, pid = rest.rpartition(":")
    if not (_count(pid) and _count(tid)):
        return None
    for sep in _HOST_SEPARATORS:
        if sep in host:
            host = host[host.rfind(sep) + 1:]
    if not host:
        return None
    return Header(host, int(pid), int(tid), int(dev), level, file, file_line, message, func)


_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)([^\s+]*)\+cuda(\d+\.\d+)")


def version_in(text: str) -> Optional[Tuple[str, str]]:
    """("2.20.5", "2.20.5+cuda12.4") from a line that carries NCCL's version string."""
    k = text.find("NCCL version ")
    if k < 0:
        return None
    m = _VERSION.match(text, k)
    if not m:
        return None
    return m.group(1), m.group(0)[len("NCCL version "):]


# 2.30.7+: ":rail" and ":plane" after the port when NCCL_IB_HCA gave them (":" alone holds an absent
# rail's place before a plane), net_ib/init.cc v2.30.7-1 :494-504
_IB_DEVICE = _numbers(r"\[(\d+)\] ?([^\s:\[\]{},;=]+):(\d+)(?::(\d*)(?::(\d+))?)?/(IB|RoCE|UNSPECIFIED)"
                      r"(?:/([A-Za-z]+))?")
_SOCKET_IF = _numbers(r"\[(\d+)\]([^\s:\[\]]+):([^\s<]+)<\d+>")
_GDR_HCA = _numbers(r"(Enabled|Disabled) for HCA (\d+) '([^']*)'( \(no module\))?")
_GDR_PATH = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for GPU (\S+) / HCA (\S+) ")
_DISTANCE = _numbers(r"distance (\d+) (<=|>) (\d+)")
_CHANNELS = _numbers(r"(\d+) coll channels, (?:(\d+) collnet channels, )?(?:(\d+) nvls channels, )?"
                     r"(\d+) p2p channels, (\d+) p2p channels per peer")
_SET_BY_ENV = re.compile(r"([A-Z][A-Z0-9_]*) set by environment to (.*)")
_SET_TO = re.compile(r"(NCCL_[A-Z0-9_]+) set to (.*)")
_INVALID = _numbers(r"Invalid value (.*) for ([A-Z][A-Z0-9_]*), using default (-?\d+)\.?")
_RING_ORDER = _numbers(r"Channel (\d+)/(\d+) :((?: +-?\d+)*)(?:\.\.\.)?")
_RING = _numbers(r"Ring (\d+) : (-?\d+) -> (-?\d+) -> (-?\d+)")
_RANK = _numbers(r"comm (\S+) rank (\d+) n[Rr]anks (\d+)")
_NNODES = _numbers(r"nNodes (\d+)")
_QP_FIELDS = {name: _numbers(r"\b" + name + r" (-?\d+)") for name in ("IbDev", "Dev", "Port", "mtu", "GID", "LID")}
_PLUGIN_LOADED = _numbers(r"NET/Plugin ?: ?Loaded net plugin (.+) \(v(\d+)\)")
_PLUGIN_EXTERNAL = re.compile(r"Successfully loaded external network plugin (.+)")
_DMABUF = _numbers(r"DMA-BUF is available on GPU device (\d+)")


class IbDeviceText(NamedTuple):
    number: int              # NCCL's device index, "[%d]"
    name: str
    port: int
    link_layer: str
    tag: Optional[str]
    rail: Optional[int] = None
    plane: Optional[int] = None


def ib_devices(message: str) -> Tuple[List[IbDeviceText], bool, Optional[str], Optional[str]]:
    """A "NET/IB : Using ..." message: (devices, relaxed ordering, OOB interface, OOB address). A
    cut line yields the devices it still shows."""
    listing, sep, oob = message.partition("; OOB ")
    devices = [IbDeviceText(int(m.group(1)), m.group(2), int(m.group(3)), m.group(6), m.group(7),
                            int(m.group(4)) if m.group(4) else None, int(m.group(5)) if m.group(5) else None)
               for m in _IB_DEVICE.finditer(listing)]
    ifname = address = None
    if sep:
        ifname, _, rest = oob.partition(":")
        address = rest.split("<")[0] or None
    return devices, "[RO]" in listing, ifname or None, address


def socket_interfaces(message: str) -> List[Tuple[int, str, str]]:
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in _SOCKET_IF.finditer(message)]


def gdr_hca(message: str) -> Optional[Tuple[str, bool, int, str, Optional[str]]]:
    """"NET/<net> : GPU Direct RDMA Enabled|Disabled for HCA n 'name'": (net, on, n, name, why)."""
    if not message.startswith("NET/"):
        return None
    net, sep, rest = message[4:].partition(" : GPU Direct RDMA ")
    if not sep:
        return None
    m = _GDR_HCA.match(rest)
    if not m:
        return None
    return net, m.group(1) == "Enabled", int(m.group(2)), m.group(3), "no module" if m.group(4) else None


class GdrPath(NamedTuple):
    """One "GPU Direct RDMA Enabled|Disabled for GPU ... HCA|NET ..." line: a GPU-NIC pair."""

    enabled: bool
    gpu: str                    # bus id (hex) up to 2.23, the rank from 2.24, GPU/<sys>-<id> from 2.29
    hca: str                    # the NET device's index up to 2.20, its id from 2.21
    distance: Optional[int]
    level: Optional[int]
    rank: Optional[int] = None  # 2.29.2+: "(rank %d)"
    mode: Optional[str] = None  # "Default" | "PCI" (2.24.3+); "PCI": GDR over PCIe on a C2C system
    read: Optional[int] = None


_GDR_PAIR_2_29 = _numbers(r"GPU Direct RDMA (Enabled|Disabled) for GPU/(\S+) \(rank (-?\d+)\) - NET/(\S+) \(")
_READ_MODE = re.compile(r", read (\d{1,9}),? mode (\w+)|, read (\d{1,9})")


def gdr_path(message: str) -> Optional[GdrPath]:
    """"GPU Direct RDMA Enabled|Disabled for GPU g / HCA h (distance d <=|> l)[, read r[ mode m]]"
    (2.6-2.28, graph/paths.cc) or "... for GPU/s-g (rank r) - NET/s-n ([ using PXN via GPU/x, ]distance
    d <=|> l[, read r, mode m])" (2.29.2-2.30.4; a TRACE line from 2.30.7)."""
    rank = None
    m = _GDR_PATH.match(message)
    if m:
        on, gpu, hca = m.group(1) == "Enabled", m.group(2), m.group(3)
    else:
        m = _GDR_PAIR_2_29.match(message)
        if not m:
            return None
        on, gpu, rank, hca = m.group(1) == "Enabled", m.group(2), int(m.group(3)), m.group(4)
    d = _DISTANCE.search(message, m.end())
    rm = _READ_MODE.search(message, d.end()) if d else None
    read = mode = None
    if rm:
        read = int(rm.group(1) or rm.group(3))
        mode = rm.group(2)
    return GdrPath(on, gpu, hca, int(d.group(1)) if d else None, int(d.group(3)) if d else None, rank, mode, read)


def queue_pair(message: str) -> Optional[dict]:
    """A "NET/IB: ... Port p qpn q mtu m GID g|LID l ..." message: its fields; None for others."""
    if not message.startswith("NET/IB:") or " mtu " not in message or " Port " not in message:
        return None
    if " qpn " not in message and " qp_num " not in message:
        return None
    out = {}
    for name, rx in _QP_FIELDS.items():
        m = rx.search(message)
        if m:
            out[name] = int(m.group(1))
    if "Port" not in out or "mtu" not in out:
        return None
    return out


def channels(message: str) -> Optional[dict]:
    m = _CHANNELS.match(message)
    if not m:
        return None
    names = ("coll", "collnet", "nvls", "p2p", "p2p_per_peer")
    return {n: int(v) for n, v in zip(names, m.groups()) if v is not None}


def env_setting(message: str) -> Optional[Tuple[str, str, str]]:
    """(name, value, form) of "X set by environment to V[.]" or "NCCL_X set to V"."""
    m = _SET_BY_ENV.fullmatch(message)
    if m:
        value = m.group(2)
        # misc/param.cc prints integers as "%lld." -- the full stop is not part of the value
        if value.endswith(".") and value[:-1].lstrip("-").isdigit():
            value = value[:-1]
        return m.group(1), value, "set by environment"
    m = _SET_TO.fullmatch(message)
    if m:
        return m.group(1), m.group(2), "set to"
    return None


def env_invalid(message: str) -> Optional[Tuple[str, str, str]]:
    """(name, value given, default used) of "Invalid value V for X, using default D."."""
    m = _INVALID.fullmatch(message)
    return (m.group(2), m.group(1), m.group(3)) if m else None


def ring_order(message: str) -> Optional[Tuple[int, List[int]]]:
    m = _RING_ORDER.fullmatch(message)
    if not m:
        return None
    return int(m.group(1)), [int(x) for x in m.group(3).split()]


def ring_neighbours(message: str) -> Optional[Tuple[int, int, int, int]]:
    m = _RING.fullmatch(message)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))) if m else None


class Connection(NamedTuple):
    """One connection line: "Ring|Channel c[/i] : a[x] -> b[y] [send|receive] via TRANSPORT/...".

    `local` is this process's end (the sender of a send, the receiver of a receive, the sender of
    a P2P/SHM line, which has no direction); `gpu` the bus id (up to 2.17) or NVML index (2.18+)
    printed in brackets after it."""

    channel: int
    direction: Optional[str]      # send | receive | None (P2P, SHM)
    local_rank: int
    gpu: Optional[str]
    peer_rank: int
    transport: str                # NET | P2P | SHM | COLLNET | ...
    via: str                      # what follows "via ": "NET/IB/1/GDRDMA", "P2P/IPC", ...
    net: Optional[str] = None     # NET only: the net's name (IB, Socket, IBext_v8, AWS Libfabric, ...)
    netdev: Optional[int] = None  # NET only: the NET device index
    proxy_rank: Optional[int] = None  # NET "(%d)": the rank whose NIC carries it (PXN)
    gdr: bool = False             # NET "/GDRDMA"
    gdr_mode: Optional[str] = None  # "PCI" for "/GDRDMA(PCI)" (2.26.2+)
    shared: bool = False          # NET "/Shared"


# graph/connect.cc ... transport/net.cc: "Ring %02d : %d[%lx] -> %d[%lx] [send] via NET/%s/%d%s" (v2.6.4-1
# net.cc:76), "Channel %02d : ..." (v2.7.3-1 net.cc:102), "Channel %02d/%d : ..." (v2.12.7-1 net.cc:184),
# "%d[%d]" with the NVML index (v2.18.3-1 net.cc:186); older socket lines print bare ranks.
_CONNECTION = _numbers(r"(?:Ring|Channel) (\d+)(?:/\d+)? : (-?\d+)(?:\[([0-9a-fA-F]{1,16})\])? -> (-?\d+)"
                       r"(?:\[([0-9a-fA-F]{1,16})\])?(?: \[(send|receive)\])? via (.+)")
_NET_VIA = _numbers(r"NET/(.+)/(\d+)(?:\((\d+)\))?(/GDRDMA(?:\(PCI\))?)?(/Shared)?(?:/flush=\S*)?")


def connection(message: str) -> Optional[Connection]:
    m = _CONNECTION.fullmatch(message)
    if not m:
        return None
    channel, a, ga, b, gb, direction, via = m.groups()
    local, gpu, peer = (int(b), gb, int(a)) if direction == "receive" else (int(a), ga, int(b))
    if via.startswith("NET/"):
        n = _NET_VIA.fullmatch(via)
        if not n:
            return None
        gdr = n.group(4) or ""
        return Connection(int(channel), direction, local, gpu, peer, "NET", via, n.group(1), int(n.group(2)),
                          int(n.group(3)) if n.group(3) else None, bool(gdr), "PCI" if "(PCI)" in gdr else None,
                          bool(n.group(5)))
    kind = "SHM" if via.startswith(("direct shared memory", "SHM")) else via.split("/", 1)[0]
    return Connection(int(channel), direction, local, gpu, peer, kind, via)


def net_connection(message: str) -> Optional[Tuple[str, bool]]:
    """(net name, GDR) of a NET connection line; None for any other line."""
    c = connection(message)
    return (c.net or "", c.gdr) if c is not None and c.transport == "NET" else None


_RINGS_GDR = _numbers(r"Connected all rings, use ring PXN (\d+) GDR (\d+)")
_NET_MISMATCH = _numbers(r"Detected mixed local Net device counts across ranks \(min (\d+), max (\d+)\)\. (.*)")
_RANK_NET_COUNT = _numbers(r"Rank (\d+) has (\d+) local Net devices \(max (\d+)\)\.")
_GIT_VERSION = re.compile(r"NCCL git version (\S+) (\S+)")
_ENV_PLUGIN = re.compile(r"Successfully loaded external env plugin (.+)|ENV/Plugin: Using (.+?) \(v\d{1,3}\)")
_OTHER_PLUGIN = re.compile(r"(TUNER|PROFILER|GIN)/Plugin: (?:Using|Loaded|Successfully loaded) (?:external )?"
                           r"(?:tuner |profiler |gin |plugin )*(.+?)(?: \(v\d{1,3}\))?")


def rings_gdr(message: str) -> Optional[Tuple[int, int]]:
    """(PXN, GDR) of "Connected all rings, use ring PXN %d GDR %d" (transport/generic.cc, 2.24.3+)."""
    m = _RINGS_GDR.fullmatch(message)
    return (int(m.group(1)), int(m.group(2))) if m else None


def net_mismatch(message: str) -> Optional[Tuple[int, int, bool]]:
    """(min, max, ignored) of "Detected mixed local Net device counts across ranks (min %d, max %d)."
    (init.cc, 2.30.3+): INFO when NCCL_IGNORE_NET_MISMATCH=1 lets the job go on, WARN otherwise."""
    m = _NET_MISMATCH.fullmatch(message)
    return (int(m.group(1)), int(m.group(2)), m.group(3).startswith("Ignoring")) if m else None


def rank_net_count(message: str) -> Optional[Tuple[int, int, int]]:
    """(rank, devices, max) of "Rank %d has %d local Net devices (max %d)." (init.cc, 2.30.3+)."""
    m = _RANK_NET_COUNT.fullmatch(message)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def git_version(message: str) -> Optional[str]:
    """"branch hash" of "NCCL git version %s %s" (misc/git_version.cc, 2.29.2+)."""
    m = _GIT_VERSION.fullmatch(message)
    return f"{m.group(1)} {m.group(2)}" if m else None


def env_plugin(message: str) -> Optional[str]:
    m = _ENV_PLUGIN.fullmatch(message)
    return (m.group(1) or m.group(2)) if m else None


def other_plugin(message: str) -> Optional[Tuple[str, str]]:
    """(kind, name) of a tuner, profiler or GIN plugin NCCL says it loaded or uses."""
    m = _OTHER_PLUGIN.fullmatch(message)
    if not m or m.group(2).startswith(("internal", "Failed", "Could not")):
        return None
    return m.group(1).lower(), m.group(2)


def rank_line(message: str) -> Optional[Tuple[int, int, Optional[int]]]:
    """(rank, nranks, nnodes or None) from a "comm 0x.. rank r nranks n ..." line."""
    m = _RANK.search(message)
    if not m:
        return None
    n = _NNODES.search(message, m.end())
    return int(m.group(2)), int(m.group(3)), int(n.group(1)) if n else None


def plugin_loaded(message: str) -> Optional[str]:
    m = _PLUGIN_LOADED.fullmatch(message) or _PLUGIN_EXTERNAL.fullmatch(message)
    return m.group(1) if m else None


def dmabuf_gpu(message: str) -> Optional[int]:
    m = _DMABUF.match(message)
    return int(m.group(1)) if m else None


class PortEvent(NamedTuple):
    """One event NCCL's async thread logged for a device port: what happened and its numbers."""

    device: str
    port: int
    kind: str          # gid-changed | gid-change | gid-refreshed | gid-refresh-failed | gid-not-ethernet |
    #                    port-error | port-active | async-event | device-fatal | speed-change
    detail: str = ""   # "idx 3 -> 5, gid a -> b", "400000 -> 200000 Mbps", the event's name


# rdma-core libibverbs/verbs.h enum ibv_event_type: IBV_EVENT_GID_CHANGE is the 19th (18).
IBV_EVENT_GID_CHANGE = 18
_DEV_PORT = r"([^\s:]{1,64}):(\d+)"
_PORT_EVENTS = (
    (_numbers(r"NET/IB : " + _DEV_PORT + r" GID table changed"), "gid-changed"),
    (_numbers(r"NET/IB: \w{1,64}: GID table changed on " + _DEV_PORT), "gid-change"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" GID refreshed: (idx -?\d+ -> -?\d+, gid \S{1,64} -> \S{1,64})"),
     "gid-refreshed"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" marking device with fatal error after GID-change event handler failed"),
     "gid-refresh-failed"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" link is not Ethernet; ignoring GID change"), "gid-not-ethernet"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" speed change detected: (-?\d+ -> (?:\d+|N/A) Mbps)"), "speed-change"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" Got non-fatal async event: ([^(]{1,64})\((\d+)\)"), "async-event"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" Got async error event: (.{1,64})"), "async-event"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" async fatal event: (.{1,128})"), "device-fatal"),
    (_numbers(r"NET/IB : " + _DEV_PORT + r" unknown event type \((\d+)\)"), "unknown-event"),
)


def port_event(message: str) -> Optional[PortEvent]:
    """A port event of NCCL's IB async thread (module docstring); None for any other line."""
    if not message.startswith("NET/IB"):
        return None
    for rx, kind in _PORT_EVENTS:
        m = rx.fullmatch(message)
        if not m:
            continue
        dev, port = m.group(1), int(m.group(2))
        if kind == "async-event":
            name = m.group(3).strip()
            kind = {"port error": "port-error", "port active": "port-active"}.get(name, "async-event")
            return PortEvent(dev, port, kind, name)
        if kind == "unknown-event":
            if int(m.group(3)) != IBV_EVENT_GID_CHANGE:
                return None
            return PortEvent(dev, port, "gid-changed", "unknown event type (18)")
        return PortEvent(dev, port, kind, m.group(3) if m.lastindex and m.lastindex >= 3 else "")
    return None


def speed_change(detail: str) -> Tuple[Optional[int], Optional[int]]:
    """(old, new) Mbps of a speed-change event's detail; None where NCCL printed N/A. 2.30.7 prints
    its device's speed as the old one, in the unit ncclIbDev.speed keeps (Mbps)."""
    old, _, rest = detail.partition(" -> ")
    new = rest.split(" ", 1)[0]
    return (int(old) if _count(old.lstrip("-")) else None, int(new) if _count(new) else None)


class DiagLine(NamedTuple):
    """One "NCCL DIAG" line (2.31.2+): who printed it, its tag (OK, INFO or None for the header and the
    completion line), the check it names ("p2p", "NCCL environment", ...) and its text."""

    host: Optional[str]
    pid: Optional[int]
    tag: Optional[str]
    check: Optional[str]
    text: str


_DIAG = re.compile(r"(?:(\S{1,255}):(\d{1,10}) )?NCCL DIAG (.*)")
_DIAG_TAG = re.compile(r"\[(OK|INFO)\] +(.*)")


def diag_line(line: str) -> Optional[DiagLine]:
    """A line NCCL_RUN_DIAGNOSTICS or RAS diagnostics printed, launcher prefixes allowed before it."""
    k = line.find("NCCL DIAG ")
    if k < 0:
        return None
    start = line.rfind(" ", 0, max(k - 1, 0)) + 1 if k > 0 else 0
    m = _DIAG.fullmatch(line[start:].rstrip())
    if not m:
        return None
    host, pid, text = m.group(1), m.group(2), m.group(3)
    tag = check = None
    t = _DIAG_TAG.fullmatch(text)
    if t:
        tag, text = t.group(1), t.group(2)
        head, sep, _ = text.partition(": ")
        check = head if sep and len(head) <= 64 else None
    return DiagLine(host, int(pid) if pid else None, tag, check, text)
