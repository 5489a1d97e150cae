"""The one release gate: what each NCCL release does, reads and gets wrong, with where that is said.

    gate("rail-ids-in-ib-hca", (2, 30, 7))   -> True   (None when the release is unknown)
    reads("NCCL_IB_SUBNET_AWARE_ROUTING", (2, 21, 5)) -> False

Two tables, both read at NVIDIA/nccl's tags (`rocetune explain VAR` cites them):

* RELEASE_FACTS: a behaviour or known bug, the first release that has it and the first that no
  longer does (None: every release since), and its source -- a file:line at a tag, a release's
  notes (the tag's commit message up to 2.29; GitHub's release page from 2.30), or an issue;
* data/nccl_var_releases.json: the first and last release that reads each variable of rocetune's
  catalog, written by tools/nccl_var_releases.py from NCCL's source at every tag.

Rules, lint and the log reader ask `gate` and `reads` instead of comparing versions themselves,
so a release boundary is written once, with its source.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from ..model.record import FrozenRecord
from ..pkgdata import package_json
from .versions import parse_version

Version = Tuple[int, int, int]
_VAR_RELEASES = "data/nccl_var_releases.json"


class ReleaseFact(FrozenRecord):
    id: str
    first: Version  # the first release it holds for ((0, 0, 0): every release before `until`)
    until: Optional[Version]  # the first release it no longer holds for; None: still holds
    what: str
    source: str
    _fields = ("id", "first", "until", "what", "source")

    def __init__(self, id: str, first: Version, until: Optional[Version], what: str, source: str) -> None:
        self._set(id, first, until, what, source)

    def span(self) -> str:
        start = "every release" if self.first == (0, 0, 0) else _text(self.first)
        if self.until is None:
            return f"{start} and later" if self.first != (0, 0, 0) else "every release"
        return f"{start} up to {_text(self.until)} (not included)" if self.first != (0, 0, 0) else \
            f"releases before {_text(self.until)}"


_FACTS = (
    ReleaseFact("rail-ids-in-ib-hca", (2, 30, 7), None,
                "NCCL_IB_HCA entries are dev:port:rail:plane; a rail id is kept per device and NCCL_CROSS_NIC=0 "
                "compares rail ids before asic and port",
                "v2.30.7-1 src/misc/utils.cc:203-207 (parsed), src/transport/net_ib/init.cc:436 (kept), "
                "src/graph/search.cc:605-606 (compared); 2.30.3 and 2.30.4 leave railId undefined "
                "(v2.30.3-1 net_ib/init.cc:489)"),
    ReleaseFact("ib-subnet-aware-routing", (2, 30, 7), None,
                "NCCL_IB_SUBNET_AWARE_ROUTING=1 makes a RoCE connection take the local NIC whose address shares "
                "the peer's subnet (NCCL_IB_SUBNET_PREFIX_LEN, default 24), default 0",
                "v2.30.7-1 src/transport/net_ib/connect.cc:61-62, 517-592 (ncclIbFindDevBySubnet), 802, 1465"),
    ReleaseFact("ignore-net-mismatch-default-on", (2, 30, 3), None,
                "NCCL_IGNORE_NET_MISMATCH defaults to 1: ranks that see different numbers of NICs go on, and a rank "
                "that could not open one NIC can hang the job without an error",
                "v2.30.3-1 src/init.cc:128, 1293-1297; env.rst 'NCCL_IGNORE_NET_MISMATCH (since 2.30)'; "
                "NVIDIA/nccl#2428"),
    ReleaseFact("gin-ib-tc", (2, 30, 7), None,
                "NCCL_GIN_IB_TC sets the traffic class of GPU-Initiated Networking's queue pairs (default -1: "
                "NCCL_IB_TC's)",
                "v2.30.7-1 src/transport/net_ib/gin.cc:47, 191, 283"),
    ReleaseFact("ece-roce-slowdown", (2, 19, 1), (2, 26, 3),
                "NCCL exchanges ECE options (enhanced connection establishment) in a way that can slow RoCE down; "
                "NCCL_IB_ECE_ENABLE=0 turns ECE off from 2.23.4",
                "ECE from v2.19.1-1 (src/include/ibvsymbols.h:39 ibv_query_ece); fixed in 2.26.3 (release notes, "
                "the v2.26.3-1 tag: 'Fix the exchange of enhanced connection establishment (ECE) options to "
                "address potential slowdowns on networks utilizing RoCE'); NCCL_IB_ECE_ENABLE from v2.23.4-1 "
                "src/transport/net_ib.cc:100; NVIDIA/nccl#1403"),
    ReleaseFact("roce-port-recovery", (2, 30, 3), (2, 31, 2),
                "NCCL_IB_RESILIENCY_PORT_RECOVERY=1 on RoCE: after a port flap the kernel may register the port's "
                "GIDs at other indexes while NCCL keeps the cached one, and recovery does not complete",
                "port recovery from v2.30.3-1 src/transport/net_ib/p2p_resiliency_recovery.cc:10 (default 0); "
                "NVIDIA/nccl#2157 (recovery failure); the GID is cached: v2.30.7-1 src/transport/net_ib/"
                "common.cc:152-154 only warns on IBV_EVENT_GID_CHANGE; 2.31.2 refreshes it (gid-change-refresh)"),
    ReleaseFact("gid-change-refresh", (2, 31, 2), None,
                "on a GID-change event of a RoCE port NCCL reads the port's GID again (INFO 'GID refreshed: idx a "
                "-> b') instead of keeping the cached one, and marks the device fatal when it cannot; on a "
                "multi-port or data-direct HCA the event may be taken by another port's thread (NVIDIA/nccl#1819)",
                "v2.31.2-1 (889806836) src/transport/net_ib/common.cc ncclIbEventGidChange and the "
                "IBV_EVENT_GID_CHANGE case of ncclIbAsyncThreadMain; v2.30.7-1 common.cc:152-154 (WARN only); "
                "NVIDIA/nccl#1819 (comment of 2026-08-26 on the handler at v2.31.2-1)"),
    ReleaseFact("port-recovery-attempts-20", (2, 31, 2), None,
                "20 recovery attempts per port (NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX; 5 before 2.31.2)",
                "v2.31.2-1 (889806836) src/transport/net_ib/p2p_resiliency_recovery.cc:19 (20); v2.30.7-1 "
                "p2p_resiliency_recovery.cc:19 (5)"),
    ReleaseFact("rail-plane-detection-cx9", (2, 32, 3), None,
                "NCCL detects the rails and planes of ConnectX-9 NICs itself: rail ids in NCCL_IB_HCA are needed "
                "only where it cannot (other NICs, or a cabling it cannot see)",
                "2.32.3 release notes (NVIDIA/nccl#2419: 'CX9 rail and plane detection')"),
    ReleaseFact("attn-log-level", (2, 32, 3), None,
                "a notice level between WARN and INFO: 'NCCL ATTN' lines, printed like WARN (file:line, an empty "
                "line before) and with NCCL_DEBUG=INFO or ATTN",
                "2.32-era src/debug.cc ncclDebugLogV in the public code index (NCCL_LOG_ATTN; commit not "
                "identified); 2.32.3 release notes"),
    ReleaseFact("log-sink-takes-lines", (2, 32, 3), None,
                "a log sink (NCCL_LOG_PLUGIN, libnccl-log-<name>.so, or the application's ncclSetDebugLogSink) "
                "takes every record and NCCL writes nothing to NCCL_DEBUG_FILE: an empty log file is no sign that "
                "NCCL was quiet",
                "2.32-era src/debug.cc ncclDebugLogV ('NCCL does not write it to ncclDebugFile') and the log "
                "plugin loader reading NCCL_LOG_PLUGIN, in the public code index (commit not identified)"),
    ReleaseFact("mnnvl-stack-unlimited", (2, 20, 3), None,
                "on multi-node NVLink systems, a stack limit of 'unlimited' makes glibc give NCCL's threads 2 MiB "
                "stacks, and NCCL crashes; 8192 KiB is known to work",
                "2.27.6 release notes (the v2.27.6-1 tag: 'A note for users on MNNVL systems'); MNNVL from "
                "v2.20.3-1 (src/graph/connect.cc:260)"),
    ReleaseFact("c2c-gdr-off-by-default", (0, 0, 0), (2, 27, 3),
                "GPUDirect RDMA is off by default for a NIC behind the CPU of a C2C (Grace) system: "
                "NCCL_NET_GDR_C2C (2.26.2, default 0) or NCCL_NET_GDR_LEVEL=SYS turns it on; 2.27.3 turns it on "
                "by default",
                "v2.26.2-1 src/graph/paths.cc:381 (NCCL_NET_GDR_C2C 0); v2.27.3-1 src/graph/paths.cc:386 (1) and "
                "its release notes ('Enable GPUDirect RDMA for the NICs by default'); NVIDIA/nccl#1579"),
    ReleaseFact("gin-needs-peermem-or-dmabuf", (2, 28, 7), None,
                "GPU-Initiated Networking (GIN, its GDAKI transport) needs nvidia-peermem or DMA-BUF (kernel >= "
                "6.1); the legacy nv_peer_mem module does not do",
                "2.28.7 release notes (the v2.28.7-1 tag: 'Requires nvidia-peermem or DMABUF support. When using "
                "DMABUF, linux kernel >= 6.1 is required')"),
    ReleaseFact("net-plugin-path-value", (2, 21, 5), None,
                "NCCL_NET_PLUGIN may name a library file or path; before 2.21.5 NCCL loads only "
                "libnccl-net-<value>.so",
                "v2.20.5-1 src/net.cc:344-346 (libnccl-net-%s.so only); v2.21.5-1 src/net.cc:386-397 (the value "
                "itself, then libnccl-net-%s.so)"),
    ReleaseFact("ib-hca-empty-port-any", (2, 30, 7), None,
                "an empty port in NCCL_IB_HCA (mlx5_0::0, mlx5_0:) means any port; before 2.30.7 it is port 0, "
                "which matches no port, so the device is silently left out",
                "v2.30.4-1 src/misc/utils.cc:212 (atoi of the empty port: 0); v2.30.7-1 src/misc/utils.cc:203-204 "
                "(empty: -1, any port)"),
    ReleaseFact("rma-plugin", (2, 30, 7), None,
                "an RMA plugin (NCCL_RMA_PLUGIN, libnccl-rma.so; else the GIN, then the net plugin's library) "
                "carries host-driven one-sided operations and GIN's proxy",
                "v2.30.7-1 src/plugin/rma.cc, src/plugin/rma/rma_v13.cc, rma_v14.cc; env.rst NCCL_RMA_PLUGIN "
                "(since 2.30.7)"),
    ReleaseFact("conf-keeps-cr", (0, 0, 0), (2, 30, 3),
                "a CRLF nccl.conf line keeps its carriage return in the value",
                "v2.29.7-1 src/misc/param.cc:40-51 (getline, only '\\n' cut); v2.30.3-1 src/misc/param.cc:36-37 "
                "cuts '\\r' too"),
    ReleaseFact("env-plugin", (2, 28, 7), None,
                "an env plugin (NCCL_ENV_PLUGIN, libnccl-env.so) answers every variable NCCL reads",
                "v2.28.7-1 src/plugin/env.cc and its release notes ('New NCCL Environment Plugin')"),
)
RELEASE_FACTS: Dict[str, ReleaseFact] = {f.id: f for f in _FACTS}


def gate(fact_id: str, version: Optional[Version]) -> Optional[bool]:
    """Whether `fact_id` holds for NCCL `version`; None when the release is unknown."""
    f = RELEASE_FACTS[fact_id]
    if version is None:
        return None
    return f.first <= tuple(version) and (f.until is None or tuple(version) < f.until)


def fact(fact_id: str) -> ReleaseFact:
    return RELEASE_FACTS[fact_id]


@lru_cache(maxsize=1)
def _variables() -> Dict[str, Any]:
    return package_json(__package__, _VAR_RELEASES)


def variable_releases(name: str) -> Optional[Dict[str, Any]]:
    """{"since": "2.30.7", "last": None, ...} for a variable some release reads; None otherwise. A name
    first read by a release past the newest tree scanned comes from `read_elsewhere`, with its `source`."""
    doc = _variables()
    return doc["variables"].get(name) or doc.get("read_elsewhere", {}).get(name)


def added_in(name: str) -> Optional[str]:
    """The first release that reads `name` ("2.31.2"); None when it is not known, or is as old as the oldest
    tag scanned."""
    info = variable_releases(name)
    if info is None or info["since"] == _variables()["source"]["oldest"]:
        return None
    return str(info["since"])


def reads(name: str, version: Optional[Version]) -> Optional[bool]:
    """Whether NCCL `version` reads `name`; None when the release or the variable is unknown to the
    table (a release older than the oldest tag scanned, or newer than the newest, counts as unknown
    for a variable that starts or ends at that edge)."""
    info = variable_releases(name)
    if version is None or info is None:
        return None
    if "source" in info:  # read by a release past the scan: from `since` on, as far as is known
        since = parse_version(info["since"])
        return since is not None and tuple(version) >= since
    src = _variables()["source"]
    oldest, newest = parse_version(src["oldest"]), parse_version(src["newest"])
    v = tuple(version)
    for since, last in info.get("spans") or [[info["since"], info["last"]]]:
        s, last_v = parse_version(since), parse_version(last) if last else None
        if s is not None and s <= v and (last_v is None or v[:3] <= last_v):
            return True
    if oldest is not None and v < oldest and parse_version(info["since"]) == oldest:
        return None
    if newest is not None and v[:2] > newest[:2] and info["last"] is None:
        return None
    return False


def variable_text(name: str) -> Optional[str]:
    """`read by NCCL 2.30.7 and later` / `read by NCCL 2.3.5 (or older) up to 2.4.8`."""
    info = variable_releases(name)
    if info is None:
        return None
    oldest = _variables()["source"]["oldest"]
    since = info["since"] + (" (or older)" if info["since"] == oldest else "")
    if info["last"] is None:
        return f"read by NCCL {since} and later"
    return f"read by NCCL {since} up to {info['last']}"


def facts_about(text: str) -> List[ReleaseFact]:
    """The release facts whose description names `text` (a variable)."""
    return [f for f in _FACTS if text in f.what]


def _text(v: Version) -> str:
    return ".".join(str(x) for x in v)


def empty_port_any(features: Optional[dict]) -> bool:
    """Whether the NCCL the host's jobs load reads an empty NCCL_IB_HCA port (`mlx5_0:`) as any
    port (2.30.7 on) rather than port 0, which matches none (release fact ib-hca-empty-port-any).
    Unknown release: port 0, what every release before 2.30.7 does."""
    lib = ((features or {}).get("kernel") or {}).get("nccl")
    version = parse_version(lib.get("version")) if isinstance(lib, dict) else None
    return gate("ib-hca-empty-port-any", version) is True
