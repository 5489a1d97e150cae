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

import difflib
import errno
import fnmatch
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
_VALUE_BAD_RE = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


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
        except OSError as exc:
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
    here turns the item READ_ONLY (with `error`); any other error restores the values already
    written and is raised as ValueError. Each item written gets `written`: True (see restore)."""
    try:
        _write_all(proc_sys, items)
    except ValueError:
        restore(proc_sys, items)
        raise
    return items


def restore(proc_sys, items):
    """Put back the values `apply` changed (best effort, last written first); the items are
    marked as not written again."""
    for item in reversed(items):
        if not item.get("written"):
            continue
        try:
            with open(key_path(proc_sys, item["key"]), "w") as fh:
                fh.write(item["have"] + "\n")
        except OSError:
            pass
        item["written"] = False


def refused(items):
    """The items the kernel refused to take at write time (read-only here after all)."""
    return [i for i in items if i.get("error")]


def _write_all(proc_sys, items):
    for item in items:
        if item["state"] != CHANGED:
            continue
        path = key_path(proc_sys, item["key"])
        try:
            with open(path, "w") as fh:
                fh.write(item["want"] + "\n")
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                item["state"] = READ_ONLY
                item["error"] = os.strerror(exc.errno)
                continue
            raise ValueError("%s = %s: %s" % (item["key"], item["want"], os.strerror(exc.errno))) from exc
        item["written"] = True
        have = read_value(path)
        if have != item["want"]:
            # The kernel clamps or rejects some values silently (e.g. above a hard limit).
            raise ValueError("%s = %s: the kernel kept %s" % (item["key"], item["want"], have))


def unsupported_message(items, proc_sys=None):
    """One line naming the keys that were skipped, or "" when none were. With `proc_sys`, an
    absent key is followed by the names beside it that are close (a misspelling)."""
    absent = [_with_suggestion(proc_sys, i["key"]) for i in items if i["state"] == ABSENT]
    read_only = ["%s (%s)" % (i["key"], i["error"]) if i.get("error") else i["key"]
                 for i in items if i["state"] == READ_ONLY]
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


def _with_suggestion(proc_sys, key):
    if proc_sys is None:
        return key
    parent = os.path.dirname(key_path(proc_sys, key))
    try:
        names = os.listdir(parent)
    except OSError:
        return key
    leaf = str(key).rsplit(".", 1)[-1]
    close = difflib.get_close_matches(leaf, names, n=1, cutoff=0.8)
    if not close:
        return key
    return "%s (did you mean %s?)" % (key, str(key).rsplit(".", 1)[0] + "." + close[0].replace(".", "/"))


# sysctl.d(5): every *.conf file of these directories, sorted by file name whatever its
# directory (a name in an earlier directory masks the same name in a later one); a later file
# overrides an earlier one. procps' `sysctl --system` reads /etc/sysctl.conf after all of them.
SYSCTL_D_DIRS = ("etc/sysctl.d", "run/sysctl.d", "usr/local/lib/sysctl.d", "usr/lib/sysctl.d", "lib/sysctl.d")
SYSCTL_CONF = "etc/sysctl.conf"


def boot_files(root="/"):
    """The sysctl configuration files in the order they are applied at boot: [(name, path)]."""
    chosen = {}
    for directory in SYSCTL_D_DIRS:
        path = os.path.join(root, directory)
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            if name.endswith(".conf") and name not in chosen:
                chosen[name] = os.path.join(path, name)
    out = sorted(chosen.items())
    conf = os.path.join(root, SYSCTL_CONF)
    if os.path.isfile(conf):
        out.append(("sysctl.conf", conf))
    return out


def _dotted(key):
    """A key as sysctl.d(5) allows it (dots or slashes as separators) in the dotted form."""
    key = key.strip()
    if "/" in key and ("." not in key or key.index("/") < key.index(".")):
        return key.replace(".", "\0").replace("/", ".").replace("\0", "/")
    return key


def read_settings(path):
    """[(line number, dotted key, value)] of one sysctl.d file; unreadable files give []."""
    out = []
    try:
        with open(path) as fh:
            lines = fh.read(MAX_CONF_BYTES).splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        out.append((n, _dotted(key.lstrip("-")), normalize(value)))
    return out


MAX_CONF_BYTES = 1 << 20


def _shown(path, root):
    """A path under `root` as the node names it."""
    return "/" + os.path.relpath(path, root) if root not in ("", "/") else path


def boot_overrides(our_file, desired, root="/"):
    """Settings of files applied after `our_file` at boot that leave one of the desired keys
    at another value: ["PATH:LINE sets KEY = VALUE (rocetune's file says WANT)"]. A file
    applied later wins (sysctl.d(5)); `sysctl --system` reads /etc/sysctl.conf last."""
    ours = os.path.basename(our_file)
    want = dict((k, normalize(v)) for k, v in desired.items())
    last = {}
    for name, path in boot_files(root):
        if name != "sysctl.conf" and name <= ours:
            continue
        if os.path.realpath(path) == os.path.realpath(os.path.join(root, our_file.lstrip("/"))):
            continue
        for n, key, value in read_settings(path):
            for wanted in want:
                if fnmatch.fnmatchcase(wanted, key):
                    last[wanted] = ("%s:%d" % (_shown(path, root), n), value)
    return ["%s sets %s = %s (%s says %s)" % (where, key, value, our_file, want[key])
            for key, (where, value) in sorted(last.items()) if value != want[key]]


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
