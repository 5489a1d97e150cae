# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Read and set sysctls under /proc/sys, sorting each key into changed, unchanged, absent or
read-only. Pure Python (no Ansible imports) so the decisions are unit-tested on a directory
tree that plays /proc/sys.

Inside a network namespace or a container some keys are absent (net.core.netdev_max_backlog)
and some are visible but read-only (net.core.rmem_max mirrors the host's value: mode 0444, a
write gives EACCES, or EINVAL from `sysctl`). Those are reported, never fatal here: the caller
decides.
"""

from __future__ import absolute_import, division, print_function

import errno
import os
import re

__metaclass__ = type

CHANGED = "changed"
UNCHANGED = "unchanged"
ABSENT = "absent"
READ_ONLY = "read-only"


# A sysctl name as sysctl.d(5) writes it: dotted segments; a slash in a segment stands for a dot
# in an interface name. Nothing that could end a line or climb out of /proc/sys, and no leading
# "-" (sysctl.d(5): a "-" before the name makes systemd-sysctl ignore a failure to set it).
_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_:/-]+)+\Z")
# What cannot be in a one-line value: control characters (a newline or NUL above all; a tab is
# whitespace, which the kernel splits fields on) and Unicode line separators.
_VALUE_BAD_RE = re.compile(u"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def invalid_entries(desired):
    """One message per key or value that cannot be a sysctl setting, naming it; [] when all can."""
    problems = []
    for key in sorted(desired, key=str):
        if not isinstance(key, str) or not _KEY_RE.match(key) or "//" in key:
            problems.append("%r is not a sysctl name" % (key,))
            continue
        value = desired[key]
        if isinstance(value, (dict, list, bool)) or value is None:
            problems.append("%s: %r is not a sysctl value" % (key, value))
        elif _VALUE_BAD_RE.search(str(value)) or not normalize(value):
            problems.append("%s: %r is not a one-line sysctl value" % (key, str(value)))
    return problems


def key_path(proc_sys, key):
    """net.ipv4.conf.eth0/1.rp_filter -> PROC/net/ipv4/conf/eth0.1/rp_filter (sysctl.d(5): a
    slash in a dotted key stands for a dot in the name, e.g. a VLAN interface)."""
    parts = [p.replace("/", ".") for p in str(key).split(".")]
    return os.path.join(proc_sys, *parts)


def normalize(value):
    """Compare values as the kernel prints them: fields split on any whitespace."""
    return " ".join(str(value).split())


def read_value(path):
    with open(path) as fh:
        return normalize(fh.read())


def plan(proc_sys, desired):
    """[{key, want, have, state}] for every desired key, sorted by key; state is CHANGED when
    a write is needed, else UNCHANGED, ABSENT, or READ_ONLY."""
    out = []
    for key in sorted(desired):
        want = normalize(desired[key])
        path = key_path(proc_sys, key)
        try:
            have = read_value(path)
        except (IOError, OSError) as exc:
            state = ABSENT if exc.errno == errno.ENOENT else READ_ONLY
            out.append({"key": key, "want": want, "have": None, "state": state})
            continue
        if have == want:
            state = UNCHANGED
        elif not os.stat(path).st_mode & 0o222:  # no write bit: read-only here, even for root
            state = READ_ONLY
        else:
            state = CHANGED
        out.append({"key": key, "want": want, "have": have, "state": state})
    return out


def apply(proc_sys, items):
    """Write the CHANGED items. A write the kernel refuses because the key is not writable
    here turns the item READ_ONLY (with the error); any other error restores the values
    already written and is raised."""
    done = []
    try:
        _write_all(proc_sys, items, done)
    except ValueError:
        for item in reversed(done):
            try:
                with open(key_path(proc_sys, item["key"]), "w") as fh:
                    fh.write(item["have"] + "\n")
            except (IOError, OSError):
                pass
        raise
    return items


def _write_all(proc_sys, items, done):
    for item in items:
        if item["state"] != CHANGED:
            continue
        path = key_path(proc_sys, item["key"])
        try:
            with open(path, "w") as fh:
                fh.write(item["want"] + "\n")
        except (IOError, OSError) as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                item["state"] = READ_ONLY
                item["error"] = os.strerror(exc.errno)
                continue
            raise ValueError("%s = %s: %s" % (item["key"], item["want"], os.strerror(exc.errno)))
        done.append(item)
        have = read_value(path)
        if have != item["want"]:
            # The kernel clamps or rejects some values silently (e.g. above a hard limit).
            raise ValueError("%s = %s: the kernel kept %s" % (item["key"], item["want"], have))


def unsupported_message(items):
    """One line naming the keys that were skipped, or "" when none were."""
    absent = [i["key"] for i in items if i["state"] == ABSENT]
    read_only = [i["key"] for i in items if i["state"] == READ_ONLY]
    parts = []
    if absent:
        parts.append("absent here: " + ", ".join(absent))
    if read_only:
        parts.append("read-only here: " + ", ".join(read_only))
    if not parts:
        return ""
    return ("sysctls skipped and not persisted (an absent key is misspelt, not in this kernel, or "
            "hidden by a network namespace or container; a read-only one is mirrored from the host "
            "and is set there): " + "; ".join(parts))


FILE_HEADER = ("# Written by rocetune's host_tuning role; edit the inventory, not this file.\n"
               "# Why each value: roles/host_tuning/README.md in rocetune.\n")


def file_content(desired, items=None):
    """The sysctl.d file for the desired values: sorted keys, values as the kernel prints them.
    With the plan's items, only the keys this node has and can set are persisted: a misspelt or
    hidden key would make systemd-sysctl fail at every boot."""
    keys = sorted(desired)
    if items is not None:
        settable = set(i["key"] for i in items if i["state"] in (CHANGED, UNCHANGED))
        keys = [k for k in keys if k in settable]
    return FILE_HEADER + "".join("%s = %s\n" % (key, normalize(desired[key])) for key in keys)
