"""The QoS plan: one file that rocetune and the switch-facing QoS configuration both read.

RoCE traffic is classified by DSCP (or by the VLAN priority under PCP trust). NCCL puts the
whole IPv4 ToS / IPv6 traffic-class byte into the GRH of every RoCE packet: DSCP in the top six
bits and the ECN field in the low two. If the host's `NCCL_IB_TC` and the switches' lossless
queue disagree, RoCE lands in a lossy queue and collapses under load. So the values live in one
file (default `/etc/rocetune/qos.yml`) that both sides read; see docs/qos.md for the format.

The same file may describe the fabric's shape (`fabric:` -- switch tiers, rail-optimised, ECMP):
what NCCL cannot see from a host and what the number of queue pairs per connection and
NCCL_CROSS_NIC depend on. Absent, rocetune assumes nothing about the fabric.

The file is YAML (JSON is YAML too), read with PyYAML's safe loader -- the same reader as
Ansible's `from_yaml`, so the roles that configure the NICs and switches see the same numbers.
Where YAML readers disagree (a leading-zero integer is octal in YAML 1.1 and decimal in 1.2),
the plan is refused rather than read one way here and another way elsewhere.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..core import qos_plan
from ..errors import ExitCode, RocetuneError
from .record import FrozenRecord, Record
from .yamlread import YamlError, load_yaml

DEFAULT_PATH = "/etc/rocetune/qos.yml"

ECN_NAMES = qos_plan.ECN_NAMES
_ECN_TEXT = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)"}
TRUST_MODES = qos_plan.TRUST_MODES
MAX_TIERS = qos_plan.MAX_TIERS


class TrafficClass(FrozenRecord):
    dscp: int
    priority: int
    _fields = ("dscp", "priority")

    def __init__(self, dscp: int, priority: int) -> None:
        self._set(dscp, priority)


class Fabric(FrozenRecord):
    """The fabric's shape as the plan states it; None where the plan says nothing."""

    tiers: Optional[int]            # switch tiers: 1 one switch layer, 2 leaf-spine, 3 ...
    rail_optimised: Optional[bool]  # NIC i of every node on rail i's own switch (and subnet)
    ecmp: Optional[bool]            # flows between nodes hashed over equal-cost paths
    subnet_aware_routing: Optional[bool]  # the owner's opt-in to NCCL_IB_SUBNET_AWARE_ROUTING=1 (2.30.7+)
    _fields = ("tiers", "rail_optimised", "ecmp", "subnet_aware_routing")

    def __init__(self, tiers: Optional[int] = None, rail_optimised: Optional[bool] = None,
                 ecmp: Optional[bool] = None, subnet_aware_routing: Optional[bool] = None) -> None:
        self._set(tiers, rail_optimised, ecmp, subnet_aware_routing)

    @property
    def hashes_flows(self) -> Optional[bool]:
        """Whether a flow between two nodes is hashed onto one of several paths: `ecmp` when
        stated, else implied by the tiers (more than one tier has several uplinks)."""
        if self.ecmp is not None:
            return self.ecmp
        return None if self.tiers is None else self.tiers > 1

    def to_dict(self) -> Dict[str, Any]:
        return {"tiers": self.tiers, "rail_optimised": self.rail_optimised, "ecmp": self.ecmp,
                "subnet_aware_routing": self.subnet_aware_routing, "hashes_flows": self.hashes_flows}

    def describe(self) -> str:
        parts = []
        if self.tiers is not None:
            parts.append(f"{self.tiers} switch tier{'s' if self.tiers != 1 else ''}")
        if self.rail_optimised is not None:
            parts.append("rail-optimised" if self.rail_optimised else "not rail-optimised")
        if self.ecmp is not None:
            parts.append("ECMP" if self.ecmp else "no ECMP")
        if self.subnet_aware_routing:
            parts.append("NCCL subnet-aware routing wanted")
        return ", ".join(parts) or "nothing stated"


class PfcBuffer(FrozenRecord):
    """The NIC's lossless receive buffers as the plan states them; None where it says nothing.
    The roce_qos role applies them (docs/qos.md); the agent only carries them."""

    cable_length: Optional[int]                # metres: mlx5 sizes the PFC headroom from it
    prio_buffer: Optional[Tuple[int, ...]]     # the buffer of each priority 0..7
    buffer_size: Optional[Tuple[int, ...]]     # bytes per buffer 0..7
    _fields = ("cable_length", "prio_buffer", "buffer_size")

    def __init__(self, cable_length: Optional[int] = None, prio_buffer: Optional[Tuple[int, ...]] = None,
                 buffer_size: Optional[Tuple[int, ...]] = None) -> None:
        self._set(cable_length, prio_buffer, buffer_size)

    def to_dict(self) -> Dict[str, Any]:
        return {"cable_length": self.cable_length,
                "prio_buffer": None if self.prio_buffer is None else list(self.prio_buffer),
                "buffer_size": None if self.buffer_size is None else list(self.buffer_size)}


class EcnMarking(FrozenRecord):
    """Where the switches mark ECN on the RoCE data queue: queue depth in bytes where marking
    starts (min) and where it reaches `probability` percent (max). docs/switch-qos.md."""

    min_threshold: int
    max_threshold: int
    probability: int
    _fields = ("min_threshold", "max_threshold", "probability")

    def __init__(self, min_threshold: int = qos_plan.ECN_MARKING_DEFAULTS["min_threshold"],
                 max_threshold: int = qos_plan.ECN_MARKING_DEFAULTS["max_threshold"],
                 probability: int = qos_plan.ECN_MARKING_DEFAULTS["probability"]) -> None:
        self._set(min_threshold, max_threshold, probability)

    def to_dict(self) -> Dict[str, Any]:
        return {"min_threshold": self.min_threshold, "max_threshold": self.max_threshold,
                "probability": self.probability}


class PfcWatchdog(FrozenRecord):
    """The switches' PFC watchdog on the lossless queues: its action on a queue paused past
    `detection_time` and when it restores the queue (milliseconds). docs/switch-qos.md."""

    action: str
    detection_time: int
    restoration_time: int
    _fields = ("action", "detection_time", "restoration_time")

    def __init__(self, action: str = qos_plan.PFC_WATCHDOG_ACTION,
                 detection_time: int = qos_plan.PFC_WATCHDOG_MS,
                 restoration_time: int = qos_plan.PFC_WATCHDOG_MS) -> None:
        self._set(action, detection_time, restoration_time)

    def to_dict(self) -> Dict[str, Any]:
        return {"action": self.action, "detection_time": self.detection_time,
                "restoration_time": self.restoration_time}


_DATA = TrafficClass(26, 3)
_CNP = TrafficClass(48, 6)


class QosPlan(Record):
    """The fabric's QoS policy as the hosts must follow it."""

    data: TrafficClass
    cnp: TrafficClass
    ecn: int  # ECT(0) by default: what UCX uses (106 = 26 << 2 | 2)
    trust: str
    lossless_priorities: Tuple[int, ...]
    cts_dscp: Optional[int]  # NCCL_IB_FIFO_TC: CTS/credit messages, when they get their own class
    cts_priority: Optional[int]  # the class of cts_dscp (the data priority unless stated)
    fabric: Optional[Fabric]  # the fabric's shape, when the plan states it
    buffer: Optional[PfcBuffer]  # the NICs' lossless buffers, when the plan states them
    ecn_marking: Optional[EcnMarking]  # the switches' ECN thresholds, when the plan states them
    pfc_watchdog: Optional[PfcWatchdog]  # the switches' PFC watchdog, when the plan states it
    classes_stated: bool     # the file states a QoS key (not only version/fabric)
    source: str
    warnings: List[str]
    _fields = ("data", "cnp", "ecn", "trust", "lossless_priorities", "cts_dscp", "cts_priority",
               "fabric", "buffer", "ecn_marking", "classes_stated", "source", "warnings", "pfc_watchdog")

    def __init__(self, data: TrafficClass = _DATA, cnp: TrafficClass = _CNP, ecn: int = 2,
                 trust: str = "dscp", lossless_priorities: Tuple[int, ...] = (3,),
                 cts_dscp: Optional[int] = None, cts_priority: Optional[int] = None,
                 fabric: Optional[Fabric] = None, buffer: Optional[PfcBuffer] = None,
                 ecn_marking: Optional[EcnMarking] = None, classes_stated: bool = False,
                 source: str = "built-in defaults", warnings: Optional[List[str]] = None,
                 pfc_watchdog: Optional[PfcWatchdog] = None) -> None:
        self.data = data
        self.cnp = cnp
        self.ecn = ecn
        self.trust = trust
        self.lossless_priorities = lossless_priorities
        self.cts_dscp = cts_dscp
        self.cts_priority = cts_priority
        self.fabric = fabric
        self.buffer = buffer
        self.ecn_marking = ecn_marking
        self.pfc_watchdog = pfc_watchdog
        self.classes_stated = classes_stated
        self.source = source
        self.warnings = [] if warnings is None else warnings

    @property
    def traffic_class(self) -> int:
        """The GRH traffic-class byte for RoCE data (NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS)."""
        return (self.data.dscp << 2) | self.ecn

    @property
    def switch_ecn(self) -> EcnMarking:
        """The switches' ECN marking: the plan's, else the documented defaults."""
        return self.ecn_marking or EcnMarking()

    @property
    def fifo_traffic_class(self) -> Optional[int]:
        return None if self.cts_dscp is None else (self.cts_dscp << 2) | self.ecn

    @property
    def ecn_text(self) -> str:
        return _ECN_TEXT[self.ecn]

    def to_dict(self) -> Dict[str, Any]:
        out = {
            "source": self.source,
            "trust": self.trust,
            "data": {"dscp": self.data.dscp, "priority": self.data.priority},
            "cnp": {"dscp": self.cnp.dscp, "priority": self.cnp.priority},
            "ecn": self.ecn,
            "lossless_priorities": list(self.lossless_priorities),
            "cts_dscp": self.cts_dscp,
            "cts_priority": self.cts_priority,
            "traffic_class": self.traffic_class,
            "fifo_traffic_class": self.fifo_traffic_class,
            "fabric": self.fabric.to_dict() if self.fabric else None,
            "warnings": list(self.warnings),
        }
        if self.buffer is not None:  # absent from plans without it, whose output stays as it was
            out["buffer"] = self.buffer.to_dict()
        if self.ecn_marking is not None:
            out["ecn_marking"] = self.ecn_marking.to_dict()
        if self.pfc_watchdog is not None:
            out["pfc_watchdog"] = self.pfc_watchdog.to_dict()
        return out


def default_plan() -> QosPlan:
    return QosPlan()


def dump_yaml(plan: QosPlan) -> str:
    """The plan in the documented file format (what `load_text` reads back)."""
    ecn_name = {v: k for k, v in ECN_NAMES.items()}[plan.ecn]
    cts = "null" if plan.cts_dscp is None else str(plan.cts_dscp)
    cts_priority = "" if plan.cts_priority is None else f"  priority: {plan.cts_priority}\n"
    lossless = ", ".join(str(p) for p in plan.lossless_priorities)
    fabric = ""
    if plan.fabric is not None:
        fabric = "fabric:\n" + "".join(
            f"  {k}: {'null' if v is None else str(v).lower()}\n"
            for k, v in (("tiers", plan.fabric.tiers), ("rail_optimised", plan.fabric.rail_optimised),
                         ("ecmp", plan.fabric.ecmp), ("subnet_aware_routing", plan.fabric.subnet_aware_routing))
            if k != "subnet_aware_routing" or v is not None)
    buffer = ""
    if plan.buffer is not None:
        buffer = "buffer:\n" + "".join(
            f"  {k}: {_yaml_scalar_or_list(v)}\n"
            for k, v in (("cable_length", plan.buffer.cable_length), ("prio_buffer", plan.buffer.prio_buffer),
                         ("buffer_size", plan.buffer.buffer_size)))
    marking = ""
    if plan.ecn_marking is not None:
        marking = "ecn_marking:\n" + "".join(f"  {k}: {v}\n" for k, v in plan.ecn_marking.to_dict().items())
    if plan.pfc_watchdog is not None:
        marking += "pfc_watchdog:\n" + "".join(f"  {k}: {v}\n" for k, v in plan.pfc_watchdog.to_dict().items())
    return (
        "# RoCE QoS plan shared by rocetune (NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS) and the\n"
        "# switch/NIC QoS configuration. Change it here, nowhere else.\n"
        "version: 1\n"
        f"trust: {plan.trust}\n"
        "data:\n"
        f"  dscp: {plan.data.dscp}\n"
        f"  priority: {plan.data.priority}\n"
        "cnp:\n"
        f"  dscp: {plan.cnp.dscp}\n"
        f"  priority: {plan.cnp.priority}\n"
        f"ecn: {ecn_name}\n"
        f"lossless_priorities: [{lossless}]\n"
        "cts:\n"
        f"  dscp: {cts}\n"
        f"{cts_priority}"
        f"{fabric}"
        f"{buffer}"
        f"{marking}"
    )


def _yaml_scalar_or_list(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


# --- loading -------------------------------------------------------------------------------

def load_text(text: str, source: str) -> QosPlan:
    """Parse and validate a QoS plan; RocetuneError (ExitCode.INPUT) with the place on errors."""
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise _err(source, str(exc)) from None
    return _from_doc(doc, source)


MAX_PLAN_BYTES = 1 << 20  # a QoS plan is a few hundred bytes


def load_file(path: str) -> QosPlan:
    from ..errors import HostReadError
    from ..hostfs.inputs import read_input_text

    try:
        text = read_input_text(path, MAX_PLAN_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"--qos {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except FileNotFoundError:
        raise RocetuneError(f"--qos {path}: no such file",
                            hint=f"write one from docs/qos.md (default location {DEFAULT_PATH})",
                            code=ExitCode.INPUT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RocetuneError(f"--qos {path}: cannot read: {exc}", code=ExitCode.INPUT) from None
    return load_text(text, path)


def _err(source: str, message: str, hint: Optional[str] = None) -> RocetuneError:
    return RocetuneError(f"QoS plan {source}: {message}",
                         hint=hint or "see docs/qos.md for the format and ranges",
                         code=ExitCode.INPUT)


def _from_doc(doc: Dict[str, Any], source: str) -> QosPlan:
    """The plan through the one validator every reader of the file shares (qos_plan: the roce_qos
    role's module and boot script use the same code)."""
    try:
        v = qos_plan.validate(doc)
    except qos_plan.QosPlanError as exc:
        raise _err(source, exc.message, hint=exc.hint) from None
    fabric = Fabric(**v["fabric"]) if v["fabric"] is not None else None
    buf = v["buffer"]
    buffer = None if buf is None else PfcBuffer(
        cable_length=buf["cable_length"],
        prio_buffer=None if buf["prio_buffer"] is None else tuple(buf["prio_buffer"]),
        buffer_size=None if buf["buffer_size"] is None else tuple(buf["buffer_size"]))
    marking = None if v["ecn_marking"] is None else EcnMarking(**v["ecn_marking"])
    watchdog = None if v["pfc_watchdog"] is None else PfcWatchdog(**v["pfc_watchdog"])
    return QosPlan(data=TrafficClass(**v["data"]), cnp=TrafficClass(**v["cnp"]), ecn=v["ecn"],
                   trust=v["trust"], lossless_priorities=tuple(v["lossless_priorities"]),
                   cts_dscp=v["cts_dscp"], cts_priority=v["cts_priority"], fabric=fabric, buffer=buffer,
                   ecn_marking=marking, source=source,
                   warnings=list(v["warnings"]), classes_stated=v["classes_stated"], pfc_watchdog=watchdog)
