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
TOP_KEYS = ("version", "trust", "data", "cnp", "ecn", "lossless_priorities", "cts", "fabric")
CLASS_KEYS = ("dscp", "priority")
FABRIC_KEYS = ("tiers", "rail_optimised", "ecmp")
MAX_TIERS = 4
# docs/qos.md: the built-in plan, which an absent file (or an absent key) stands for.
DEFAULTS = {"trust": "dscp", "data": {"dscp": 26, "priority": 3}, "cnp": {"dscp": 48, "priority": 6},
            "ecn": 2, "lossless_priorities": [3], "cts_dscp": None, "fabric": None}


class QosPlanError(ValueError):
    """A field of the plan that cannot be used: `message` names it, `hint` says what would do."""

    def __init__(self, message, hint=None):
        ValueError.__init__(self, message)
        self.message = message
        self.hint = hint


def validate(doc):
    """The plan in `doc` (a mapping, or None for an empty file) with every key filled in:
    {trust, data: {dscp, priority}, cnp: {...}, ecn (0..2), lossless_priorities (sorted),
    cts_dscp, fabric ({tiers, rail_optimised, ecmp} or None), classes_stated, warnings}."""
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
    cts_dscp = _cts(doc.get("cts"))
    fabric = _fabric(doc.get("fabric"))
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
    return {"trust": trust, "data": data, "cnp": cnp, "ecn": ecn, "lossless_priorities": lossless,
            "cts_dscp": cts_dscp, "fabric": fabric, "warnings": warnings,
            "classes_stated": bool(set(doc) - set(["version", "fabric"]))}


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


def _cts(node):
    if node is None:
        return None
    if not isinstance(node, dict):
        raise QosPlanError("cts: expected a mapping with 'dscp'")
    extra = sorted(str(k) for k in node if k != "dscp")
    if extra:
        raise QosPlanError("cts: unknown key(s) %s" % ", ".join(extra))
    return None if node.get("dscp") is None else _int_in(node["dscp"], 0, 63, "cts.dscp")


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
