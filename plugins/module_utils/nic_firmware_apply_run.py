# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The nic_firmware_apply module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.nic_firmware_state import (
        FirmwareError,
        check_settings,
        device_plan,
        devices_of,
        diff_lines,
        query_argv,
        relaxed_ordering_problems,
        set_argv,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import missing_packages
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_signals import mark_reboot_required
except ImportError:  # unit tests import the files as plain modules
    from nic_firmware_state import (  # pylint: disable=import-error
        FirmwareError,
        check_settings,
        device_plan,
        devices_of,
        diff_lines,
        query_argv,
        relaxed_ordering_problems,
        set_argv,
    )
    from rocetune_packages import missing_packages  # pylint: disable=import-error
    from rocetune_signals import mark_reboot_required  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    settings=dict(type="dict", required=True),
    interfaces=dict(type="list", elements="str", default=[]),
    devices=dict(type="list", elements="str", default=[]),
    tool=dict(type="str", choices=["auto", "mlxconfig", "mstconfig"], default="auto"),
    packages=dict(type="raw", default=[]),
    reboot_marker=dict(type="path", default="/run/reboot-required"),
    allow_forced_write_reordering=dict(type="bool", default=False),
)


def pick_tool(module, tool):
    names = ["mlxconfig", "mstconfig"] if tool == "auto" else [tool]
    for name in names:
        path = module.get_bin_path(name)
        if path:
            return name, path
    return None, None


def run(module):
    p = module.params
    result = dict(changed=False, devices={}, reboot_required=False, missing_packages=[], pending=False)
    if not p["settings"]:
        module.exit_json(**result)
    try:
        check_settings(p["settings"])
        refused = relaxed_ordering_problems(p["settings"], p["allow_forced_write_reordering"])
        if refused:
            raise FirmwareError("; ".join(refused))
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
    if getattr(module, "_diff", False):
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
    try:
        result["changed"] |= mark_reboot_required(marker)
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (marker, exc), **result)
