"""Expectations: what a node should be, declared once, held against what it is.

A node re-derives its plan from what it shows now; without a declaration, a node that lost a rail
plans for seven rails and looks consistent. The expectations document (`/etc/rocetune/expect.yml`,
the rocetune_env role's `rocetune_env_expect`, or `--expect FILE`) says what the node should be:
its GPUs, its compute rails, GPUDirect, versions, whether a QoS plan is required, variables the
plan must set, the NICs' persistent firmware settings. Every field is optional; a field left out
checks nothing (and `-v` says which).

The document is YAML read by PyYAML's safe loader (rocetune.model.yamlread), checked against the
JSON Schema shipped beside this module (data/expect.schema.json, `version: 1`).

Three parts, each usable alone:

- the document: `load_text`, `load_file`, `validate`, `dump`, `unset_fields`;
- `NodeFacts`: what one node is, in the terms of the document (built from a node's Features and
  plan by rocetune.analysis.expect.node_facts; plain data, `to_dict`/`from_dict`, carried in
  doctor's JSON as `data.expect.facts`);
- `evaluate(expected, facts)` -> the differences, each naming its check id (docs/checks/); and
  `document_of(facts)`, the document a known-good node gives (`doctor --write-expect`), and
  `majority(documents)`, the document most nodes of a fleet agree on.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import ExitCode, HostReadError, RocetuneError
from ..pkgdata import package_json
from . import EXPECT_PATH
from .vocab import natural_key
from .yamlread import YamlError, load_yaml

DEFAULT_PATH = EXPECT_PATH
VERSION = 1
SCHEMA_FILE = "data/expect.schema.json"
# The order fields are written in, and the leaves `unset_fields` names.
SECTIONS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("gpus", ("count", "model")),
    ("rails", ("count", "per_gpu", "devices", "link_layer", "speed_gbps", "mtu", "pcie_speed_gts",
               "pcie_width")),
    ("gpudirect", ()),
    ("versions", ("nvidia_driver", "rdma_core", "nic_firmware", "nccl", "kernel")),
    ("qos", ("plan_required",)),
    ("firmware", ()),
    ("env", ()),
)
# Variables a known-good node's document holds the plan to: the traffic class decides whether
# RoCE is lossless on every rail, and nothing on a healthy node moves it (a GID index does).
TRAFFIC_CLASS_VARS = ("NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_FIFO_TC", "UCX_IB_TRAFFIC_CLASS")
# NVCONFIG parameters a known-good node's document holds every rail's card to: the ones RoCE's
# ordering, congestion control and CNP class rest on (doctor's doctor-fw-* checks say why each).
FIRMWARE_HELD = ("PCI_WR_ORDERING", "ATS_ENABLED", "USER_PROGRAMMABLE_CC", "ROCE_CC_PRIO_MASK_P1",
                 "ROCE_CC_PRIO_MASK_P2", "CNP_DSCP_P1", "CNP_DSCP_P2", "CNP_802P_PRIO_P1", "CNP_802P_PRIO_P2")

# The check each field is held by (declared in rocetune.checks.expect, a page each).
CHECK_OF_SECTION = {"gpus": "expect-gpus", "gpudirect": "expect-gpudirect", "versions": "expect-versions",
                    "qos": "expect-qos-plan", "env": "expect-env", "firmware": "expect-firmware"}
CHECK_RAILS = "expect-rails"
CHECK_RAIL_LINK = "expect-rail-link"


class ExpectError(RocetuneError):
    """An expectations document that cannot be used; the message names the file and field."""

    def __init__(self, message: str, hint: Optional[str] = None):
        super().__init__(message, hint=hint or "see docs/expect.md", code=ExitCode.INPUT)


# --- the document --------------------------------------------------------------------------

@dataclass(frozen=True)
class Expectations:
    """A loaded document and where it came from (a path, or the role's variable)."""

    document: Dict[str, Any]
    source: str


@lru_cache(maxsize=1)
def schema() -> dict:
    return package_json(__package__, SCHEMA_FILE)


@lru_cache(maxsize=1)
def _checker():
    from .schema import checker

    return checker(schema())


def validate(doc: Any, where: str = "expectations") -> Dict[str, Any]:
    """The document in `doc` (None: an empty file) with `version` filled in and env values as
    strings; ExpectError naming `where` and the field otherwise."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ExpectError(f"{where}: expected a mapping of fields (gpus, rails, versions ...), "
                          f"got {type(doc).__name__}")
    problem = _checker()(doc)
    if problem:
        raise ExpectError(f"{where}: {problem}")
    out = json.loads(json.dumps(doc))  # a copy of plain data
    out.setdefault("version", VERSION)
    if "env" in out:
        out["env"] = {k: (None if v is None else str(v)) for k, v in out["env"].items()}
        from .plan import KEY_RE

        bad = [k for k in out["env"] if not KEY_RE.match(k)]
        if bad:
            raise ExpectError(f"{where}: env.{bad[0]}: not an environment variable name")
    for entry in (out.get("rails") or {}).get("devices") or []:
        if not entry.strip():
            raise ExpectError(f"{where}: rails.devices: an empty name")
    _check_firmware(out.get("firmware") or {}, where)
    return out


def _check_firmware(spec: Dict[str, Any], where: str) -> None:
    from ..core.nic_firmware_params import FirmwareError, wanted_value  # the one NVCONFIG reader

    for field_, param, value in _firmware_values(spec):
        try:
            wanted_value(param, value)
        except FirmwareError as exc:
            raise ExpectError(f"{where}: {field_}: {exc}") from None
    for device in spec.get("devices") or {}:
        if not device.strip():
            raise ExpectError(f"{where}: firmware.devices: an empty name")


def _firmware_values(spec: Dict[str, Any]):
    """(field, parameter, value) of every firmware value, the common ones first."""
    for param, value in sorted(spec.items()):
        if param != "devices":
            yield f"firmware.{param}", param, value
    for device, params in sorted((spec.get("devices") or {}).items()):
        for param, value in sorted((params or {}).items()):
            yield f"firmware.devices.{device}.{param}", param, value


def load_text(text: str, where: str) -> Dict[str, Any]:
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise ExpectError(f"{where}: {exc}") from None
    return validate(doc, where)


MAX_BYTES = 1 << 20  # an expectations file is a few hundred bytes; more is not one


def load_file(path: str, option: str = "--expect") -> Dict[str, Any]:
    return load_text(read_small_text(path, option, MAX_BYTES), path)


def read_small_text(path: str, option: str, limit: int) -> str:
    """A small UTF-8 input file (an expectations or check configuration file), or a one-line
    input error naming the option and the file. Read as every input is (hostfs.inputs): a
    regular file only (a FIFO, a device, a directory is refused before it is opened, so none
    blocks the run), without blocking, capped."""
    from ..hostfs.inputs import read_input

    try:
        data = read_input(path, limit)
    except FileNotFoundError:
        raise RocetuneError(f"{option} {path}: no such file", code=ExitCode.INPUT) from None
    except HostReadError as exc:
        if exc.reason.startswith("larger than"):
            raise RocetuneError(f"{option} {path}: larger than {limit >> 10} KiB: not a rocetune configuration "
                                "file", code=ExitCode.INPUT) from None
        raise RocetuneError(f"{option} {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"{option} {path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RocetuneError(f"{option} {path}: not UTF-8 text", code=ExitCode.INPUT) from None


def declares_nothing(doc: Optional[Dict[str, Any]]) -> bool:
    """Whether a document holds no field but its version (an empty file): no expectations,
    not expectations met."""
    return not doc or not any(k != "version" for k in doc)


def unset_fields(doc: Optional[Dict[str, Any]]) -> List[str]:
    """The fields the document leaves out (each checks nothing): `gpus.model`, `gpudirect` ..."""
    doc = doc or {}
    out = []
    for section, leaves in SECTIONS:
        value = doc.get(section)
        if not leaves:
            if value in (None, {}):
                out.append(section)
            continue
        out.extend(f"{section}.{leaf}" for leaf in leaves if (value or {}).get(leaf) is None)
    return out


def dump(doc: Dict[str, Any], header: Sequence[str] = ()) -> str:
    """YAML text of the document: fields in the schema's order, `#` header lines first. Same
    document, same bytes."""
    import yaml

    ordered: Dict[str, Any] = {"version": doc.get("version", VERSION)}
    for section, leaves in SECTIONS:
        if section not in doc or doc[section] in (None, {}):
            continue
        value = doc[section]
        if leaves:
            value = {k: value[k] for k in leaves if value.get(k) is not None}
        elif isinstance(value, dict):
            value = {k: (value[k] if not isinstance(value[k], dict) else
                         {d: dict(sorted(v.items())) for d, v in sorted(value[k].items())})
                     for k in sorted(value, key=lambda k: (k == "devices", k))}
        ordered[section] = value

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(dict, lambda d, data: d.represent_mapping(
        "tag:yaml.org,2002:map", data.items(), flow_style=False))
    body = yaml.dump(ordered, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)
    from ..text import one_line

    # a header quotes what a node says of itself (its host name): one comment line each, whatever it holds
    lines = [f"# {one_line(h)}".rstrip() for h in header]
    return "\n".join(lines + [body.rstrip("\n")]) + "\n"


# --- what a node is ------------------------------------------------------------------------

@dataclass
class PortFacts:
    """One RDMA port as the expectations see it; `rail` says whether the plan uses it."""

    name: str                       # mlx5_0:1
    device: str
    rail: bool
    why_not: Optional[str] = None   # why the plan leaves it out (rail false)
    link_layer: Optional[str] = None
    state: Optional[str] = None
    speed_gbps: Optional[float] = None
    mtu: Optional[int] = None
    ipv4_gid: bool = False
    pcie_speed_gts: Optional[float] = None
    pcie_width: Optional[int] = None
    firmware: Optional[str] = None
    local_gpus: List[int] = field(default_factory=list)


@dataclass
class NodeFacts:
    """What one node is, in the document's terms: its GPUs' names, its rails and the ports an
    expectation may name, GPUDirect, versions, its QoS plan and the variables its plan sets.
    `complete` is false where the facts came from a partial read (then absent is not missing)."""

    gpus: List[str] = field(default_factory=list)                # name of GPU i, in index order
    ports: List[PortFacts] = field(default_factory=list)
    gpus_without_rail: List[int] = field(default_factory=list)
    gpudirect: Optional[str] = None                              # dmabuf | peermem | none | None
    versions: Dict[str, Optional[str]] = field(default_factory=dict)
    qos_plan: Optional[str] = None                               # where the plan came from
    env: Dict[str, str] = field(default_factory=dict)
    rdma_known: bool = True
    # The NVCONFIG read back (None: neither mlxconfig nor mstconfig answered): {"tool", "cards":
    # {first function's address: {"devices", "rail", "error", "params": {NAME: {"current", "next_boot"}}}}}
    firmware: Optional[Dict[str, Any]] = None

    @property
    def rails(self) -> List[PortFacts]:
        return [p for p in self.ports if p.rail]

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> NodeFacts:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        ports = [PortFacts(**{k: v for k, v in p.items() if k in PortFacts.__dataclass_fields__})
                 for p in known.pop("ports", [])]
        return cls(ports=ports, **known)


def document_of(facts: NodeFacts) -> Dict[str, Any]:
    """The document a known-good node gives: its GPUs, rails (the least speed and PCIe link
    among them), GPUDirect, versions, a QoS plan when it has one, and its traffic-class
    variables. A value the rails do not share (two MTUs, two firmwares) is left out."""
    doc: Dict[str, Any] = {"version": VERSION}
    if facts.gpus:
        doc["gpus"] = {"count": len(facts.gpus)}
        if len(set(facts.gpus)) == 1 and facts.gpus[0]:
            doc["gpus"]["model"] = facts.gpus[0]
    rails = facts.rails
    if facts.rdma_known:
        r: Dict[str, Any] = {"count": len(rails)}
        if rails:
            if facts.gpus and not facts.gpus_without_rail and all(p.local_gpus for p in rails):
                r["per_gpu"] = True
            r["devices"] = sorted((p.name for p in rails), key=natural_key)
            for key, pick in (("link_layer", _same), ("speed_gbps", _least), ("mtu", _same),
                              ("pcie_speed_gts", _least), ("pcie_width", _least)):
                values = [getattr(p, key) for p in rails if not (key == "mtu" and p.link_layer != "Ethernet")]
                value = pick(values)
                if value is not None:
                    r[key] = value
        doc["rails"] = r
    if facts.gpudirect in ("dmabuf", "peermem") and facts.gpus:
        doc["gpudirect"] = "any"  # a minimum: the route may change (peer memory -> DMA-BUF)
    versions = {k: series(k, v) for k, v in sorted(facts.versions.items()) if v is not None}
    firmware = _same([p.firmware for p in rails])
    if firmware:
        versions["nic_firmware"] = series("nic_firmware", firmware)
    if versions:
        doc["versions"] = versions
    if facts.qos_plan:
        doc["qos"] = {"plan_required": True}
    firmware = _firmware_of(facts)
    if firmware:
        doc["firmware"] = firmware
    env = {k: facts.env[k] for k in TRAFFIC_CLASS_VARS if k in facts.env}
    if env:
        doc["env"] = env
    return validate(doc, "the node's expectations")


# How many dot-separated parts of a version a document holds a node to; the rest is a build the
# vendor replaces without changing what a job gets: the kernel's series (6.8 in 6.8.0-1017-nvidia:
# an Ubuntu ABI bump or a RHEL z-stream is a build), the NVIDIA driver's branch (550 in 550.54.15:
# NVIDIA's release branches), rdma-core's release (50 in 50.0), NCCL's minor release (2.21 in
# 2.21.5: where NCCL's behaviour changes, docs/nccl-releases.md), the NIC firmware's release
# (28.39 in 28.39.1002: family and release; the last part is the build).
SERIES_PARTS = {"kernel": 2, "nvidia_driver": 1, "rdma_core": 1, "nccl": 2, "nic_firmware": 2}


def series(key: str, version: str) -> str:
    """The pattern a document writes for a version: its series, then `*` (`6.8.*`); the version
    itself when it has no more parts than the series."""
    import re

    keep = SERIES_PARTS.get(key)
    parts = re.split(r"(?<=\d)\.(?=\d)", version)
    if keep is None or len(parts) <= keep or _is_pattern(version):
        return version
    return ".".join(parts[:keep]) + ".*"


def left_out(facts: NodeFacts, doc: Dict[str, Any]) -> List[str]:
    """The fields document_of could not write from this node, each with why: values its rails do
    not share, and the traffic class its plan does not set."""
    out = []
    rails = facts.rails
    r = doc.get("rails") or {}
    for key in ("link_layer", "mtu", "speed_gbps", "pcie_speed_gts", "pcie_width"):
        values = [getattr(p, key) for p in rails if not (key == "mtu" and p.link_layer != "Ethernet")]
        if rails and key not in r:
            known = sorted({str(v) for v in values if v is not None})
            why = f"the rails differ: {', '.join(known)}" if len(known) > 1 else "unknown on a rail"
            out.append(f"rails.{key} ({why})")
    if rails and "nic_firmware" not in (doc.get("versions") or {}):
        known = sorted({p.firmware for p in rails if p.firmware})
        why = f"the rails differ: {', '.join(known)}" if len(known) > 1 else "unknown on a rail"
        out.append(f"versions.nic_firmware ({why})")
    if rails and "env" not in doc:
        out.append("env (the plan sets no traffic class: no class is lossless on every rail)")
    if facts.gpus and "gpudirect" not in doc:
        out.append(f"gpudirect (GPUDirect RDMA is {facts.gpudirect or 'unknown'})")
    return out


def _firmware_of(facts: NodeFacts) -> Dict[str, Any]:
    """The FIRMWARE_HELD values every rail's card shows (Current), where each card was read."""
    from ..core.nic_firmware_params import parse_value

    cards = [c for c in ((facts.firmware or {}).get("cards") or {}).values() if c.get("rail")]
    if not cards or any(c.get("error") for c in cards):
        return {}
    out: Dict[str, Any] = {}
    for param in FIRMWARE_HELD:
        shown = _same([_shown((c.get("params") or {}).get(param))[1] for c in cards])
        if shown is not None:
            name, num = parse_value(shown)
            out[param] = num if name is None and num is not None else shown.strip()
    return out


def _shown(row: Optional[Dict[str, str]]) -> Tuple[str, Optional[str]]:
    """(column, value) a parameter is held by: Current, or Next Boot where the query has only that."""
    if not row:
        return "current", None
    column = "current" if "current" in row else "next_boot"
    return column, row.get(column)


def _same(values: List[Any]) -> Any:
    known = {v for v in values if v is not None}
    return known.pop() if len(known) == 1 and None not in values else None


def _least(values: List[Any]) -> Any:
    if not values or any(v is None for v in values):
        return None
    low = min(values)
    return int(low) if isinstance(low, float) and low.is_integer() else low


# --- the node against the document ---------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """One way the node falls short of (or differs from) its expectations."""

    check: str          # the check id (docs/checks/<check>.md)
    field: str          # the document's field: rails.devices, versions.nccl ...
    subject: str        # what it is about: mlx5_4:1, GPU2, versions.nccl
    severity: str       # error (short of it) | warning (other than it, not short) | info (not read)
    message: str
    expected: Any = None
    actual: Any = None
    not_checked: Optional[str] = None  # info: what was declared and could not be read (doctor's summary)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def evaluate(expected: Optional[Dict[str, Any]], facts: NodeFacts) -> List[Difference]:
    """Every difference between the node and the document, most severe first; [] when the node
    is what the document says (or the document says nothing)."""
    if not expected:
        return []
    out: List[Difference] = []
    out += _gpus(expected.get("gpus") or {}, facts)
    out += _rails(expected.get("rails") or {}, facts)
    out += _gpudirect(expected.get("gpudirect"), facts)
    out += _versions(expected.get("versions") or {}, facts)
    out += _qos(expected.get("qos") or {}, facts)
    out += _firmware(expected.get("firmware") or {}, facts)
    out += _env(expected.get("env") or {}, facts)
    return sorted(out, key=lambda d: (d.severity != "error", d.check, natural_key(d.subject), d.field))


def _match(pattern: str, text: Optional[str]) -> bool:
    return text is not None and fnmatch.fnmatchcase(text, pattern)


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def _gpus(spec: Dict[str, Any], facts: NodeFacts) -> List[Difference]:
    out = []
    check = CHECK_OF_SECTION["gpus"]
    count = spec.get("count")
    if count is not None and len(facts.gpus) != count:
        fewer = len(facts.gpus) < count
        out.append(Difference(check, "gpus.count", "gpus", "error" if fewer else "warning",
                              f"{len(facts.gpus)} GPU(s), expected {count}" +
                              (": a GPU is missing (fallen off the bus, driver not loaded?)" if fewer else ""),
                              count, len(facts.gpus)))
    model = spec.get("model")
    if model is not None:
        for i, name in enumerate(facts.gpus):
            if not _match(model, name):
                out.append(Difference(check, "gpus.model", f"GPU{i}", "error",
                                      f"GPU{i} is {name or 'of unknown model'}, expected {model}", model, name))
    return out


def _rails(spec: Dict[str, Any], facts: NodeFacts) -> List[Difference]:
    out: List[Difference] = []
    if not spec:
        return out
    rails = facts.rails
    by_name = {p.name: p for p in facts.ports}
    named: List[PortFacts] = []  # ports the expectation names exactly: held to the link fields too
    entries = spec.get("devices")
    if entries is not None:
        for entry in entries:
            if _is_pattern(entry):
                if not any(_match(entry, p.name) or _match(entry, p.device) for p in rails):
                    out.append(Difference(CHECK_RAILS, "rails.devices", entry, "error",
                                          f"no rail matches {entry}", entry, [p.name for p in rails]))
                continue
            ports = [p for p in facts.ports if p.name == entry or p.device == entry]
            if not ports:
                out.append(Difference(CHECK_RAILS, "rails.devices", entry, "error",
                                      f"rail {entry} is missing: this node has no RDMA "
                                      f"{'port' if ':' in entry else 'device'} {entry} (driver, firmware "
                                      "or the card itself; `rdma link`, `dmesg`)", entry, None))
                continue
            for p in ports:
                named.append(p)
                if not p.rail:
                    out.append(Difference(CHECK_RAILS, "rails.devices", p.name, "error",
                                          f"rail {p.name} is not used: {p.why_not or 'the plan leaves it out'}",
                                          entry, p.why_not))
        for p in rails:
            if not any(_match(e, p.name) or _match(e, p.device) for e in entries):
                out.append(Difference(CHECK_RAILS, "rails.devices", p.name, "warning",
                                      f"{p.name} is a rail the expectations do not name", entries, p.name))
    count = spec.get("count")
    if count is not None and len(rails) != count:
        fewer = len(rails) < count
        out.append(Difference(CHECK_RAILS, "rails.count", "rails", "error" if fewer else "warning",
                              f"{len(rails)} rail(s) in the plan, expected {count}" +
                              (f" ({', '.join(p.name for p in rails)})" if rails else ""), count, len(rails)))
    if spec.get("per_gpu") and facts.gpus_without_rail:
        gpus = ", ".join(f"GPU{g}" for g in facts.gpus_without_rail)
        out.append(Difference(CHECK_RAILS, "rails.per_gpu", gpus, "error",
                              f"{gpus} ha{'s' if len(facts.gpus_without_rail) == 1 else 've'} no rail of "
                              "its own (PIX/PXB): its traffic crosses to another GPU's NIC",
                              True, facts.gpus_without_rail))
    held = {p.name: p for p in rails + named if p.name in by_name}
    for p in sorted(held.values(), key=lambda x: natural_key(x.name)):
        out += _rail_link(spec, p)
    return out


def _rail_link(spec: Dict[str, Any], p: PortFacts) -> List[Difference]:
    out = []

    def short(key: str, text: str) -> None:
        out.append(Difference(CHECK_RAIL_LINK, f"rails.{key}", p.name, "error", text, spec[key], getattr(p, key)))

    if spec.get("link_layer") is not None and p.link_layer != spec["link_layer"]:
        short("link_layer", f"{p.name} is {p.link_layer or 'of unknown link layer'}, expected {spec['link_layer']}")
    if spec.get("speed_gbps") is not None and (p.speed_gbps is None or p.speed_gbps < spec["speed_gbps"]):
        got = "of unknown rate" if p.speed_gbps is None else f"at {_num(p.speed_gbps)} Gb/s"
        short("speed_gbps", f"{p.name} runs {got}, expected {_num(spec['speed_gbps'])} Gb/s: a slower or "
                            "narrower link (cable, transceiver, switch port, auto-negotiation)")
    if spec.get("mtu") is not None and p.link_layer == "Ethernet" and p.mtu != spec["mtu"]:
        short("mtu", f"{p.name}'s netdev has MTU {p.mtu}, expected {spec['mtu']}")
    want_gts = spec.get("pcie_speed_gts")
    if want_gts is not None and (p.pcie_speed_gts is None or p.pcie_speed_gts < want_gts):
        short("pcie_speed_gts", f"{p.name}'s NIC links at {_num(p.pcie_speed_gts)} GT/s PCIe, expected "
                                f"{_num(spec['pcie_speed_gts'])}")
    if spec.get("pcie_width") is not None and (p.pcie_width is None or p.pcie_width < spec["pcie_width"]):
        short("pcie_width", f"{p.name}'s NIC links at x{p.pcie_width if p.pcie_width is not None else '?'} PCIe, "
                            f"expected x{spec['pcie_width']}")
    return out


def _num(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:g}"


def _gpudirect(want: Optional[str], facts: NodeFacts) -> List[Difference]:
    if want is None:
        return []
    got = facts.gpudirect
    # A minimum: `none` asks for nothing, `any` for a route, a named route for that one.
    ok = want == "none" or (got == want) or (want == "any" and got in ("dmabuf", "peermem"))
    if ok:
        return []
    return [Difference(CHECK_OF_SECTION["gpudirect"], "gpudirect", "gpudirect", "error",
                       f"GPUDirect RDMA is {got or 'unknown'}, expected {want}", want, got)]


def _versions(spec: Dict[str, Any], facts: NodeFacts) -> List[Difference]:
    out = []
    check = CHECK_OF_SECTION["versions"]
    for key in ("nvidia_driver", "rdma_core", "nccl", "kernel"):
        want = spec.get(key)
        if want is None:
            continue
        got = facts.versions.get(key)
        if not _match(want, got):
            out.append(Difference(check, f"versions.{key}", f"versions.{key}", "error",
                                  f"{_VERSION_NAMES[key]} is {got or 'not found'}, expected {want}", want, got))
    want = spec.get("nic_firmware")
    if want is not None:
        for p in facts.rails:
            if not _match(want, p.firmware):
                out.append(Difference(check, "versions.nic_firmware", p.device, "error",
                                      f"{p.device}'s firmware is {p.firmware or 'unknown'}, expected {want}",
                                      want, p.firmware))
    return out


_VERSION_NAMES = {"nvidia_driver": "the NVIDIA driver", "rdma_core": "rdma-core", "nccl": "NCCL",
                  "kernel": "the kernel"}


def _qos(spec: Dict[str, Any], facts: NodeFacts) -> List[Difference]:
    if spec.get("plan_required") and not facts.qos_plan:
        return [Difference(CHECK_OF_SECTION["qos"], "qos.plan_required", "qos", "error",
                           "no QoS plan (/etc/rocetune/qos.yml, or --qos): nothing holds the NICs' PFC, "
                           "trust and ECN, and no traffic class is planned from it", True, None)]
    return []


def _firmware(spec: Dict[str, Any], facts: NodeFacts) -> List[Difference]:
    """Each declared NVCONFIG value against the Current column of the card it applies to; a value
    that could not be read is said (info, `not checked`), never passed."""
    if not spec:
        return []
    from ..core.nic_firmware_params import same, wanted_value

    check = CHECK_OF_SECTION["firmware"]
    fw = facts.firmware
    if fw is None:
        if not facts.rails and not spec.get("devices"):
            return []  # no rail to hold (expect-rails says why)
        fields = [f for f, _, _ in _firmware_values(spec)]
        return [Difference(check, "firmware", "firmware", "info",
                           "not checked: neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint) answered, as root: "
                           f"{', '.join(fields[:6])}{' ...' if len(fields) > 6 else ''} declared but not read",
                           fields, None, "declared firmware (neither mlxconfig nor mstconfig answered)")]
    out: List[Difference] = []
    cards = fw.get("cards") or {}
    tool = fw.get("tool") or "mlxconfig"
    targets: Dict[str, Dict[str, Tuple[Any, str]]] = {}
    for field_, param, value in _firmware_values(spec):
        if not field_.startswith("firmware.devices."):
            for bdf, card in cards.items():
                if card.get("rail"):
                    targets.setdefault(bdf, {})[param] = (value, field_)
            continue
        device = field_[len("firmware.devices."):].rsplit(".", 1)[0]
        bdf = next((b for b, c in sorted(cards.items()) if device in (c.get("devices") or [])), None)
        if bdf is None:
            out.append(Difference(check, field_, device, "info",
                                  f"not checked: {tool} read no card of {device} (no ConnectX RDMA device of "
                                  "that name)", value, None, f"declared {field_}"))
        else:
            targets.setdefault(bdf, {})[param] = (value, field_)
    for bdf, wanted in sorted(targets.items()):
        card = cards[bdf]
        where = f"{bdf} ({', '.join(card.get('devices') or [])})" if card.get("devices") else bdf
        if card.get("error"):
            out.append(Difference(check, "firmware", bdf, "info",
                                  f"not checked: {tool} could not read {where}: {card['error']}",
                                  sorted(f for _, f in wanted.values()), None, f"declared firmware of {bdf}"))
            continue
        for param, (want, field_) in sorted(wanted.items()):
            row = (card.get("params") or {}).get(param)
            column, shown = _shown(row)
            if shown is None:
                out.append(Difference(check, field_, bdf, "info",
                                      f"not checked: {tool} shows no {param} for {where} (not this card's)",
                                      want, None, f"declared {field_} on {bdf}"))
                continue
            goal = wanted_value(param, want)
            if not same(goal, shown):
                when = " (next boot; the query has no Current column)" if column == "next_boot" else ""
                out.append(Difference(check, field_, bdf, "error",
                                      f"{where}: {param} is {shown}{when}, expected {want}", want, shown))
            elif column == "current" and row and row.get("next_boot") is not None and not same(goal, row["next_boot"]):
                out.append(Difference(check, field_, bdf, "warning",
                                      f"{where}: {param} is {shown} now, {row['next_boot']} after the next firmware "
                                      f"reset or reboot, expected {want}", want, row["next_boot"]))
    return out


def _env(spec: Dict[str, Optional[str]], facts: NodeFacts) -> List[Difference]:
    out = []
    for key, want in sorted(spec.items()):
        got = facts.env.get(key)
        if got is None:
            out.append(Difference(CHECK_OF_SECTION["env"], f"env.{key}", key, "error",
                                  f"the plan does not set {key}" + (f" (expected {want})" if want is not None else ""),
                                  want, None))
        elif want is not None and got != want:
            out.append(Difference(CHECK_OF_SECTION["env"], f"env.{key}", key, "error",
                                  f"the plan sets {key}={got}, expected {want}", want, got))
    return out


# --- a fleet's majority --------------------------------------------------------------------

@dataclass
class Majority:
    """The document most nodes agree on. `agree[field]` is how many documents gave the value
    kept; `dissent[field]` maps each other value (as JSON text) to the indices of the documents
    that gave it; `undecided` lists fields no value won (left out: they check nothing)."""

    document: Dict[str, Any]
    agree: Dict[str, int]
    dissent: Dict[str, Dict[str, List[int]]]
    undecided: List[str]
    total: int


def majority(documents: Sequence[Dict[str, Any]], quorum: float = 0.5) -> Majority:
    """Field by field, the value more than `quorum` of the documents give (a list -- the rails'
    names -- counts as one value; env per variable). A document without a field does not vote
    for that field, but counts in the total: a value most nodes do not have is not kept."""
    total = len(documents)
    votes: Dict[str, Dict[str, List[int]]] = {}
    for i, doc in enumerate(documents):
        for path, value in _leaves(doc):
            votes.setdefault(path, {}).setdefault(json.dumps(value, sort_keys=True), []).append(i)
    document: Dict[str, Any] = {"version": VERSION}
    agree: Dict[str, int] = {}
    dissent: Dict[str, Dict[str, List[int]]] = {}
    undecided = []
    for path in sorted(votes, key=_field_order):
        ranked = sorted(votes[path].items(), key=lambda kv: (-len(kv[1]), kv[0]))
        value, who = ranked[0]
        others = {v: ids for v, ids in ranked[1:]}
        tie = len(ranked) > 1 and len(ranked[1][1]) == len(who)
        if len(who) > quorum * total and not tie:
            _put(document, path, json.loads(value))
            agree[path] = len(who)
            if others:
                dissent[path] = others
        else:
            undecided.append(path)
            dissent[path] = dict(votes[path])
    return Majority(validate(document, "the fleet's expectations"), agree, dissent, undecided, total)


def _leaves(doc: Dict[str, Any]):
    for section, leaves in SECTIONS:
        value = doc.get(section)
        if value is None:
            continue
        if not leaves and section not in ("env", "firmware"):
            yield section, value
        elif section in ("env", "firmware"):
            for key, v in value.items():
                yield f"{section}.{key}", v
        else:
            for leaf in leaves:
                if value.get(leaf) is not None:
                    yield f"{section}.{leaf}", value[leaf]


def _field_order(path: str) -> Tuple[int, int, str]:
    section, _, leaf = path.partition(".")
    names = [s for s, _ in SECTIONS]
    leaves = dict(SECTIONS).get(section, ())
    return (names.index(section) if section in names else len(names),
            leaves.index(leaf) if leaf in leaves else len(leaves), leaf)


def _put(doc: Dict[str, Any], path: str, value: Any) -> None:
    section, _, leaf = path.partition(".")
    if not leaf:
        doc[section] = value
    else:
        doc.setdefault(section, {})[leaf] = value
