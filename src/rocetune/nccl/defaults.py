"""What NCCL does by itself, per release: the defaults and behaviours the rules decide against.

Every entry was read in NVIDIA/nccl's source at the release tag named (`NCCL_PARAM(...)` lines
and the code that uses them); docs/rules/*.md cite the files. A release between two tags in a
table takes the value of the newest tag at or below it. `None` means the variable does not
exist in that release (NCCL ignores it there).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

Version = Tuple[int, int, int]

# GID auto-selection (NCCL_IB_ADDR_FAMILY/_RANGE/_ROCE_VERSION_NUM, IB_GID_INDEX default -1):
# v2.21.5-1 src/transport/net_ib.cc:80 (2.20.5 still has `IbGidIndex ... 0`).
GID_AUTO_SELECT: Version = (2, 21, 5)
# From 2.26.2 an EINVAL read of gid_attrs/types/<i> skips the GID instead of failing the
# connection (v2.26.2 src/transport/net_ib.cc:336-338); 2.21.5-2.25.x abort.
GID_TYPE_EINVAL_TOLERATED: Version = (2, 26, 2)
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

# name -> ((first release, default, where NCCL's source says so), ...), oldest first. Read from
# the NCCL_PARAM line at every release tag v2.3.7-1 .. v2.30.7-1 (60 tags); a step is the first
# tag with a new value. None: the variable does not exist in that release.
_STEPS = {
    "NCCL_IB_TIMEOUT": (((0, 0, 0), 14, "v2.3.7 src/transport/net_ib.cu:51"),
                        ((2, 14, 3), 18, "v2.14.3 src/transport/net_ib.cc:75"),
                        ((2, 23, 4), 20, "v2.23.4 src/transport/net_ib.cc:89")),
    "NCCL_IB_SPLIT_DATA_ON_QPS": (((0, 0, 0), None, None),
                                  ((2, 18, 1), 1, "v2.18.1 src/transport/net_ib.cc:966"),
                                  ((2, 20, 3), 0, "v2.20.3 src/transport/net_ib.cc:1301")),
    "NCCL_IB_QPS_PER_CONNECTION": (((0, 0, 0), None, None),
                                   ((2, 10, 3), 1, "v2.10.3 src/transport/net_ib.cc:353")),
    "NCCL_IB_TC": (((0, 0, 0), 0, "v2.3.7 src/transport/net_ib.cu:54"),
                   ((2, 26, 2), -1, "v2.26.2 src/transport/net_ib.cc:102")),
    "NCCL_IB_SL": (((0, 0, 0), 0, "v2.3.7 src/transport/net_ib.cu:53"),
                   ((2, 26, 2), -1, "v2.26.2 src/transport/net_ib.cc:101")),
    "NCCL_IB_FIFO_TC": (((0, 0, 0), None, None),
                        ((2, 22, 3), 0, "v2.22.3 src/transport/net_ib.cc:92"),
                        ((2, 24, 3), -1, "v2.24.3 src/transport/net_ib.cc:100")),
    "NCCL_IB_GID_INDEX": (((0, 0, 0), 0, "v2.3.7 src/transport/net_ib.cu:50"),
                          (GID_AUTO_SELECT, -1, "v2.21.5 src/transport/net_ib.cc:80")),
    "NCCL_CROSS_NIC": (((0, 0, 0), None, None),
                       ((2, 5, 6), 2, "v2.5.6 src/init.cc:431")),
    "NCCL_IGNORE_CPU_AFFINITY": (((0, 0, 0), None, None),
                                 ((2, 4, 6), 0, "v2.4.6 src/init.cc:891")),
}
_TABLE = {name: tuple((since, value) for since, value, _ in steps) for name, steps in _STEPS.items()}

# What a sentinel default makes NCCL do, per variable and value (the code that reads it).
_MEANS: Dict[Tuple[str, Optional[int]], str] = {
    ("NCCL_IB_GID_INDEX", -1): "NCCL scans the port's GID table itself when it connects and takes the "
                               "first GID of NCCL_IB_ADDR_FAMILY (IPv4) and NCCL_IB_ROCE_VERSION_NUM (2) "
                               "within NCCL_IB_ADDR_RANGE (ncclIbGetGidIndex, v2.21.5 "
                               "src/transport/net_ib.cc:263-309)",
    ("NCCL_IB_GID_INDEX", 0): "GID index 0 on every port (on mlx5 a link-local GID: routable RoCE v2 "
                              "needs a pinned index before 2.21.5)",
    ("NCCL_IB_TC", -1): "the application's ncclConfig_t.trafficClass, else traffic class 0 "
                        "(v2.26.2 src/transport/net_ib.cc:1344)",
    ("NCCL_IB_SL", -1): "the application's ncclConfig_t.trafficClass, else SL 0 "
                        "(v2.26.2 src/transport/net_ib.cc:1343)",
    ("NCCL_IB_FIFO_TC", 0): "unset: CTS messages keep the connection's traffic class "
                            "(v2.22.3 src/transport/net_ib.cc:982)",
    ("NCCL_IB_FIFO_TC", -1): "unset: CTS messages keep the connection's traffic class "
                             "(2.30.7 src/transport/net_ib/connect.cc:1245-1247)",
}


def known(name: str) -> bool:
    """Whether rocetune tracks `name`'s default per release."""
    return name in _STEPS


def describe(name: str, version: Optional[Version]) -> Optional[Dict[str, Any]]:
    """NCCL's default of `name` for the release planned for, where it comes from, and its history;
    None when rocetune does not track the variable per release."""
    steps = _STEPS.get(name)
    if steps is None:
        return None
    history = [{"since": text(since) if since != (0, 0, 0) else None, "value": value, "source": where,
                "means": _MEANS.get((name, value))} for since, value, where in steps]
    current: Dict[str, Any] = history[-1]
    if version is not None:
        current = history[0]
        for (since, _, _), h in zip(steps, history):
            if version >= since:
                current = h
    return {"release": text(version) if version else None, "value": current["value"],
            "since": current["since"], "source": current["source"], "means": current["means"],
            "history": [h for h in history if h["value"] is not None]}


def summary(name: str, version: Optional[Version]) -> Optional[str]:
    """One line: the default in the release planned for (or the newest tracked one when the
    release is unknown), where NCCL's source sets it, and every change."""
    d = describe(name, version)
    if d is None:
        return None
    history = history_text(d["history"])
    if version is None:
        return f"NCCL release unknown: default {_value_text(d)} in the newest release tracked; {history}"
    if d["value"] is None:
        return f"not read by NCCL {d['release']}; {history}"
    return f"default in NCCL {d['release']}: {_value_text(d)} ({d['source']}); {history}"


def history_text(history) -> str:
    """`14 before 2.14.3, 18 from 2.14.3, 20 from 2.23.4` (a variable that did not exist yet is
    `new in` its first release)."""
    parts = []
    for i, h in enumerate(history):
        if h["since"] is None:
            nxt = history[i + 1]["since"] if i + 1 < len(history) else None
            parts.append(f"{h['value']} before {nxt}" if nxt else f"{h['value']} in every release")
        elif i == 0 or history[i - 1]["value"] is None:
            parts.append(f"{h['value']} since it appeared in {h['since']}")
        else:
            parts.append(f"{h['value']} from {h['since']}")
    if len(parts) == 1 and "since it appeared" in parts[0]:
        return parts[0] + ", unchanged since"
    return ", ".join(parts)


def _value_text(d: Dict[str, Any]) -> str:
    return f"{d['value']}" + (f" = {d['means']}" if d.get("means") else "")


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


def text(version: Optional[Version]) -> str:
    return ".".join(str(x) for x in version) if version else "unknown"
