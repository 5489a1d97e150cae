"""The facts of one host that must agree across a fleet, read from its result (Features, the
plan's env, doctor's findings).

`features_facts(features, plan_env)` is computed where the Features are: doctor computes it on
the node and carries it in its JSON (`data.fleet_facts`, `to_json`), so a fleet report reads a
few hundred bytes per host instead of its whole Features; the report computes the same function
itself for a result that holds only Features (a probe, an older doctor). `from_json` reads the
node's copy as the untrusted input it is. The findings-based facts (`doctor.errors`,
`doctor.warnings`, `envfile.stale`) are read from the findings in the report.

Every fact is a JSON value that compares by equality: per-port facts are the sorted distinct
values over the compute ports (`[9000]` on a uniform host, `[1500, 9000]` where one port
differs, with `detail` naming the ports). The compute ports are the ones the plan's NCCL_IB_HCA
is built from (analysis.hostview selection), so a storage or front-end NIC never counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..model.vocab import natural_key


@dataclass(frozen=True)
class Fact:
    value: Any  # JSON: a scalar, a sorted list, or None for "not set" (an env variable)
    known: bool = True  # False: the result does not tell (its source failed, no doctor run)
    detail: Optional[str] = None  # for people: which port or device holds which value


UNKNOWN = Fact(None, known=False)

# The fixed facts, in report order; env.<NAME> facts follow, by name.
LABELS: Dict[str, str] = {
    "hca.count": "compute HCA ports (count)",
    "hca.names": "compute HCA ports",
    "mtu": "MTU of the compute ports' interfaces",
    "gid_index": "GID index the env uses",
    "rdma.rate_gbps": "RDMA port rate (Gb/s)",
    "pcie.nic": "PCIe link of the compute NICs",
    "pcie.gpu": "PCIe link of the GPUs",
    "nic.driver": "NIC driver",
    "nic.fw": "NIC firmware (fw_ver)",
    "nccl.versions": "NCCL releases found",
    "nccl.plugins": "NCCL plugins NCCL loads",
    "kernel": "kernel release",
    "doctor.errors": "doctor findings of error severity",
    "doctor.skipped": "doctor checks skipped (check configuration)",
    "envfile.stale": "deployed env files that differ from the plan",
}


# Facts that exist only where a host has the reading (the Features' lldp, nic_firmware, phy and
# nvlink sections): not in LABELS, so FEATURE_KEYS (what every result carries) leaves them out.
BELOW_LABELS: Dict[str, str] = {
    "phy.speed": "link speed of the compute ports (mlxlink)",
    "phy.fec": "FEC of the compute ports",
    "nvlink.fabric": "NVLink fabric state/status of the GPUs",
    "nvlink.active": "active NVLinks per GPU",
}


def label(key: str) -> str:
    if key.startswith("env."):
        return f"env {key[4:]}"
    if key.startswith(WARNING_PREFIX):
        return f"doctor warning {key[len(WARNING_PREFIX):]}"
    m = _RAIL_KEY.match(key)
    if m:
        return f"rail {m.group(1)}: the switch its cable reaches (LLDP)"
    if key.startswith("fw."):
        return f"NIC firmware {key[3:]}"
    if key in BELOW_LABELS:
        return BELOW_LABELS[key]
    return LABELS.get(key, key)


_RAIL_KEY = re.compile(r"^rail\.(\d+)\.switch$")
# The Features-derived facts whose keys depend on the host (a rail's switch, a firmware
# parameter) or exist only where the host has the reading: carried by doctor beside FEATURE_KEYS.
_BELOW_KEY = re.compile(r"^(?:rail\.\d+\.switch|fw\.[A-Z0-9_]+|phy\.(?:speed|fec)|nvlink\.(?:fabric|active))$")


# One fact per warning id doctor gave on some host: whether this host has it. Per id, so that a
# warning a few hosts share (8 MiB memlock on three) makes those hosts odd whatever other
# warnings the fleet has, and a warning every host has is agreed, not a difference.
WARNING_PREFIX = "warning."
OWN_FACT = {"doctor-env-drift"}  # warnings a fact of their own already compares (envfile.stale)


def fact_order(key: str) -> Tuple[int, Any]:
    keys = list(LABELS)
    return (keys.index(key), ()) if key in LABELS else (len(keys), natural_key(key))


# The facts read from the Features (and the plan's GID index): what doctor carries for the report.
# The others come from doctor's findings, read in the report.
FINDING_KEYS = ("doctor.errors", "doctor.skipped", "envfile.stale")
FEATURE_KEYS = tuple(k for k in LABELS if k not in FINDING_KEYS)


def features_facts(features: dict, plan_env: Optional[Dict[str, str]]) -> Dict[str, Fact]:
    """The facts of FEATURE_KEYS, from a host's Features and its plan's env (None: no plan)."""
    from ..analysis.hostview import HostView

    view = HostView(features)
    ports = view.selection().chosen
    rdma = {(d.get("name"), p.get("port")): (d, p)
            for d in (features.get("rdma") or {}).get("devices", []) for p in d.get("ports", [])}
    pci = {d.get("bdf"): d for d in (features.get("pci") or {}).get("devices", [])}
    facts: Dict[str, Fact] = {
        "hca.count": Fact(len(ports)),
        "hca.names": Fact(sorted((p.name for p in ports), key=natural_key)),
        "mtu": _per_port(ports, lambda p: (rdma.get((p.device, p.port)) or ({}, {}))[1].get("netdev_mtu")),
        "gid_index": _gid_index(ports, plan_env),
        "rdma.rate_gbps": _per_port(ports, lambda p: _number(p.rate_gbps)),
        "pcie.nic": _per_device(sorted({p.pci for p in ports if p.pci}), lambda bdf: _pcie(pci.get(bdf))),
        "pcie.gpu": _per_device(sorted(b for b, d in pci.items() if d.get("kind") == "gpu"),
                                lambda bdf: _pcie(pci.get(bdf))),
        "nic.driver": _per_device(sorted({p.pci for p in ports if p.pci}),
                                  lambda bdf: (pci.get(bdf) or {}).get("driver")),
        "nic.fw": _per_device(sorted({p.device for p in ports}, key=natural_key),
                              lambda dev: _fw(features, dev)),
        "nccl.versions": _nccl_versions(features),
        "nccl.plugins": _nccl_plugins(features),
        "kernel": Fact((features.get("host") or {}).get("kernel_release")),
    }
    if not ports:
        for key in ("mtu", "gid_index", "rdma.rate_gbps", "pcie.nic", "nic.driver", "nic.fw"):
            facts[key] = Fact(None, known=False, detail="no compute HCA port")
    facts.update(rail_switches(features, ports))
    facts.update(below_facts(features, ports))
    return facts


def rail_switches(features: dict, ports) -> Dict[str, Fact]:
    """`rail.I.switch`: the LLDP neighbour (SysName) of each compute port's interface, rail I being
    the I-th compute port in natural order (validate's rail numbering). None where LLDP heard
    nothing on it; nothing at all where the host has no LLDP reading (lldpctl not installed)."""
    lldp = features.get("lldp")
    if not isinstance(lldp, dict):
        return {}
    out = {}
    for i, p in enumerate(sorted(ports, key=lambda p: natural_key(p.name))):
        where = f"{p.name} ({p.netdev or 'no netdev'})"
        if lldp.get("error"):
            out[f"rail.{i}.switch"] = Fact(None, known=False, detail=f"{where}: {lldp['error']}")
            continue
        heard = (lldp.get("interfaces") or {}).get(p.netdev or "") or []
        if not heard:
            out[f"rail.{i}.switch"] = Fact(None, detail=f"{where}: no LLDP neighbour")
        else:
            n = heard[0]
            detail = f"{where} -> {n.get('chassis')} port {n.get('port')}"
            out[f"rail.{i}.switch"] = Fact(n.get("chassis"), detail=detail)
    return out


# The NIC firmware parameters whose value must agree across a fleet (fw.<PARAM>).
FW_FACTS = ("PCI_WR_ORDERING", "ATS_ENABLED", "USER_PROGRAMMABLE_CC", "ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ",
            "ROCE_CC_PRIO_MASK_P1", "CNP_DSCP_P1", "CNP_802P_PRIO_P1")


def below_facts(features: dict, ports) -> Dict[str, Fact]:
    """What lies below NCCL, each only where the host has the reading: `fw.PARAM` (each compute
    card's firmware value: Current, else Next Boot), `phy.speed` and `phy.fec` (each compute port's
    link as mlxlink or ethtool read it), `nvlink.fabric` (the GPUs' fabric state/status) and
    `nvlink.active` (active NVLinks per GPU)."""
    out: Dict[str, Fact] = {}
    fw = features.get("nic_firmware")
    if isinstance(fw, dict):
        from ..core.nic_firmware_params import FirmwareError, first_function

        cards = set()
        for p in ports:
            try:
                if p.pci:
                    cards.add(first_function(p.pci))
            except FirmwareError:
                continue
        devices = {b: d for b, d in (fw.get("devices") or {}).items() if b in cards}
        for param in FW_FACTS:
            rows = {b: (d.get("params") or {}).get(param) for b, d in devices.items() if not d.get("error")}
            if any(rows.values()):
                out[f"fw.{param}"] = _distinct({b: (r or {}).get("current", (r or {}).get("next_boot"))
                                                for b, r in rows.items()})
    phy = features.get("phy")
    if isinstance(phy, dict):
        entries = {p.name: (phy.get("ports") or {}).get(p.name) or {} for p in ports}
        out["phy.speed"] = _distinct({n: (e.get("link") or {}).get("speed") for n, e in entries.items()})
        out["phy.fec"] = _distinct({n: (e.get("link") or {}).get("fec") or (e.get("fec") or {}).get("active")
                                    for n, e in entries.items()})
    nv = features.get("nvlink")
    if isinstance(nv, dict):
        fabric = nv.get("fabric") or {}
        out["nvlink.fabric"] = _distinct({b: f"{f.get('state') or 'N/A'}/{f.get('status') or 'N/A'}"
                                          for b, f in fabric.items()}) if fabric else \
            Fact(None, known=False, detail="; ".join(f"{k}: {v}" for k, v in (nv.get("errors") or {}).items()) or None)
        links = nv.get("links")
        if links is not None:
            out["nvlink.active"] = _distinct({f"GPU{g}": sum(1 for v in x.get("links", {}).values() if v != "inactive")
                                              for g, x in links.items()}) if links else Fact([0])
    return out


def to_json(facts: Dict[str, Fact]) -> Dict[str, Any]:
    """{key: {"value", "known", "detail"}}: what doctor's JSON carries as `fleet_facts`."""
    return {k: {"value": f.value, "known": f.known, "detail": f.detail} for k, f in sorted(facts.items())}


MAX_DETAIL = 2000


def from_json(doc: Any) -> Dict[str, Fact]:
    """The facts a result file carries (`to_json`'s form), checked: ValueError naming the key
    when one is not of that form. Besides FEATURE_KEYS, the per-rail switch and the below-NCCL
    facts (rail.I.switch, fw.PARAM, phy.*, nvlink.*) are kept where the node sent them; other keys
    are left out: the report computes them from the findings and the plan itself."""
    if not isinstance(doc, dict):
        raise ValueError("fleet_facts: expected a mapping")
    out: Dict[str, Fact] = {}
    keys = list(FEATURE_KEYS) + sorted(k for k in doc if isinstance(k, str) and _BELOW_KEY.match(k))
    for key in keys:
        entry = doc.get(key)
        if entry is None:
            out[key] = Fact(None, known=False, detail="not in the result")
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("known", True), bool):
            raise ValueError(f"fleet_facts.{key}: expected {{value, known, detail}}")
        value, detail = entry.get("value"), entry.get("detail")
        if not (_scalar(value) or (isinstance(value, list) and all(_scalar(v) for v in value))):
            raise ValueError(f"fleet_facts.{key}: the value is not a number, text or a list of them")
        if detail is not None and not isinstance(detail, str):
            raise ValueError(f"fleet_facts.{key}: detail is not text")
        out[key] = Fact(value, bool(entry.get("known", True)), detail[:MAX_DETAIL] if detail else None)
    return out


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _distinct(values: Dict[str, Any]) -> Fact:
    """The sorted distinct values of {port or device: value}; which holds which, when they differ."""
    known = {k: v for k, v in values.items() if v is not None}
    missing = sorted((k for k, v in values.items() if v is None), key=natural_key)
    distinct = sorted(set(known.values()), key=lambda v: (str(type(v)), v))
    detail = None
    if len(distinct) > 1:
        detail = "; ".join(f"{v}: " + ", ".join(sorted((k for k, x in known.items() if x == v), key=natural_key))
                           for v in distinct)
    if missing:
        detail = (detail + "; " if detail else "") + "unknown on " + ", ".join(missing)
    if not known and values:
        return Fact(None, known=False, detail=detail)
    return Fact(distinct, detail=detail)


def _per_port(ports, get: Callable) -> Fact:
    return _distinct({p.name: get(p) for p in ports})


def _per_device(names: List[str], get: Callable) -> Fact:
    return _distinct({n: get(n) for n in names})


def _number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_GTS = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s")


def _pcie(dev: Optional[dict]) -> Optional[str]:
    """`32.0 GT/s x16`; a degraded link says so (`8.0 GT/s x16 (max 32.0 GT/s x16)`)."""
    link = (dev or {}).get("link")
    if not isinstance(link, dict) or link.get("speed") is None:
        return None
    text = f"{_speed(link.get('speed'))} x{link.get('width')}"
    if link.get("degraded"):
        text += f" (max {_speed(link.get('max_speed'))} x{link.get('max_width')})"
    return text


def _speed(raw: Any) -> str:
    m = _GTS.match(str(raw or ""))
    return f"{float(m.group(1)):.1f} GT/s" if m else str(raw)


def _fw(features: dict, device: str) -> Optional[str]:
    for d in (features.get("rdma") or {}).get("devices", []):
        if d.get("name") == device:
            return d.get("fw_ver")
    return None


def _gid_index(ports, env: Optional[Dict[str, str]]) -> Fact:
    """NCCL_IB_GID_INDEX where the plan pins it; else, on RoCE, the index NCCL (2.21.5 and later)
    picks itself: each port's first IPv4 RoCE v2 GID (IPv6 where a port has no IPv4 one)."""
    if env is not None and "NCCL_IB_GID_INDEX" in env:
        try:
            return Fact([int(env["NCCL_IB_GID_INDEX"], 0)], detail="pinned by NCCL_IB_GID_INDEX")
        except ValueError:
            return Fact([env["NCCL_IB_GID_INDEX"]], detail="pinned by NCCL_IB_GID_INDEX")
    roce = [p for p in ports if p.is_roce]
    if not roce:
        return Fact(None, known=False, detail="no RoCE compute port (InfiniBand: no GID index)")
    fact = _distinct({p.name: (p.v4_gids or p.v6_gids or [None])[0] for p in roce})
    note = "NCCL's own pick: the first RoCE v2 IPv4 GID"
    return Fact(fact.value, fact.known, f"{note}; {fact.detail}" if fact.detail else note)


def _nccl_versions(features: dict) -> Fact:
    nccl = (features.get("kernel") or {}).get("nccl")
    if not isinstance(nccl, dict):
        return Fact(None, known=False, detail="NCCL libraries not read")
    libs = [lib for lib in nccl.get("libraries") or [] if isinstance(lib, dict)]
    versions = {lib.get("path"): lib.get("version") or "unreadable" for lib in libs}
    found = sorted(set(versions.values()), key=_version_key)
    detail = "; ".join(f"{v}: {p}" for p, v in sorted(versions.items(), key=lambda pv: str(pv[0]))) or None
    return Fact(found, detail=detail)


def _nccl_plugins(features: dict) -> Fact:
    """The plugin NCCL loads per kind (`net libnccl-net.so 1.14.2`): a plugin on some nodes only
    changes the transport of the jobs that reach them (NVIDIA/nccl#1634: a job hung)."""
    from ..nccl.plugins import loaded_all

    nccl = (features.get("kernel") or {}).get("nccl")
    if not isinstance(nccl, dict) or "plugins" not in nccl:
        return Fact(None, known=False, detail="NCCL plugins not read (Features from before the plugin search)")
    chosen = loaded_all(features)
    value = sorted(f"{kind} {p['path'].rsplit('/', 1)[-1]}" + (f" {p['version']}" if p.get("version") else "")
                   for kind, p in chosen.items())
    detail = "; ".join(f"{kind}: {p['path']}" for kind, p in sorted(chosen.items())) or None
    return Fact(value, detail=detail)


def _version_key(text: str) -> Tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in text.split("."))
