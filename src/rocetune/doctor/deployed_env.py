"""The env jobs really get, held to the node: every env file jobs source (the boot unit's, NCCL's
config file, the files the node settings list; rocetune's or written by hand, in any dialect
rocetune reads) is read as its consumer reads it, and each value that would break a job on this
node as it is now is a failure, with or without expectations.

What NCCL does with each value is read in its source: NCCL_IB_HCA selects ports by prefix, `=`
for whole names and `^` to exclude (v2.28.9 src/transport/net_ib.cc:704-740 with
src/misc/utils.cc matchIfList); a pinned NCCL_IB_GID_INDEX is used verbatim on every port
(v2.20.5 src/transport/net_ib.cc:80, :838, :1028; v2.21.5 ncclIbGetGidIndex returns it before
any scan); NCCL_IB_TC is the traffic class of every RoCE packet (v2.26.2
src/transport/net_ib.cc:101-102); NCCL_SOCKET_IFNAME picks the bootstrap interfaces by prefix
(src/misc/socket.cc findInterfaces), and a list that matches none leaves NCCL no interface
("no socket interface found").
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from ..analysis.ports import Port
from ..model.finding import Finding
from ..nccl.releases import empty_port_any
from ..nccl.syntax import ib_hca_entries, ib_hca_selects, ifname_selects, list_entries, strtoll
from .base import DoctorInput, _finding, check


class Deployed:
    """One env file as its consumer reads it: where it is and its variables."""

    def __init__(self, path: str, fmt: str, values: Dict[str, str]) -> None:
        self.path = path
        self.fmt = fmt
        self.values = values


def deployed(d: DoctorInput) -> List[Deployed]:
    from ..envfiles.read import parse_text

    out = []
    for item in d.readings.get("deployed_env") or []:
        if not item.get("text"):
            continue
        parsed = parse_text(item["text"], item.get("format") or "auto", item["path"])
        values = {a.key: a.value for a in parsed.assignments if a.value is not None}
        out.append(Deployed(item["path"], parsed.fmt, values))
    return out


def effective(items: List[dict]) -> Optional[dict]:
    """What a job gets from the deployed files (readings' `deployed_env`): {"files", "values"}.
    NCCL's config file sets only what the environment leaves unset (setenv without overwrite,
    src/misc/param.cc setEnvFile), so its values come first and each sourced file's go over
    them, in order; None when no file is there."""
    from ..envfiles.read import parse_text

    files, values = [], {}
    for item in sorted((i for i in items if i.get("text")), key=lambda i: i.get("read_by") != "nccl"):
        parsed = parse_text(item["text"], item.get("format") or "auto", item["path"])
        values.update({a.key: a.value for a in parsed.assignments if a.value is not None})
        files.append(item["path"])
    return {"files": files, "values": values} if files else None


def _rails(d: DoctorInput) -> Set[str]:
    """The compute rails: the plan's ports and the ports the expectations name."""
    return {p.name for p in d.view.selection().chosen} | {
        p.name for p in d.view.ports() if p.name in d.expected or p.device in d.expected
    }


def selected_ports(d: DoctorInput, hca: Optional[str]) -> List[Port]:
    """The ACTIVE ports NCCL uses under NCCL_IB_HCA=`hca` (all of them when unset)."""
    return [
        p
        for p in d.view.ports()
        if p.port is not None and p.state in (None, "ACTIVE")
        and (not hca or ib_hca_selects(hca, p.device, p.port, empty_port_any(d.features)))
    ]


def _used_ports(d: DoctorInput, env: Deployed) -> List[Port]:
    """The rails a job of this env uses: the ports its NCCL_IB_HCA selects that are rails (all
    rails when it sets none)."""
    rails = _rails(d)
    return [p for p in selected_ports(d, env.values.get("NCCL_IB_HCA")) if p.name in rails]


@check("doctor-env-names-missing-device")
def names_missing_device(d: DoctorInput) -> List[Finding]:
    present: Dict[str, Set[int]] = {}
    for p in d.view.ports():
        present.setdefault(p.device, set()).update({p.port} if p.port is not None else set())
    out = []
    for env in deployed(d):
        hca = env.values.get("NCCL_IB_HCA")
        if not hca:
            continue
        exclude, exact, entries = ib_hca_entries(hca, empty_port_any(d.features))
        if exclude:
            continue
        gone, portless = [], []
        for name, port in entries:
            devices = [n for n in present if (n == name if exact else n.startswith(name))]
            if not devices:
                gone.append(name)
            elif port >= 0 and not any(port in present[n] or not present[n] for n in devices):
                portless.append(f"{name}:{port}")
        if gone or portless:
            said = ([f"no RDMA device {', '.join(gone)}"] if gone else []) + (
                [f"no RDMA port {', '.join(portless)}"] if portless else []
            )
            out.append(
                _finding(
                    "doctor-env-names-missing-device",
                    "error",
                    env.path,
                    f"{', '.join(gone + portless)}: NCCL_IB_HCA={hca} names them, and this node "
                    f"has {' and '.join(said)}",
                    {"file": env.path, "NCCL_IB_HCA": hca, "missing": gone + portless},
                )
            )
    return out


@check("doctor-env-selects-non-rail")
def selects_non_rail(d: DoctorInput) -> List[Finding]:
    rails = _rails(d)
    why = {p.name: reason for p, reason in d.view.selection().excluded}
    out = []
    for env in deployed(d):
        hca = env.values.get("NCCL_IB_HCA")
        if not hca or not rails:
            continue
        others = [p for p in selected_ports(d, hca) if p.name not in rails]
        if others:
            names = ", ".join(p.name for p in others)
            reasons = "; ".join(f"{p.name}: {why.get(p.name) or 'not a compute port'}" for p in others)
            out.append(
                _finding(
                    "doctor-env-selects-non-rail",
                    "error",
                    env.path,
                    f"{names}: NCCL_IB_HCA={hca} also selects them, not compute rails ({reasons}): NCCL spreads "
                    "the job's traffic over them too",
                    {
                        "file": env.path,
                        "NCCL_IB_HCA": hca,
                        "non_rails": [p.name for p in others],
                        "rails": sorted(rails),
                    },
                )
            )
    return out


def _gid_problem(port: Port, index: int) -> Optional[str]:
    """Why GID `index` is not the routable RoCE v2 GID NCCL needs on `port`; None when it is
    (or when the port's GID types cannot be read: not known)."""
    if port.types_unreadable or not port.is_roce:
        return None
    if index in port.v4_gids:
        return None
    if not port.v4_gids and index in port.v6_gids:
        return None
    entry = next((g for g in port.gids if g.get("index") == index), None)
    now = (
        "empty"
        if entry is None or not (entry.get("ipv4") or entry.get("ipv6") or entry.get("gid", "").startswith("fe80"))
        else f"{entry.get('ipv4') or entry.get('ipv6') or entry.get('gid')} ({entry.get('type') or 'type unknown'})"
    )
    want = port.v4_gids or port.v6_gids
    return f"{port.name}: GID {index} is {now}; its IPv4 RoCE v2 GID is at {', '.join(map(str, want)) or 'no index'}"


@check("doctor-env-gid-not-roce-v2")
def gid_not_roce_v2(d: DoctorInput) -> List[Finding]:
    out = []
    for env in deployed(d):
        raw = env.values.get("NCCL_IB_GID_INDEX")
        if raw is None:
            continue
        index, whole = strtoll(raw)
        if index < 0:  # -1: NCCL >= 2.21.5 selects the GID itself
            continue
        problems = [(p, text) for p in _used_ports(d, env) for text in [_gid_problem(p, index)] if text]
        if problems:
            names = ", ".join(p.name for p, _ in problems)
            out.append(
                _finding(
                    "doctor-env-gid-not-roce-v2",
                    "error",
                    names,
                    f"{env.path} pins NCCL_IB_GID_INDEX={raw}, which is not an IPv4 RoCE v2 GID there ("
                    + "; ".join(t for _, t in problems)
                    + "): NCCL uses the pinned index on every port, and "
                    "connections over them fail",
                    {
                        "file": env.path,
                        "NCCL_IB_GID_INDEX": raw,
                        "ports": {
                            p.name: {"roce_v2_ipv4_gids": p.v4_gids, "roce_v2_ipv6_gids": p.v6_gids}
                            for p, _ in problems
                        },
                    },
                )
            )
    return out


def _priority(state: dict, tc: int, sl: int) -> Tuple[Optional[int], str]:
    """The priority RoCE in traffic class `tc` (service level `sl`) gets on a NIC in `state`,
    and how (None: not known)."""
    if state.get("trust") == "dscp":
        prio = (state.get("dscp_prio") or {}).get(str(tc >> 2))
        return (prio if isinstance(prio, int) else None), f"DSCP {tc >> 2} -> priority {prio}"
    if state.get("trust") == "pcp":
        return sl, f"PCP trust, service level {sl}"
    return None, ""


@check("doctor-env-tc-lossy")
def tc_lossy(d: DoctorInput) -> List[Finding]:
    seen = d.features["qos"]["interfaces"]
    declared_lossy = d.qos is not None and not d.qos.lossless_priorities
    out = []
    for env in deployed(d):
        raw = env.values.get("NCCL_IB_TC")
        if raw is None or declared_lossy:
            continue
        tc, _ = strtoll(raw)
        sl = strtoll(env.values.get("NCCL_IB_SL") or "0")[0]
        if not 0 <= tc <= 255:
            continue
        lossy = []
        for p in _used_ports(d, env):
            state = seen.get(p.netdev or "")
            if not p.is_roce or not state:
                continue
            prio, how = _priority(state, tc, sl)
            if prio is not None and prio not in (state.get("pfc_enabled") or []):
                pfc = ",".join(map(str, state.get("pfc_enabled") or [])) or "no priority"
                lossy.append((p, f"{p.netdev}: {how}, PFC on {pfc}"))
        if lossy:
            names = ", ".join(p.name for p, _ in lossy)
            out.append(
                _finding(
                    "doctor-env-tc-lossy",
                    "error",
                    names,
                    f"{env.path} sends RoCE in traffic class {raw}, which is lossy there ("
                    + "; ".join(t for _, t in lossy)
                    + "): a congested fabric drops the job's packets and NCCL "
                    "retransmits or times out",
                    {
                        "file": env.path,
                        "NCCL_IB_TC": raw,
                        "ports": {
                            p.netdev: seen.get(p.netdev or "")
                            and {
                                "trust": seen[p.netdev or ""].get("trust"),
                                "pfc_enabled": seen[p.netdev or ""].get("pfc_enabled"),
                            }
                            for p, _ in lossy
                        },
                    },
                )
            )
    return out


# The socket interface variables and how their consumer reads a list (NCCL: prefixes, `=`, `^`;
# Gloo: one exact name, or several separated by commas).
SOCKET_VARIABLES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


@check("doctor-env-ifname-missing")
def ifname_missing(d: DoctorInput) -> List[Finding]:
    names = [i["name"] for i in d.features["net"].get("interfaces") or []]
    if not names or not (d.features.get("sources") or {}).get("net", {}).get("ok", True):
        return []
    out = []
    for env in deployed(d):
        for key in SOCKET_VARIABLES:
            value = env.values.get(key)
            if not value:
                continue
            if key == "NCCL_SOCKET_IFNAME":
                exclude, _exact, entries = list_entries(value)
                if exclude or any(ifname_selects(value, n) for n in names):
                    continue
            else:
                entries = [e for e in value.split(",") if e]
                entries = [e for e in entries if e not in names]
                if not entries:
                    continue
            out.append(
                _finding(
                    "doctor-env-ifname-missing",
                    "error",
                    env.path,
                    f"{', '.join(entries)}: {key}={value}, and this node has no such interface "
                    f"(it has {_few([n for n in names if n != 'lo'])}): the job finds no socket interface "
                    "to bootstrap over",
                    {"file": env.path, key: value, "interfaces": names},
                )
            )
    return out


def _few(names: List[str], n: int = 6) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


@check("doctor-env-cross-nic-unreachable")
def cross_nic_unreachable(d: DoctorInput) -> List[Finding]:
    reach = (d.features.get("declared") or {}).get("rail_reach")  # the probe's reading of rail-reach.json
    if not isinstance(reach, dict) or reach.get("verdict") not in ("isolated", "partial"):
        return []
    out = []
    for env in deployed(d):
        value = env.values.get("NCCL_CROSS_NIC")
        if value is None or strtoll(value)[0] != 1:
            continue
        out.append(
            _finding(
                "doctor-env-cross-nic-unreachable",
                "error",
                env.path,
                f"NCCL_CROSS_NIC={value}: {reach['reached']} of {reach['tested']} rail-to-other-rail paths "
                f"answered ({reach['verdict']}, {reach['path']}), and this lets a ring cross them: its "
                "connections fail",
                {"file": env.path, "NCCL_CROSS_NIC": value, "rail_reach": reach},
            )
        )
    return out
