#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""nic_firmware on a node in one call: the ConnectX NVCONFIG parameters the inventory names
brought to the wanted Next Boot values with mlxconfig or mstconfig; never a firmware reset."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nic_firmware_apply
short_description: ConnectX persistent firmware (NVCONFIG) parameters with mlxconfig or mstconfig
description:
  - Finds the PCI device of each interface (C(/sys/class/net/IF/device)) and of each explicit
    address, one per card (its first function; per-port parameters C(_P1)/C(_P2) are set there).
  - Reads the wanted parameters with C(mlxconfig -d BDF -e q PARAM...) (or C(mstconfig)), compares
    the wanted values (a number, C(0x..), or the mnemonic the tool shows) with the Next Boot
    column and runs C(TOOL -y -d BDF set K=V...) only for those that differ.
  - Checks every setting, every device and every parameter before anything is set; an error
    names the device and the parameter, and nothing is changed.
  - Never resets the firmware or reboots. Where Next Boot differs from Current (after a set,
    or left so before) it returns C(reboot_required) with the devices, warns, and writes
    C(/run/reboot-required).
  - When neither tool is installed and I(packages) are missing, it stops, changing nothing,
    and returns them in C(missing_packages) with C(pending) true.
  - Supports check mode (the diff, each C(BDF PARAM) with its next-boot and wanted value; nothing set) and diff.
options:
  settings:
    description: NVCONFIG parameters and their wanted values; empty does nothing.
    type: dict
    required: true
  interfaces:
    description: Netdevs whose PCI devices are configured.
    type: list
    elements: str
    default: []
  devices:
    description: PCI addresses (C(DDDD:BB:DD.F)) configured as well.
    type: list
    elements: str
    default: []
  tool:
    description: C(mlxconfig) (MFT), C(mstconfig) (mstflint) or C(auto) (mlxconfig where installed).
    type: str
    choices: [auto, mlxconfig, mstconfig]
    default: auto
  packages:
    description: Packages providing the tool, per OS family (C(Debian), C(RedHat)) or one list.
    type: raw
    default: []
  reboot_marker:
    description: The file written when a firmware reset or reboot is pending.
    type: path
    default: /run/reboot-required
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: RoCE congestion control on priority 3 and relaxed PCI write ordering, set for the next boot
  rocetune.fabric.nic_firmware_apply:
    interfaces: [ens1f0np0, ens2f0np0]
    settings:
      ROCE_CC_PRIO_MASK_P1: 8
      CNP_DSCP_P1: 48
      CNP_802P_PRIO_P1: 6
      PCI_WR_ORDERING: force_relax
"""

RETURN = r"""
devices:
  description: Per device (first function) C(named_by), C(changes) (param to C(next_boot), C(wanted)), C(pending_reset).
  type: dict
  returned: always
reboot_required:
  description: True when some device's Next Boot values differ from Current (a firmware reset or reboot applies them).
  type: bool
  returned: always
tool:
  description: The tool that read and set the parameters.
  type: str
  returned: unless pending
missing_packages:
  description: Packages of I(packages) that are not installed.
  type: list
  returned: always
pending:
  description: True when no tool was installed and packages were missing; nothing was done.
  type: bool
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import directory_problem
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import missing_packages
from ansible_collections.rocetune.fabric.plugins.module_utils.nic_firmware_state import (
    FirmwareError, check_settings, device_plan, devices_of, diff_lines, query_argv, set_argv
)

_MARKER = "*** System restart required ***\n"


def pick_tool(module, tool):
    names = ["mlxconfig", "mstconfig"] if tool == "auto" else [tool]
    for name in names:
        path = module.get_bin_path(name)
        if path:
            return name, path
    return None, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            settings=dict(type="dict", required=True),
            interfaces=dict(type="list", elements="str", default=[]),
            devices=dict(type="list", elements="str", default=[]),
            tool=dict(type="str", choices=["auto", "mlxconfig", "mstconfig"], default="auto"),
            packages=dict(type="raw", default=[]),
            reboot_marker=dict(type="path", default="/run/reboot-required"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, devices={}, reboot_required=False, missing_packages=[], pending=False)
    if not p["settings"]:
        module.exit_json(**result)
    try:
        check_settings(p["settings"])
        found = devices_of(p["interfaces"], p["devices"])
    except FirmwareError as exc:
        module.fail_json(msg="%s; nothing was changed" % exc, **result)
    if not found:
        module.fail_json(msg="nic_firmware_settings given but no device: set nic_firmware_interfaces "
                             "or nic_firmware_devices; nothing was changed", **result)

    name, path = pick_tool(module, p["tool"])
    if not path:
        dummy, result["missing_packages"] = missing_packages(module, p["packages"], "nic_firmware_packages")
        if result["missing_packages"]:
            result["pending"] = True
            module.exit_json(**result)
        module.fail_json(msg="%s is not installed (mstconfig comes with the mstflint package, mlxconfig "
                             "with NVIDIA MFT; see nic_firmware_tool); nothing was changed"
                             % ("mlxconfig or mstconfig" if p["tool"] == "auto" else p["tool"]), **result)
    result["tool"] = name

    plans, errors = {}, []
    for bdf in sorted(found):
        argv = query_argv(path, bdf, p["settings"])
        rc, out, err = module.run_command(argv)
        try:
            if rc != 0:
                raise FirmwareError("%s: `%s -d %s -e q` failed: %s" % (bdf, name, bdf, (err or out).strip()))
            plans[bdf] = device_plan(bdf, p["settings"], out)
        except FirmwareError as exc:
            errors.append("%s (%s)" % (exc, ", ".join(found[bdf])))
    if errors:
        module.fail_json(msg="; ".join(errors) + "; nothing was changed", **result)

    diff_before, diff_after = [], []
    for bdf, plan in plans.items():
        changes = plan["changes"]
        pending = sorted(set(plan["pending_reset"]) | set(changes))
        result["devices"][bdf] = {"named_by": found[bdf], "changes": changes, "pending_reset": pending}
        diff_before += ["%s %s: %s" % (bdf, k, v["next_boot"]) for k, v in sorted(changes.items())]
        diff_after += ["%s %s: %s" % (bdf, k, v["wanted"]) for k, v in sorted(changes.items())]
        if changes:
            result["changed"] = True
            if not module.check_mode:
                rc, out, err = module.run_command(set_argv(path, bdf, changes))
                if rc != 0:
                    module.fail_json(msg="%s: `%s` failed: %s" % (bdf, " ".join(set_argv(name, bdf, changes)),
                                                                  (err or out).strip()), **result)
    result["diff"] = {"before": "".join(line + "\n" for line in diff_before),
                      "after": "".join(line + "\n" for line in diff_after),
                      "before_header": "firmware next boot", "after_header": "wanted"}
    result["changes"] = [line for bdf, plan in sorted(plans.items()) for line in diff_lines(bdf, plan["changes"])]

    waiting = ["%s (%s)" % (bdf, ", ".join(d["pending_reset"])) for bdf, d in sorted(result["devices"].items())
               if d["pending_reset"]]
    if waiting:
        result["reboot_required"] = True
        module.warn("firmware settings wait for a firmware reset (mlxfwreset) or a cold reboot on %s; "
                    "nothing was reset" % "; ".join(waiting))
        if not module.check_mode:
            write_marker(module, p["reboot_marker"], result)
    module.exit_json(**result)


def write_marker(module, marker, result):
    if os.path.lexists(marker):
        return
    why = directory_problem(os.path.dirname(os.path.abspath(marker)))
    if why:
        module.fail_json(msg="cannot write %s: %s" % (marker, why), **result)
    try:  # created, never opened through a link or over a file someone else put there
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(_MARKER)
    except (IOError, OSError) as exc:
        module.fail_json(msg="%s: %s" % (marker, exc), **result)
    result["changed"] = True


if __name__ == "__main__":
    main()
