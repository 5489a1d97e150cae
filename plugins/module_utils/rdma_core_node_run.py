# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The rdma_core_node module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight).

Order: the names, the files' targets and that every module to load exists for the running
kernel are checked first; any refusal loads nothing and writes nothing. Then the modules are
loaded, then the files written. A systemd manager still running with another memlock limit than
the drop-in's is reported (daemon_reexec_required) and marked in /run/reboot-required."""

from __future__ import absolute_import, division, print_function

import os

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rdma_core_node_state import (
        PEERMEM_UNUSABLE,
        boot_modules,
        builtin_modules,
        memlock_pending,
        missing_modules,
        module_name_problems,
        wanted_files,
        wanted_modules,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
        FileTargetError,
        apply_changes,
        plan_files,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import missing_packages
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_signals import mark_reboot_required
except ImportError:  # unit tests import the files as plain modules
    from rdma_core_node_state import (  # pylint: disable=import-error
        PEERMEM_UNUSABLE,
        boot_modules,
        builtin_modules,
        memlock_pending,
        missing_modules,
        module_name_problems,
        wanted_files,
        wanted_modules,
    )
    from rocetune_files import FileTargetError, apply_changes, plan_files  # pylint: disable=import-error
    from rocetune_packages import missing_packages  # pylint: disable=import-error
    from rocetune_signals import mark_reboot_required  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    modules=dict(type="list", elements="str", default=[]),
    nic_driver=dict(type="str", default=""),
    nvidia_peermem=dict(type="str", choices=["auto", "true", "false"], default="auto"),
    modules_load_file=dict(type="path", default=""),
    limits_file=dict(type="path", default=""),
    systemd_dropin=dict(type="path", default=""),
    packages=dict(type="raw", default=[]),
    reboot_marker=dict(type="path", default="/run/reboot-required"),
)

NOTHING = "; nothing was changed"


def peermem_installed(module):
    """Whether nvidia_peermem is installed for the running kernel (modinfo finds its file)."""
    return module_exists(module, "nvidia_peermem")


def module_exists(module, name):
    modinfo = module.get_bin_path("modinfo")
    if not modinfo:
        return True  # cannot tell here; modprobe will say
    rc, dummy, dummy = module.run_command([modinfo, "-n", name])
    return rc == 0


def manager_memlock(module):
    """The running systemd manager's DefaultLimitMEMLOCK, or None where systemd does not run."""
    if not os.path.isdir("/run/systemd/system"):
        return None
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return None
    rc, out, dummy = module.run_command([systemctl, "show", "--property", "DefaultLimitMEMLOCK", "--value"])
    return out.strip() if rc == 0 else None


def run(module):
    p = module.params
    problems = module_name_problems(p["modules"], p["nic_driver"]) if p["modules"] else []
    if problems:
        module.fail_json(msg="; ".join(problems) + NOTHING)
    family, missing_pkgs = missing_packages(module, p["packages"], "rdma_core_packages")

    installed = p["nvidia_peermem"] == "auto" and bool(p["modules"]) and peermem_installed(module)
    modules = wanted_modules(p["modules"], p["nic_driver"], p["nvidia_peermem"], installed) if p["modules"] else []
    builtin = builtin_modules(modules)
    to_load = missing_modules(modules, builtin=builtin)
    # Everything is checked before the first modprobe: the files' targets, and that every module
    # to load exists for the running kernel (a misspelt name loads nothing, not half the list).
    try:
        plan_files(wanted_files(p["modules_load_file"] if modules else "", boot_modules(modules, builtin),
                                p["limits_file"], p["systemd_dropin"]), [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc) + NOTHING)
    unknown = [n for n in to_load if n != "nvidia_peermem" and not module_exists(module, n)]
    if unknown:
        module.fail_json(msg="no kernel module %s for the running kernel (modinfo finds none: check "
                             "rdma_core_modules / rdma_core_nic_driver, or install its package first)%s"
                             % (", ".join(unknown), NOTHING), loaded=[])
    before = sorted(n for n in modules if n not in to_load)
    if to_load and not module.check_mode:
        modprobe = module.get_bin_path("modprobe", required=True)
        for name in list(to_load):
            rc, out, err = module.run_command([modprobe, name])
            if rc == 0:
                continue
            why = (err or out).strip() or "exit %d" % rc
            if name == "nvidia_peermem" and p["nvidia_peermem"] == "auto":
                module.warn(PEERMEM_UNUSABLE % why)
                to_load.remove(name)
                modules.remove(name)
                continue
            module.fail_json(msg="modprobe %s: %s" % (name, why), loaded=to_load[:to_load.index(name)])

    files = wanted_files(p["modules_load_file"] if modules else "", boot_modules(modules, builtin),
                         p["limits_file"], p["systemd_dropin"])
    try:
        changes, diffs = plan_files(files, [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
    if changes and not module.check_mode:
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            # The modules loaded stay loaded (unloading could pull them from under a running job):
            # said as made, with what is not persisted.
            module.fail_json(msg="cannot write %s: %s; %s" % (
                ", ".join(c[1]["path"] for c in changes), getattr(exc, "strerror", None) or exc,
                ("loaded now, not persisted: %s" % ", ".join(to_load)) if to_load else "nothing was changed"),
                changed=bool(to_load), loaded=to_load)
    result = dict(changed=bool(to_load or changes), loaded=to_load, builtin=builtin,
                  written=[c[1]["path"] for c in changes], missing_packages=missing_pkgs, os_family=family,
                  daemon_reexec_required=False)
    if p["systemd_dropin"] and memlock_pending(manager_memlock(module)):
        # systemd reads its manager settings at start: the services' memlock changes only with
        # `systemctl daemon-reexec` or a reboot; never re-executed here.
        result["daemon_reexec_required"] = True
        module.warn("systemd's services keep their memlock limit until `systemctl daemon-reexec` or a reboot "
                    "(%s sets DefaultLimitMEMLOCK=infinity); neither was done" % p["systemd_dropin"])
        if not module.check_mode:
            try:
                result["changed"] |= mark_reboot_required(p["reboot_marker"])
            except OSError as exc:
                module.fail_json(msg="%s: %s" % (p["reboot_marker"], exc), **result)
    if getattr(module, "_diff", False):
        result["diff"] = diffs + ([{"before_header": "kernel modules loaded", "after_header": "kernel modules loaded",
                                    "before": "".join(n + "\n" for n in before),
                                    "after": "".join(n + "\n" for n in sorted(before + to_load))}]
                                  if to_load else [])
    module.exit_json(**result)
