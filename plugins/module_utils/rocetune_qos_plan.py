# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The QoS plan's one validator: every reader of /etc/rocetune/qos.yml goes through it -- the
agent (rocetune.model.qos, through the link src/rocetune/model/qos_plan.py), the roce_qos
role's module and its boot-time script (roce_qos_state) -- so the NICs, the env and the switch
configuration cannot be planned from two readings of one file.

It takes the document already loaded (each caller keeps its own YAML reader: PyYAML's safe
loader, or the agent's stricter one) and returns the plan as plain data, or raises
QosPlanError naming the field. Standard library only; Python 3.8 and newer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# ECN codepoints a sender may use in the low two bits of the traffic class.
ECN_NAMES = {"not-ect": 0, "ect1": 1, "ect0": 2}
TRUST_MODES = ("dscp", "pcp")
TOP_KEYS = ("version", "trust", "data", "cnp", "ecn", "lossless_priorities", "cts", "fabric", "buffer",
            "ecn_marking")
CLASS_KEYS = ("dscp", "priority")
FABRIC_KEYS = ("tiers", "rail_optimised", "ecmp")
MAX_TIERS = 4
BUFFER_KEYS = ("cable_length", "prio_buffer", "buffer_size")
# mlx5 takes the PFC delay as the cable length in metres and ignores 0 and 1000 or more
# (MLX5E_MAX_CABLE_LENGTH, drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c).
CABLE_LENGTH_MAX = 999
BUFFERS = 8
BUFFER_SIZE_MAX = 2 ** 32 - 1  # struct dcbnl_buffer's buffer_size is a __u32 per buffer
# The switches' ECN marking on the data queue: queue depth in bytes where marking starts and where
# it reaches `probability` percent. The defaults are NVIDIA Cumulus Linux's RoCE defaults (ECN
# absolute thresholds 150 KB and 1500 KB, probability 100; docs/switch-qos.md cites the page).
ECN_MARKING_KEYS = ("min_threshold", "max_threshold", "probability")
ECN_MARKING_DEFAULTS = {"min_threshold": 150000, "max_threshold": 1500000, "probability": 100}
ECN_THRESHOLD_MAX = 256000000  # bytes: the largest threshold EOS takes (random-detect ecn ... bytes)
# docs/qos.md: the built-in plan, which an absent file (or an absent key) stands for.
DEFAULTS = {"trust": "dscp", "data": {"dscp": 26, "priority": 3}, "cnp": {"dscp": 48, "priority": 6},
            "ecn": 2, "lossless_priorities": [3], "cts_dscp": None, "cts_priority": None, "fabric": None}


class QosPlanError(ValueError):
    """A field of the plan that cannot be used: `message` names it, `hint` says what would do."""

    def __init__(self, message, hint=None):
        ValueError.__init__(self, message)
        self.message = message
        self.hint = hint


def validate(doc):
    """The plan in `doc` (a mapping, or None for an empty file) with every key filled in:
    {trust, data: {dscp, priority}, cnp: {...}, ecn (0..2), lossless_priorities (sorted),
    cts_dscp, cts_priority (None without cts_dscp), fabric ({tiers, rail_optimised, ecmp} or None),
    buffer ({cable_length, prio_buffer, buffer_size}, each None where not stated, or None), ecn_marking
    ({min_threshold, max_threshold, probability}, defaults filled in, or None), classes_stated,
    warnings}."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise QosPlanError("the plan must be a mapping (key: value lines)")
    unknown = sorted(str(k) for k in doc if k not in TOP_KEYS)
    if unknown:
        raise QosPlanError("unknown key(s) %s" % ", ".join(unknown), hint="known keys: %s" % ", ".join(sorted(TOP_KEYS)))
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise QosPlanError("version %r is not supported (this rocetune reads version 1)" % (version,))
    trust = doc.get("trust", DEFAULTS["trust"])
    if trust not in TRUST_MODES:
        raise QosPlanError("trust: %r is not one of %s" % (trust, ", ".join(TRUST_MODES)))
    data = _class(doc.get("data"), "data")
    cnp = _class(doc.get("cnp"), "cnp")
    ecn = _ecn(doc.get("ecn", DEFAULTS["ecn"]))
    lossless_raw = doc.get("lossless_priorities", DEFAULTS["lossless_priorities"])
    if not isinstance(lossless_raw, list):
        raise QosPlanError("lossless_priorities: expected a list like [3]")
    lossless = sorted(set(_int_in(p, 0, 7, "lossless_priorities[]") for p in lossless_raw))
    cts_dscp, cts_priority = _cts(doc.get("cts"), data, cnp)
    fabric = _fabric(doc.get("fabric"))
    buffer = _buffer(doc.get("buffer"), lossless)
    ecn_marking = _ecn_marking(doc.get("ecn_marking"))
    if data["dscp"] == cnp["dscp"]:
        raise QosPlanError("data.dscp and cnp.dscp are both %d: congestion notifications must be told "
                           "apart from the data they throttle" % data["dscp"])
    warnings = []
    if data["priority"] == cnp["priority"]:
        warnings.append("data and CNP share priority %d: CNPs queue behind the data they are meant to "
                        "slow down" % data["priority"])
    if lossless and data["priority"] not in lossless:
        warnings.append("data priority %d is not in lossless_priorities %s: RoCE data would travel in a "
                        "lossy queue" % (data["priority"], lossless))
    if not lossless:
        warnings.append("no lossless priority: the fabric relies on ECN alone (no PFC)")
    if cts_priority is not None and lossless and cts_priority not in lossless:
        warnings.append("cts.priority %d is not in lossless_priorities %s: NCCL's credit messages would "
                        "travel in a lossy queue" % (cts_priority, lossless))
    warnings += _buffer_warnings(buffer, lossless)
    return {"trust": trust, "data": data, "cnp": cnp, "ecn": ecn, "lossless_priorities": lossless,
            "cts_dscp": cts_dscp, "cts_priority": cts_priority, "fabric": fabric, "buffer": buffer,
            "ecn_marking": ecn_marking,
            "warnings": warnings,
            "classes_stated": bool(set(doc) - set(["version", "fabric", "buffer", "ecn_marking"]))}


def traffic_class(plan):
    """The ToS / GRH traffic-class byte of RoCE data: DSCP << 2 | ECN (106 by default)."""
    return (plan["data"]["dscp"] << 2) | plan["ecn"]


def _class(node, name):
    default = DEFAULTS[name]
    if node is None:
        return dict(default)
    if not isinstance(node, dict):
        raise QosPlanError("%s: expected a mapping with dscp and priority" % name)
    extra = sorted(str(k) for k in node if k not in CLASS_KEYS)
    if extra:
        raise QosPlanError("%s: unknown key(s) %s" % (name, ", ".join(extra)))
    return {"dscp": _int_in(node.get("dscp", default["dscp"]), 0, 63, "%s.dscp" % name),
            "priority": _int_in(node.get("priority", default["priority"]), 0, 7, "%s.priority" % name)}


def _cts(node, data, cnp):
    """(dscp, priority) of NCCL's credit (CTS) messages, (None, None) when the plan gives them no
    DSCP of their own. The priority is the class the NICs and switches put the DSCP in: the data
    priority unless stated."""
    if node is None:
        return None, None
    if not isinstance(node, dict):
        raise QosPlanError("cts: expected a mapping with 'dscp' (and optionally 'priority')")
    extra = sorted(str(k) for k in node if k not in CLASS_KEYS)
    if extra:
        raise QosPlanError("cts: unknown key(s) %s" % ", ".join(extra))
    if node.get("dscp") is None:
        if node.get("priority") is not None:
            raise QosPlanError("cts.priority without cts.dscp: the priority is the class of the credit "
                               "messages' own DSCP")
        return None, None
    dscp = _int_in(node["dscp"], 0, 63, "cts.dscp")
    priority = node.get("priority")
    priority = data["priority"] if priority is None else _int_in(priority, 0, 7, "cts.priority")
    for name, other in (("data", data), ("cnp", cnp)):
        if dscp == other["dscp"] and priority != other["priority"]:
            raise QosPlanError("cts.dscp %d is %s.dscp, but cts.priority %d is not %s.priority %d: one DSCP "
                               "cannot travel in two classes" % (dscp, name, priority, name, other["priority"]))
    return dscp, priority


def _fabric(node):
    if node is None:
        return None
    if not isinstance(node, dict):
        raise QosPlanError("fabric: expected a mapping with tiers, rail_optimised, ecmp")
    extra = sorted(str(k) for k in node if k not in FABRIC_KEYS)
    if extra:
        raise QosPlanError("fabric: unknown key(s) %s" % ", ".join(extra), hint="known keys: %s" % ", ".join(FABRIC_KEYS))
    tiers = node.get("tiers")
    if tiers is not None:
        tiers = _int_in(tiers, 1, MAX_TIERS, "fabric.tiers")
    out = {"tiers": tiers}
    for key in ("rail_optimised", "ecmp"):
        value = node.get(key)
        if value is not None and not isinstance(value, bool):
            raise QosPlanError("fabric.%s: expected true or false, got %r" % (key, value))
        out[key] = value
    if tiers == 1 and out["ecmp"]:
        raise QosPlanError("fabric: tiers 1 with ecmp true: one switch tier has no equal-cost paths between "
                           "nodes (a bond toward the switch is seen on the host, not declared here)")
    return out


def _buffer(node, lossless):
    """The lossless (PFC) receive buffers: cable length in metres, the buffer of each priority,
    the size of each buffer in bytes; docs/qos.md says what each NIC tool makes of them."""
    if node is None:
        return None
    if not isinstance(node, dict):
        raise QosPlanError("buffer: expected a mapping with cable_length, prio_buffer, buffer_size")
    extra = sorted(str(k) for k in node if k not in BUFFER_KEYS)
    if extra:
        raise QosPlanError("buffer: unknown key(s) %s" % ", ".join(extra), hint="known keys: %s" % ", ".join(BUFFER_KEYS))
    if all(node.get(k) is None for k in BUFFER_KEYS):
        raise QosPlanError("buffer: states none of %s (leave the section out instead)" % ", ".join(BUFFER_KEYS))
    cable = node.get("cable_length")
    if cable is not None:
        cable = _int_in(cable, 1, CABLE_LENGTH_MAX, "buffer.cable_length")
    prio_buffer = _eight(node.get("prio_buffer"), "buffer.prio_buffer", 0, BUFFERS - 1,
                         "the buffer of each priority 0..7, like [0, 0, 0, 1, 0, 0, 0, 0]")
    sizes = _eight(node.get("buffer_size"), "buffer.buffer_size", 0, BUFFER_SIZE_MAX,
                   "the size in bytes of each buffer 0..7")
    if prio_buffer is not None and sizes is not None:
        for prio in lossless:
            if sizes[prio_buffer[prio]] == 0:
                raise QosPlanError("buffer.buffer_size[%d] is 0 but lossless priority %d is in buffer %d "
                                   "(buffer.prio_buffer): a buffer that holds a PFC priority needs room"
                                   % (prio_buffer[prio], prio, prio_buffer[prio]))
    return {"cable_length": cable, "prio_buffer": prio_buffer, "buffer_size": sizes}


def _ecn_marking(node):
    """The switches' ECN marking thresholds in bytes; absent keys take ECN_MARKING_DEFAULTS."""
    if node is None:
        return None
    if not isinstance(node, dict):
        raise QosPlanError("ecn_marking: expected a mapping with min_threshold, max_threshold, probability")
    extra = sorted(str(k) for k in node if k not in ECN_MARKING_KEYS)
    if extra:
        raise QosPlanError("ecn_marking: unknown key(s) %s" % ", ".join(extra),
                           hint="known keys: %s (thresholds in bytes)" % ", ".join(ECN_MARKING_KEYS))
    out = {}
    for key in ("min_threshold", "max_threshold"):
        value = node.get(key)
        value = ECN_MARKING_DEFAULTS[key] if value is None else value
        out[key] = _int_in(value, 1, ECN_THRESHOLD_MAX, "ecn_marking.%s (bytes)" % key)
    probability = node.get("probability")
    probability = ECN_MARKING_DEFAULTS["probability"] if probability is None else probability
    out["probability"] = _int_in(probability, 1, 100, "ecn_marking.probability (percent)")
    if out["min_threshold"] >= out["max_threshold"]:
        raise QosPlanError("ecn_marking: min_threshold %d is not below max_threshold %d (bytes)"
                           % (out["min_threshold"], out["max_threshold"]))
    return out


def _eight(value, what, lo, hi, shape):
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != BUFFERS:
        raise QosPlanError("%s: expected a list of 8 integers, %s" % (what, shape))
    return [_int_in(v, lo, hi, "%s[%d]" % (what, i)) for i, v in enumerate(value)]


def _buffer_warnings(buffer, lossless):
    if buffer is None:
        return []
    out = []
    if buffer["cable_length"] is not None and not lossless:
        out.append("buffer.cable_length with no lossless priority: the cable length only sizes PFC headroom")
    if buffer["cable_length"] is not None and buffer["prio_buffer"] is None and buffer["buffer_size"] is None:
        out.append("buffer.cable_length alone: mlx5 resizes the PFC headroom from it only once the host has "
                   "set the port buffers (prio_buffer or buffer_size, docs/qos.md)")
    if buffer["prio_buffer"] is not None:
        for buf in sorted(set(buffer["prio_buffer"][p] for p in lossless)):
            lossy = [p for p in range(8) if buffer["prio_buffer"][p] == buf and p not in lossless]
            if lossy:
                out.append("buffer %d holds lossless and lossy priorities (%s): PFC pauses the lossy ones "
                           "too" % (buf, ", ".join(str(p) for p in lossy)))
    return out


def _ecn(value):
    if isinstance(value, str):
        key = value.strip().lower().replace("(", "").replace(")", "").replace("_", "-")
        key = {"ect-0": "ect0", "ect-1": "ect1", "notect": "not-ect"}.get(key, key)
        if key in ECN_NAMES:
            return ECN_NAMES[key]
        if key == "ce":
            raise QosPlanError("ecn: CE is set by congested switches, never by a sender")
        raise QosPlanError("ecn: %r is not one of %s (or 0, 1, 2)" % (value, ", ".join(ECN_NAMES)))
    n = _int_in(value, 0, 3, "ecn")
    if n == 3:
        raise QosPlanError("ecn: 3 (CE) is set by congested switches, never by a sender")
    return n


def _int_in(value, lo, hi, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise QosPlanError("%s: expected an integer %d..%d, got %r" % (what, lo, hi, value))
    if not lo <= value <= hi:
        raise QosPlanError("%s: %d is out of range %d..%d" % (what, value, lo, hi))
    return value
