"""What NCCL does by itself, per release: the defaults and behaviours the rules decide against.

Every entry was read in NVIDIA/nccl's source at the release tag named (`NCCL_PARAM(...)` lines
and the code that uses them); docs/rules/*.md cite the files. A release between two tags in a
table takes the value of the newest tag at or below it. `None` means the variable does not
exist in that release (NCCL ignores it there).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

Version = Tuple[int, int, int]

# GID auto-selection (NCCL_IB_ADDR_FAMILY/_RANGE/_ROCE_VERSION_NUM, IB_GID_INDEX default -1):
# v2.21.5-1 src/transport/net_ib.cc:80 (2.20.5 still has `IbGidIndex ... 0`).
GID_AUTO_SELECT: Version = (2, 21, 5)
# From 2.26.2 an EINVAL read of gid_attrs/types/<i> skips the GID instead of failing the
# connection (v2.26.2 src/transport/net_ib.cc:336-338); 2.21.5-2.25.x abort.
GID_TYPE_EINVAL_TOLERATED: Version = (2, 26, 2)
# /sys/module/nvidia_peermem/version counts as a peer-memory module from 2.23.4
# (v2.23.4 src/transport/net_ib.cc:694-696).
PEERMEM_SYSFS: Version = (2, 23, 4)
# The files ncclIbGdrSupport() checks with access(F_OK) for a peer-memory module, by release
# (a key is the client's name under /sys/kernel/mm/memory_peers, or the module's under /sys/module):
PEER_MEMORY_PATHS = {
    "nv_mem": "/sys/kernel/mm/memory_peers/nv_mem/version",
    "nvidia-peermem": "/sys/kernel/mm/memory_peers/nvidia-peermem/version",
    "nv_mem_nc": "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "nvidia_peermem": "/sys/module/nvidia_peermem/version",
}
PEER_MEMORY_CHECKS: Tuple[Tuple[Version, Tuple[str, ...]], ...] = (
    # nv_mem alone: v2.3.5-5 src/transport/net_ib.cu:190 .. v2.9.6-1 src/transport/net_ib.cc:223
    ((0, 0, 0), ("nv_mem",)),
    # "Also support the new nvidia-peermem module": v2.9.8-1 net_ib.cc:224-226,
    # v2.12.12-1 net_ib.cc:269-271, v2.19.3-1 net_ib.cc:285-287 .. v2.21.5-1 net_ib.cc:562-564
    ((2, 9, 8), ("nv_mem", "nvidia-peermem")),
    # memory_peers/nvidia-peermem replaced by nv_mem_nc: v2.22.3-1 net_ib.cc:614-616
    ((2, 22, 3), ("nv_mem", "nv_mem_nc")),
    # /sys/module/nvidia_peermem/version added: v2.23.4-1 net_ib.cc:694-696 .. v2.28.9-1
    # net_ib.cc:872-874, v2.30.7-1 src/transport/net_ib/gdr.cc:18-20
    ((2, 23, 4), ("nv_mem", "nv_mem_nc", "nvidia_peermem")),
)
# NCCL_DMABUF_ENABLE (default 1) from 2.13.4 (v2.13.4 src/init.cc:272).
DMABUF: Version = (2, 13, 4)
# NCCL_NET_GDR_C2C default 0 in 2.26.2, 1 from 2.27.3 (v2.27.3 src/graph/paths.cc:386).
GDR_C2C_DEFAULT_ON: Version = (2, 27, 3)
# NCCL_CONF_FILE read from 2.23.4 (absent in 2.22.3).
CONF_FILE_VAR: Version = (2, 23, 4)

_TABLE = {
    # NCCL_IB_TIMEOUT: 14 up to 2.13.4, 18 from 2.14.3, 20 from 2.23.4 (2.30.7 connect.cc:15).
    "NCCL_IB_TIMEOUT": (((0, 0, 0), 14), ((2, 14, 3), 18), ((2, 23, 4), 20)),
    # NCCL_IB_SPLIT_DATA_ON_QPS: new in 2.18.1 with 1 (net_ib.cc:966), 0 from 2.20.3 (net_ib.cc:1301).
    "NCCL_IB_SPLIT_DATA_ON_QPS": (((0, 0, 0), None), ((2, 18, 1), 1), ((2, 20, 3), 0)),
    # NCCL_IB_QPS_PER_CONNECTION: 1 in every release checked (2.12.12 .. 2.30.7).
    "NCCL_IB_QPS_PER_CONNECTION": (((0, 0, 0), 1),),
    # NCCL_IB_TC / NCCL_IB_SL: 0, then -1 (= ncclConfig_t.trafficClass, else 0) from 2.26.2.
    "NCCL_IB_TC": (((0, 0, 0), 0), ((2, 26, 2), -1)),
    "NCCL_IB_SL": (((0, 0, 0), 0), ((2, 26, 2), -1)),
    # NCCL_IB_FIFO_TC: new in 2.22.3 with 0 meaning "unset"; -1 (and 0 = TC 0) from 2.24.3.
    "NCCL_IB_FIFO_TC": (((0, 0, 0), None), ((2, 22, 3), 0), ((2, 24, 3), -1)),
    # NCCL_IB_GID_INDEX: 0 (fixed), -1 (auto-select) from 2.21.5.
    "NCCL_IB_GID_INDEX": (((0, 0, 0), 0), (GID_AUTO_SELECT, -1)),
    # NCCL_CROSS_NIC: 2 in every release checked (2.30.7 src/graph/search.cc:16).
    "NCCL_CROSS_NIC": (((0, 0, 0), 2),),
    # NCCL_IGNORE_CPU_AFFINITY: 0 in every release checked (2.30.7 src/graph/topo.cc:2148).
    "NCCL_IGNORE_CPU_AFFINITY": (((0, 0, 0), 0),),
}


def default(name: str, version: Optional[Version]) -> Optional[int]:
    """NCCL's default of `name` in `version`; the newest release's default when unknown."""
    steps: Sequence[Tuple[Version, Optional[int]]] = _TABLE[name]
    if version is None:
        return steps[-1][1]
    value = None
    for since, v in steps:
        if version >= since:
            value = v
    return value


def peer_memory_checks(version: Optional[Version]) -> Tuple[str, ...]:
    """The PEER_MEMORY_PATHS keys `version` checks; every key some release checks when unknown."""
    if version is None:
        return tuple(PEER_MEMORY_PATHS)
    checked: Tuple[str, ...] = ()
    for since, keys in PEER_MEMORY_CHECKS:
        if version >= since:
            checked = keys
    return checked


def peer_memory_releases(key: str) -> str:
    """The releases that check PEER_MEMORY_PATHS[key], as text: "2.9.8 up to 2.22.3 (not included)",
    "2.23.4 and later", "every release"."""
    spans, start = [], None
    for i, (since, keys) in enumerate(PEER_MEMORY_CHECKS):
        if key in keys and start is None:
            start = since
        if start is not None and (key not in keys or i == len(PEER_MEMORY_CHECKS) - 1):
            if key in keys:
                spans.append(f"{text(start)} and later" if start != (0, 0, 0) else "every release")
            else:
                first = text(start) + " up" if start != (0, 0, 0) else "releases up"
                spans.append(f"{first} to {text(since)} (not included)")
            start = None
    return ", ".join(spans)


def defaults_differ(name: str) -> bool:
    """Whether the default of `name` changed between releases (an unknown release matters)."""
    return len({v for _, v in _TABLE[name]}) > 1


def text(version: Optional[Version]) -> str:
    return ".".join(str(x) for x in version) if version else "unknown"
