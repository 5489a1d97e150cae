# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The QoS plan's one validator: every reader of /etc/rocetune/qos.yml goes through it -- the
agent (rocetune.model.qos) and, through its copy plugins/module_utils/rocetune_qos_plan.py, the roce_qos
role's module, its preflight and its boot-time script (roce_qos_state) -- so the NICs, the env and
the switch configuration cannot be planned from two readings of one file. The role's ETS
setting (roce_qos_ets) is checked here too (validate_ets).

It takes the document already loaded (each caller keeps its own YAML reader: PyYAML's safe
loader, or the agent's stricter one) and returns the plan as plain data, or raises
QosPlanError naming every field that cannot be used (not only the first). Standard library
only; Python 3.8 and newer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# ECN codepoints a sender may use in the low two bits of the traffic class.
ECN_NAMES = {"not-ect": 0, "ect1": 1, "ect0": 2}
TRUST_MODES = ("dscp", "pcp")
TOP_KEYS = ("version", "trust", "data", "cnp", "ecn", "lossless_priorities", "cts", "fabric", "buffer",
            "ecn_marking", "pfc_watchdog")
CLASS_KEYS = ("dscp", "priority")
FABRIC_KEYS = ("tiers", "rail_optimised", "ecmp", "subnet_aware_routing")
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
# The switches' PFC watchdog on the lossless queues: what it does to a queue paused past the
# detection time (drop its packets, or forward them ignoring the pauses) and when it gives the
# queue back. Ranges and defaults are SONiC's (sonic-utilities pfcwd/main.py: `pfcwd start`
# takes --action drop|forward|alert, detection 100-5000 ms, --restoration-time 100-60000 ms;
# `pfcwd start_default` sets drop, 200 ms, 200 ms); `alert` only logs, so the plan does not offer it.
PFC_WATCHDOG_KEYS = ("action", "detection_time", "restoration_time")
PFC_WATCHDOG_ACTIONS = ("drop", "forward")
PFC_WATCHDOG_ACTION, PFC_WATCHDOG_MS = "drop", 200
PFC_WATCHDOG_DEFAULTS = {"action": PFC_WATCHDOG_ACTION, "detection_time": PFC_WATCHDOG_MS,
                         "restoration_time": PFC_WATCHDOG_MS}
PFC_WATCHDOG_DETECTION_MS = (100, 5000)
PFC_WATCHDOG_RESTORATION_MS = (100, 60000)
# docs/qos.md: the built-in plan, which an absent file (or an absent key) stands for.
DEFAULTS = {"trust": "dscp", "data": {"dscp": 26, "priority": 3}, "cnp": {"dscp": 48, "priority": 6},
            "ecn": 2, "lossless_priorities": [3], "cts_dscp": None, "cts_priority": None, "fabric": None}

# ETS (IEEE 802.1Qaz) as the roce_qos role takes it: the traffic class of each priority, the
# transmission selection algorithm of each TC and the bandwidth share of each TC in percent. The
# shares of the ETS TCs add up to 100 (802.1Qaz; mlx5 refuses any other sum: "BW sum is illegal",
# mlx5e_dbcnl_validate_ets in drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c).
ETS_KEYS = ("prio_tc", "tc_tsa", "tc_bw")
ETS_TSA = ("strict", "ets", "vendor")
TRAFFIC_CLASSES = 8


class QosPlanError(ValueError):
    """Fields of the plan that cannot be used. `errors` holds (message, hint) for each one;
    `message` joins the messages, `hint` the distinct hints (None when there are none)."""

    def __init__(self, message, hint=None, errors=None):
        self.errors = list(errors) if errors else [(message, hint)]
        self.message = "; ".join(m for m, dummy in self.errors)
        hints = []
        for dummy, h in self.errors:
            if h and h not in hints:
                hints.append(h)
        self.hint = "; ".join(hints) or None
        ValueError.__init__(self, self.message)

    def describe(self):
        """Every error, then its hints in parentheses: one line for a log or a task failure."""
        return self.message + (" (%s)" % self.hint if self.hint else "")


class _Errors:
    """The errors of one document, collected so that all of them are reported at once."""

    def __init__(self):
        self.items = []

    def add(self, message, hint=None):
        self.items.append((message, hint))

    def unknown(self, where, node, known, hint_extra=""):
        """Record the keys of `node` that are not in `known`; True when there were some."""
        extra = sorted(str(k) for k in node if k not in known)
        if extra:
            self.add("%sunknown key(s) %s" % (where + ": " if where else "", ", ".join(extra)),
                     hint="known keys%s: %s%s"
                     % (" of " + where if where else "", ", ".join(sorted(known)), hint_extra))
        return bool(extra)

    def int_in(self, value, lo, hi, what):
        if isinstance(value, bool) or not isinstance(value, int):
            self.add("%s: expected an integer %d..%d, got %r" % (what, lo, hi, value))
            return None
        if not lo <= value <= hi:
            self.add("%s: %d is out of range %d..%d" % (what, value, lo, hi))
            return None
        return value

    def raise_any(self):
        if self.items:
            raise QosPlanError(None, errors=self.items)


def validate(doc):
    """The plan in `doc` (a mapping, or None for an empty file) with every key filled in:
    {trust, data: {dscp, priority}, cnp: {...}, ecn (0..2), lossless_priorities (sorted),
    cts_dscp, cts_priority (None without cts_dscp),
    fabric ({tiers, rail_optimised, ecmp, subnet_aware_routing} or None),
    buffer ({cable_length, prio_buffer, buffer_size}, each None where not stated, or None), ecn_marking
    ({min_threshold, max_threshold, probability}, defaults filled in, or None), pfc_watchdog
    ({action, detection_time, restoration_time}, defaults filled in, or None), classes_stated,
    warnings}. QosPlanError names every field that cannot be used."""
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise QosPlanError("the plan must be a mapping (key: value lines)")
    errs = _Errors()
    errs.unknown("", doc, TOP_KEYS)
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):
        errs.add("version %r is not supported (this rocetune reads version 1)" % (version,))
    trust = doc.get("trust", DEFAULTS["trust"])
    if trust not in TRUST_MODES:
        errs.add("trust: %r is not one of %s" % (trust, ", ".join(TRUST_MODES)))
    data = _class(errs, doc.get("data"), "data")
    cnp = _class(errs, doc.get("cnp"), "cnp")
    ecn = _ecn(errs, doc.get("ecn", DEFAULTS["ecn"]))
    lossless = _lossless(errs, doc.get("lossless_priorities", DEFAULTS["lossless_priorities"]))
    cts_dscp, cts_priority = _cts(errs, doc.get("cts"), data, cnp)
    fabric = _fabric(errs, doc.get("fabric"))
    buffer = _buffer(errs, doc.get("buffer"), lossless or [])
    ecn_marking = _ecn_marking(errs, doc.get("ecn_marking"))
    pfc_watchdog = _pfc_watchdog(errs, doc.get("pfc_watchdog"))
    if data and cnp and data["dscp"] is not None and data["dscp"] == cnp["dscp"]:
        errs.add("data.dscp and cnp.dscp are both %d: congestion notifications must be told "
                 "apart from the data they throttle" % data["dscp"])
    errs.raise_any()
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
    if pfc_watchdog is not None and not lossless:
        warnings.append("pfc_watchdog with no lossless priority: the watchdog watches only PFC (no-drop) queues")
    return {"trust": trust, "data": data, "cnp": cnp, "ecn": ecn, "lossless_priorities": lossless,
            "cts_dscp": cts_dscp, "cts_priority": cts_priority, "fabric": fabric, "buffer": buffer,
            "ecn_marking": ecn_marking, "pfc_watchdog": pfc_watchdog,
            "warnings": warnings,
            "classes_stated": bool(set(doc) - set(["version", "fabric", "buffer", "ecn_marking", "pfc_watchdog"]))}


def traffic_class(plan):
    """The ToS / GRH traffic-class byte of RoCE data: DSCP << 2 | ECN (106 by default)."""
    return (plan["data"]["dscp"] << 2) | plan["ecn"]


def validate_ets(ets, what="roce_qos_ets"):
    """The ETS setting ({} leaves the NIC's ETS alone), each list of 8 checked; QosPlanError
    names every entry that cannot be set (`what` is the variable's name)."""
    if ets is None or ets == {}:
        return {}
    if not isinstance(ets, dict):
        raise QosPlanError("%s: expected a mapping with %s, got %r" % (what, ", ".join(ETS_KEYS), ets),
                           hint="{} leaves the NIC's ETS alone")
    errs = _Errors()
    errs.unknown(what, ets, ETS_KEYS)
    out = {}
    if "prio_tc" in ets:
        out["prio_tc"] = _eight(errs, ets["prio_tc"], what + ".prio_tc", 0, TRAFFIC_CLASSES - 1,
                                "the traffic class of each priority 0..7")
    if "tc_tsa" in ets:
        tsa = ets["tc_tsa"]
        if not isinstance(tsa, list) or len(tsa) != TRAFFIC_CLASSES:
            errs.add("%s.tc_tsa: expected a list of 8 of %s, got %r" % (what, ", ".join(ETS_TSA), tsa))
        else:
            bad = ["[%d] %r" % (i, t) for i, t in enumerate(tsa) if t not in ETS_TSA]
            if bad:
                errs.add("%s.tc_tsa: %s not one of %s" % (what, ", ".join(bad), ", ".join(ETS_TSA)))
            else:
                out["tc_tsa"] = list(tsa)
    if "tc_bw" in ets:
        out["tc_bw"] = _eight(errs, ets["tc_bw"], what + ".tc_bw", 0, 100, "the percent share of each TC 0..7")
    bw, tsa = out.get("tc_bw"), out.get("tc_tsa")
    if bw is not None and ("tc_tsa" not in ets or tsa is not None):
        shared = [i for i in range(TRAFFIC_CLASSES) if tsa is None or tsa[i] == "ets"]
        total = sum(bw[i] for i in shared)
        if shared and total != 100:
            errs.add("%s.tc_bw: the ETS traffic classes' shares (%s) add up to %d, not 100"
                     % (what, ", ".join("TC%d %d%%" % (i, bw[i]) for i in shared), total),
                     hint="IEEE 802.1Qaz; mlx5 refuses any other sum (BW sum is illegal)")
    errs.raise_any()
    return out


def _class(errs, node, name):
    default = DEFAULTS[name]
    if node is None:
        return dict(default)
    if not isinstance(node, dict):
        errs.add("%s: expected a mapping with dscp and priority, got %r" % (name, node))
        return dict(default)
    errs.unknown(name, node, CLASS_KEYS)
    return {"dscp": errs.int_in(node.get("dscp", default["dscp"]), 0, 63, "%s.dscp" % name),
            "priority": errs.int_in(node.get("priority", default["priority"]), 0, 7, "%s.priority" % name)}


def _lossless(errs, raw):
    if not isinstance(raw, list):
        errs.add("lossless_priorities: expected a list like [3], got %r" % (raw,))
        return None
    got = [errs.int_in(p, 0, 7, "lossless_priorities[%d]" % i) for i, p in enumerate(raw)]
    if None in got:
        return None
    return sorted(set(got))


def _cts(errs, node, data, cnp):
    """(dscp, priority) of NCCL's credit (CTS) messages, (None, None) when the plan gives them no
    DSCP of their own. The priority is the class the NICs and switches put the DSCP in: the data
    priority unless stated."""
    if node is None:
        return None, None
    if not isinstance(node, dict):
        errs.add("cts: expected a mapping with 'dscp' (and optionally 'priority'), got %r" % (node,))
        return None, None
    errs.unknown("cts", node, CLASS_KEYS)
    if node.get("dscp") is None:
        if node.get("priority") is not None:
            errs.add("cts.priority without cts.dscp: the priority is the class of the credit messages' own DSCP")
        return None, None
    dscp = errs.int_in(node["dscp"], 0, 63, "cts.dscp")
    priority = node.get("priority")
    priority = data["priority"] if priority is None else errs.int_in(priority, 0, 7, "cts.priority")
    if dscp is None or priority is None:
        return None, None
    for name, other in (("data", data), ("cnp", cnp)):
        if dscp == other["dscp"] and priority != other["priority"]:
            errs.add("cts.dscp %d is %s.dscp, but cts.priority %d is not %s.priority %d: one DSCP "
                     "cannot travel in two classes" % (dscp, name, priority, name, other["priority"]))
    return dscp, priority


def _fabric(errs, node):
    if node is None:
        return None
    if not isinstance(node, dict):
        errs.add("fabric: expected a mapping with tiers, rail_optimised, ecmp, subnet_aware_routing, got %r"
                 % (node,))
        return None
    errs.unknown("fabric", node, FABRIC_KEYS)
    tiers = node.get("tiers")
    if tiers is not None:
        tiers = errs.int_in(tiers, 1, MAX_TIERS, "fabric.tiers")
    out = {"tiers": tiers}
    for key in ("rail_optimised", "ecmp", "subnet_aware_routing"):
        value = node.get(key)
        if value is not None and not isinstance(value, bool):
            errs.add("fabric.%s: expected true or false, got %r" % (key, value))
            value = None
        out[key] = value
    if tiers == 1 and out["ecmp"]:
        errs.add("fabric: tiers 1 with ecmp true: one switch tier has no equal-cost paths between "
                 "nodes (a bond toward the switch is seen on the host, not declared here)")
    return out


def _buffer(errs, node, lossless):
    """The lossless (PFC) receive buffers: cable length in metres, the buffer of each priority,
    the size of each buffer in bytes; docs/qos.md says what each NIC tool makes of them."""
    if node is None:
        return None
    if not isinstance(node, dict):
        errs.add("buffer: expected a mapping with cable_length, prio_buffer, buffer_size, got %r" % (node,))
        return None
    errs.unknown("buffer", node, BUFFER_KEYS)
    if all(node.get(k) is None for k in BUFFER_KEYS):
        errs.add("buffer: states none of %s (leave the section out instead)" % ", ".join(BUFFER_KEYS))
        return None
    cable = node.get("cable_length")
    if cable is not None:
        cable = errs.int_in(cable, 1, CABLE_LENGTH_MAX, "buffer.cable_length")
    prio_buffer = _eight(errs, node.get("prio_buffer"), "buffer.prio_buffer", 0, BUFFERS - 1,
                         "the buffer of each priority 0..7, like [0, 0, 0, 1, 0, 0, 0, 0]")
    sizes = _eight(errs, node.get("buffer_size"), "buffer.buffer_size", 0, BUFFER_SIZE_MAX,
                   "the size in bytes of each buffer 0..7")
    if prio_buffer is not None and sizes is not None:
        for prio in lossless:
            if sizes[prio_buffer[prio]] == 0:
                errs.add("buffer.buffer_size[%d] is 0 but lossless priority %d is in buffer %d "
                         "(buffer.prio_buffer): a buffer that holds a PFC priority needs room"
                         % (prio_buffer[prio], prio, prio_buffer[prio]))
    return {"cable_length": cable, "prio_buffer": prio_buffer, "buffer_size": sizes}


def _ecn_marking(errs, node):
    """The switches' ECN marking thresholds in bytes; absent keys take ECN_MARKING_DEFAULTS."""
    if node is None:
        return None
    if not isinstance(node, dict):
        errs.add("ecn_marking: expected a mapping with min_threshold, max_threshold, probability, got %r" % (node,))
        return None
    errs.unknown("ecn_marking", node, ECN_MARKING_KEYS, hint_extra=" (thresholds in bytes)")
    out = {}
    for key in ("min_threshold", "max_threshold"):
        value = node.get(key)
        value = ECN_MARKING_DEFAULTS[key] if value is None else value
        out[key] = errs.int_in(value, 1, ECN_THRESHOLD_MAX, "ecn_marking.%s (bytes)" % key)
    probability = node.get("probability")
    probability = ECN_MARKING_DEFAULTS["probability"] if probability is None else probability
    out["probability"] = errs.int_in(probability, 1, 100, "ecn_marking.probability (percent)")
    low, high = out["min_threshold"], out["max_threshold"]
    if low is not None and high is not None and low >= high:
        errs.add("ecn_marking: min_threshold %d is not below max_threshold %d (bytes)" % (low, high))
    return out


def _pfc_watchdog(errs, node):
    """The switches' PFC watchdog; absent keys take PFC_WATCHDOG_DEFAULTS."""
    if node is None:
        return None
    if not isinstance(node, dict):
        errs.add("pfc_watchdog: expected a mapping with action, detection_time, restoration_time, got %r" % (node,))
        return None
    errs.unknown("pfc_watchdog", node, PFC_WATCHDOG_KEYS, hint_extra=" (times in milliseconds)")
    action = node.get("action")
    action = PFC_WATCHDOG_DEFAULTS["action"] if action is None else action
    if action not in PFC_WATCHDOG_ACTIONS:
        errs.add("pfc_watchdog.action: %r is not one of %s" % (action, ", ".join(PFC_WATCHDOG_ACTIONS)),
                 hint="drop: the stuck queue's packets are dropped; forward: they are sent, the pauses ignored")
        action = None
    out = {"action": action}
    for key, (lo, hi) in (("detection_time", PFC_WATCHDOG_DETECTION_MS),
                          ("restoration_time", PFC_WATCHDOG_RESTORATION_MS)):
        value = node.get(key)
        value = PFC_WATCHDOG_DEFAULTS[key] if value is None else value
        out[key] = errs.int_in(value, lo, hi, "pfc_watchdog.%s (milliseconds)" % key)
    return out


def _eight(errs, value, what, lo, hi, shape):
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != BUFFERS:
        errs.add("%s: expected a list of 8 integers, %s; got %r" % (what, shape, value))
        return None
    got = [errs.int_in(v, lo, hi, "%s[%d]" % (what, i)) for i, v in enumerate(value)]
    return None if None in got else got


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


def _ecn(errs, value):
    if isinstance(value, str):
        key = value.strip().lower().replace("(", "").replace(")", "").replace("_", "-")
        key = {"ect-0": "ect0", "ect-1": "ect1", "notect": "not-ect"}.get(key, key)
        if key in ECN_NAMES:
            return ECN_NAMES[key]
        if key == "ce":
            errs.add("ecn: CE is set by congested switches, never by a sender")
        else:
            errs.add("ecn: %r is not one of %s (or 0, 1, 2)" % (value, ", ".join(ECN_NAMES)))
        return None
    n = errs.int_in(value, 0, 3, "ecn")
    if n == 3:
        errs.add("ecn: 3 (CE) is set by congested switches, never by a sender")
        return None
    return n
