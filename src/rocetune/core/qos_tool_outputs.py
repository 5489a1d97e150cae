# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""A NIC's QoS state as its tools print it: `mlnx_qos -i IF`, iproute2 `dcb` (app, pfc, ets,
buffer) and `ethtool -a IF`. The one reader of these outputs: the agent's probe
(rocetune.probe.sources.qos) and, through its copy plugins/module_utils/rocetune_qos_tools.py, the
roce_qos role's module and its boot-time script (roce_qos_state, roce_qos_buffer; the role
installs this file beside the script) -- so what the probe reports and what the role changes
come from one reading of the NIC.

Each reader takes the tool's output as text and returns plain data, or raises QosOutputError
with one line naming the tool; no other exception leaves a reader. Standard library only;
Python 3.9 and newer.
"""

from __future__ import absolute_import, division, print_function

import json
import re

__metaclass__ = type

PRIORITIES = 8
# What dcb and mlnx_qos print (on stderr, exit 1) for a NIC whose driver has no DCB.
NOT_SUPPORTED = "Operation not supported"


class QosOutputError(ValueError):
    """An output the reader cannot take (one line naming the tool)."""


def _number(word):
    """The int of a word of ASCII digits, else None (str.isdigit takes superscripts too)."""
    if word and all("0" <= c <= "9" for c in word):
        return int(word)
    return None


def _pairs(words):
    out = {}
    for word in words:
        key, dummy, value = word.partition(":")
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# iproute2 dcb (always with -N: numeric DSCPs)


def parse_dcb(text):
    """`dcb -N {ets|pfc|app} show dev IF` -> {keyword: [words]} per line (prio-tc, tc-tsa, tc-bw,
    prio-pfc, dscp-prio, pfc-cap ...)."""
    out = {}
    for line in (text or "").splitlines():
        words = line.split()
        if words:
            out.setdefault(words[0], []).extend(words[1:])
    return out


def dcb_pfc(text):
    """[0/1 per priority] from `dcb pfc show`."""
    pairs = _pairs(parse_dcb(text).get("prio-pfc", []))
    return [1 if pairs.get(str(p)) == "on" else 0 for p in range(PRIORITIES)]


def dcb_pfc_delay(text):
    """The `delay` word of `dcb -N pfc show dev IF` (`pfc-cap 8 macsec-bypass off delay 7`), or None."""
    words = (text or "").split()
    for i, word in enumerate(words[:-1]):
        if word == "delay" and _number(words[i + 1]) is not None:
            return _number(words[i + 1])
    return None


def dcb_app_dscp(text):
    """{dscp: [priorities in the order dcb prints them]} from `dcb -N app show dev IF dscp-prio`
    (one DSCP may map to several priorities)."""
    out = {}
    for word in parse_dcb(text).get("dscp-prio", []):
        d, dummy, p = word.partition(":")
        dscp, prio = _number(d), _number(p)
        if dscp is None or prio is None:
            raise QosOutputError("dcb app: unexpected entry %r (run dcb with -N for numeric DSCPs)" % word)
        prios = out.setdefault(dscp, [])
        if prio not in prios:
            prios.append(prio)
    return out


def dcb_ets(text):
    """{prio_tc: [tc per prio], tc_tsa: [..], tc_bw: [..]} from `dcb ets show` (None where a
    priority or traffic class is not printed; a key only where its line is)."""
    words = parse_dcb(text)
    res = {}
    for key, name, numeric in (("prio-tc", "prio_tc", True), ("tc-tsa", "tc_tsa", False), ("tc-bw", "tc_bw", True)):
        pairs = _pairs(words.get(key, []))
        if not pairs:
            continue
        values = []
        for i in range(PRIORITIES):
            value = pairs.get(str(i))
            if value is not None and numeric:
                if _number(value) is None:
                    raise QosOutputError("dcb ets: %s %d:%r is not a number" % (key, i, value))
                value = _number(value)
            values.append(value)
        res[name] = values
    return res


def parse_dcb_buffer(text):
    """`dcb -j buffer show dev IF` -> {prio_buffer [8], buffer_size [8], total_size} (the JSON form:
    the text form rounds sizes to Kb/Mb)."""
    try:
        doc = json.loads(text or "")
    except ValueError:
        raise QosOutputError("dcb -j buffer show: not JSON: %r" % (text or "")[:80]) from None
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if not isinstance(doc, dict):
        raise QosOutputError("dcb -j buffer show: expected an object, got %r" % (text or "")[:80])
    out = {}
    for key in ("prio_buffer", "buffer_size"):
        value = doc.get(key)
        if not isinstance(value, list) or len(value) != PRIORITIES or not all(isinstance(v, int) for v in value):
            raise QosOutputError("dcb -j buffer show: %s is not 8 integers: %r" % (key, value))
        out[key] = list(value)
    total = doc.get("total_size")
    out["total_size"] = total if isinstance(total, int) else None
    return out


# ---------------------------------------------------------------------------------------------
# mlnx_qos (MLNX_OFED, mlnx-tools)


def parse_mlnx_qos(text):
    """`mlnx_qos -i IF` -> {trust ("dscp" | "pcp"), dscp_prio {dscp: prio}, pfc [0/1 per priority]
    or None, tc_tsa [8], tc_bw [8], prio_tc [8]} (None where a traffic class is not printed)."""
    out = {"trust": None, "dscp_prio": {}, "pfc": None, "tc_tsa": [None] * PRIORITIES,
           "tc_bw": [None] * PRIORITIES, "prio_tc": [None] * PRIORITIES}
    tc = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"Priority trust (?:state|mode):\s*(\w+)", line)
        if m:
            out["trust"] = m.group(1).lower()
            continue
        m = re.match(r"prio:(\d)\s+dscp:([\d,]+)", line)
        if m:
            for d in filter(None, m.group(2).split(",")):
                out["dscp_prio"][int(d)] = int(m.group(1))
            continue
        if line.startswith("enabled") and out["pfc"] is None:
            values = line.split()[1:]
            if len(values) == PRIORITIES and all(v in ("0", "1") for v in values):
                out["pfc"] = [int(v) for v in values]
            continue
        m = re.match(r"tc:\s*(\d+)\s.*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?", line)
        if m:
            tc = int(m.group(1))
            if tc >= PRIORITIES:  # no such class: its priority line is skipped with it
                tc = None
                continue
            out["tc_tsa"][tc] = m.group(2)
            out["tc_bw"][tc] = int(m.group(3)) if m.group(3) else 0
            continue
        m = re.match(r"priority:\s*([\d ]+)\Z", line)
        if m and tc is not None:
            for p in m.group(1).split():
                if int(p) < PRIORITIES:
                    out["prio_tc"][int(p)] = tc
    if out["trust"] is None:
        raise QosOutputError("mlnx_qos: no 'Priority trust state' line in its output")
    return out


def parse_mlnx_qos_buffers(text):
    """The buffer lines of `mlnx_qos -i IF` -> {cable_length, prio_buffer, buffer_size, total_size},
    or None when it prints none (the NIC or the tool has no buffer commands)."""
    out = {"cable_length": None, "prio_buffer": None, "buffer_size": None, "total_size": None}
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"Receive buffer size \(bytes\):\s*([\d,]+?),?(?:(?:max_buffer_size|total_size)=(\d+))?\Z", line)
        if m:
            sizes = [int(v) for v in m.group(1).split(",") if v]
            if len(sizes) == PRIORITIES:
                out["buffer_size"] = sizes
            out["total_size"] = int(m.group(2)) if m.group(2) else None
            continue
        m = re.match(r"Cable len:\s*(\d+)\Z", line)
        if m:
            out["cable_length"] = int(m.group(1))
            continue
        if line.startswith("buffer") and out["prio_buffer"] is None:
            values = line.split()[1:]
            if len(values) == PRIORITIES and all(_number(v) is not None for v in values):
                out["prio_buffer"] = [int(v) for v in values]
    if out["buffer_size"] is None or out["prio_buffer"] is None:
        return None
    return out


# ---------------------------------------------------------------------------------------------
# ethtool


def parse_pause(text):
    """`ethtool -a IF` -> {"rx": bool, "tx": bool} (the lines it prints)."""
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"^(RX|TX):\s+(on|off)\s*\Z", line.strip())
        if m:
            out[m.group(1).lower()] = m.group(2) == "on"
    return out
