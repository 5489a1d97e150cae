# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""ConnectX persistent firmware (NVCONFIG) parameters: parse `mlxconfig`/`mstconfig` query
output, compare what the inventory wants with the Next Boot values and return only the
`set` arguments that differ, plus the parameters whose Next Boot differs from Current (a
firmware reset or reboot is pending for them).

Pure Python with the command runner passed in: the Ansible module and the unit tests (recorded
real outputs, tests/unit/roles/fixtures/PROVENANCE.md) share it. It imports nothing but the
standard library, so any reader of NVCONFIG (the node agent's firmware read-back) can use the one
parser (parse_query, parse_value) and the relaxed-ordering judgement (forces_relaxed_ordering).
"""

from __future__ import absolute_import, division, print_function

import os
import re

__metaclass__ = type

_PARAM = re.compile(r"^[A-Z][A-Z0-9_]*(\[[0-9.]+\])?\Z")
_MNEMONIC = re.compile(r"^(?P<name>.*)\((?P<num>-?\d+)\)\Z")
_BDF = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])\Z")


class FirmwareError(Exception):
    """A message the operator can act on (one line)."""


# PCI_WR_ORDERING: per_mkey(0), the default, lets each memory registration ask for PCIe relaxed
# ordering (NCCL does where it is safe: NCCL_IB_PCI_RELAXED_ORDERING); force_relax(1) makes every
# PCIe write of the NIC relaxed, also to memory registered for strict order. NCCL's maintainers
# trace "collective mismatch" and completion errors to it and ask for per_mkey (NVIDIA/nccl#531,
# #615); DeepEP keeps RDMA writes in order by turning relaxed ordering off (deepseek-ai/DeepEP#40).
WRITE_ORDERING = "PCI_WR_ORDERING"
RELAXED_ORDERING_RISK = (
    "PCI_WR_ORDERING=force_relax lets the NIC reorder every PCIe write, also to memory registered for strict "
    "order: data can land after the flag that announces it (NCCL: 'collective mismatch' and completion errors, "
    "NVIDIA/nccl#531 and #615; DeepEP turns relaxed ordering off for this, deepseek-ai/DeepEP#40). per_mkey "
    "(the default) lets NCCL use relaxed ordering where it is safe")
ALLOW_VAR = "nic_firmware_allow_forced_write_reordering"


def forces_relaxed_ordering(param, value):
    """Whether `value` of `param` (as the inventory or the tool's query states it: force_relax,
    force_relax(1), 1) forces relaxed ordering on every PCIe write."""
    if param != WRITE_ORDERING:
        return False
    try:
        name, num = wanted_value(param, value)  # as it would be set: true and "true" are 1
    except FirmwareError:
        return False
    return name == "FORCE_RELAX" or (name is None and num == 1)


def relaxed_ordering_problems(settings, allowed):
    """A refusal of force_relax unless the opt-in that names the risk is set; [] otherwise."""
    if allowed or not isinstance(settings, dict):
        return []
    if any(forces_relaxed_ordering(k, v) for k, v in settings.items()):
        return ["refusing %s=%s: %s. Set %s: per_mkey, or %s: true to take that risk"
                % (WRITE_ORDERING, settings[WRITE_ORDERING], RELAXED_ORDERING_RISK, WRITE_ORDERING, ALLOW_VAR)]
    return []


def parse_value(text):
    """`True(1)` -> ("TRUE", 1); `0xff` -> (None, 255); `255` -> (None, 255); other -> (text, None)."""
    text = text.strip()
    m = _MNEMONIC.match(text)
    if m:
        return m.group("name").upper(), int(m.group("num"))
    try:
        return None, int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return text.upper(), None


def parse_query(text):
    """{PARAM: {column: raw value}} from `mlxconfig|mstconfig -d DEV [-e] q` output.

    The columns come from the `Configurations:` header (`Default Current Next Boot` with -e,
    one value column without). Lines that are not parameter rows (device banner, the `*`
    legend, elisions) are skipped; leading indentation is tolerated."""
    columns, params = None, {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Configurations:"):
            columns = [c for c in re.split(r"\s{2,}", line[len("Configurations:"):].strip()) if c] or ["Next Boot"]
            continue
        if columns is None or not line:
            continue
        words = line.lstrip("*").split()
        if len(words) != len(columns) + 1 or not _PARAM.match(words[0]):
            continue
        params[words[0]] = dict(zip(columns, words[1:]))
    if columns is None:
        raise FirmwareError("no 'Configurations:' table in the query output")
    return params


def next_boot(row):
    return row.get("Next Boot", list(row.values())[-1])


def wanted_value(param, value):
    """The inventory's value as (mnemonic or None, number or None); bool is 1/0."""
    if isinstance(value, bool):
        return None, int(value)
    if isinstance(value, int):
        return None, value
    if isinstance(value, str) and value.strip():
        name, num = parse_value(value)
        if name in ("TRUE", "FALSE") and num is None:
            return None, int(name == "TRUE")
        return name, num
    raise FirmwareError("%s: %r is not a firmware value (a number, 0x.., or the mnemonic mlxconfig shows)"
                        % (param, value))


def same(wanted, shown):
    """Whether the inventory's value equals the value the tool shows (mnemonic or number)."""
    w_name, w_num = wanted
    s_name, s_num = parse_value(shown)
    if w_num is not None and s_num is not None:
        return w_num == s_num
    return w_name is not None and w_name == s_name


def set_argument(value):
    return str(int(value)) if isinstance(value, bool) else str(value).strip()


def check_settings(settings):
    """Every parameter name and value checked before any device is read."""
    if not isinstance(settings, dict):
        raise FirmwareError("nic_firmware_settings must be a mapping of PARAM: value")
    errors = []
    for param in sorted(settings):
        if not isinstance(param, str) or not _PARAM.match(param):
            errors.append("%r is not an NVCONFIG parameter name (upper case, as mlxconfig shows it)" % (param,))
            continue
        try:
            wanted_value(param, settings[param])
        except FirmwareError as exc:
            errors.append(str(exc))
    if errors:
        raise FirmwareError("nic_firmware_settings: " + "; ".join(errors))


def first_function(bdf):
    """`0000:3b:00.1` -> `0000:3b:00.0`: NVCONFIG is per device, its _P1/_P2 parameters are set
    through the first physical function."""
    m = _BDF.match(bdf.strip())
    if not m:
        raise FirmwareError("%r is not a PCI address (DDDD:BB:DD.F)" % (bdf,))
    return "%s:%s:%s.0" % ((m.group("domain") or "0000").lower(), m.group("bus").lower(), m.group("dev").lower())


def interface_device(ifname, sys_net="/sys/class/net"):
    """The PCI address behind a netdev (/sys/class/net/IF/device)."""
    link = os.path.join(sys_net, ifname, "device")
    if not os.path.exists(link):
        raise FirmwareError("%s: no PCI device (%s is missing: not a PCI NIC, or no such interface)" % (ifname, link))
    return os.path.basename(os.path.realpath(link))


def devices_of(interfaces, explicit, resolve=interface_device):
    """{first-function BDF: [what named it]} for the interfaces and the explicit addresses."""
    found, errors = {}, []
    for ifname in interfaces:
        try:
            found.setdefault(first_function(resolve(ifname)), []).append(ifname)
        except FirmwareError as exc:
            errors.append(str(exc))
    for bdf in explicit:
        try:
            found.setdefault(first_function(bdf), []).append(bdf)
        except FirmwareError as exc:
            errors.append("nic_firmware_devices: %s" % exc)
    if errors:
        raise FirmwareError("; ".join(errors))
    return found


def query_argv(tool, bdf, params):
    return [tool, "-d", bdf, "-e", "q"] + sorted(params)


def device_plan(bdf, settings, text):
    """What to set on one device and what is already waiting for a firmware reset."""
    rows = parse_query(text)
    missing = sorted(p for p in settings if p not in rows)
    if missing:
        raise FirmwareError("%s: the firmware has no parameter %s (see `mlxconfig -d %s q`)"
                            % (bdf, ", ".join(missing), bdf))
    changes, pending = {}, []
    for param in sorted(settings):
        row = rows[param]
        shown = next_boot(row)
        if not same(wanted_value(param, settings[param]), shown):
            changes[param] = {"next_boot": shown, "wanted": set_argument(settings[param])}
        if "Current" in row and row["Current"] != row["Next Boot"]:
            pending.append(param)
    return {"changes": changes, "pending_reset": pending}


def set_argv(tool, bdf, changes):
    return [tool, "-y", "-d", bdf, "set"] + ["%s=%s" % (p, changes[p]["wanted"]) for p in sorted(changes)]


def diff_lines(bdf, changes):
    return ["%s %s: %s -> %s" % (bdf, p, changes[p]["next_boot"], changes[p]["wanted"]) for p in sorted(changes)]
