#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rdma_core on a node in one call: kernel modules loaded now and at boot, unlimited memlock,
and the packages that are missing (installed by the next task, only when there are any)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_core_node
short_description: Load and persist the RDMA kernel modules, set memlock, report missing packages
description:
  - Loads the modules that C(/sys/module) lacks with C(modprobe) (never unloads or reloads) and
    writes the modules-load.d file that loads them at boot.
  - Modules built into the kernel (a C(/sys/module) directory without C(initstate), or a line of
    C(modules.builtin)) are present; they are never loaded and never written to modules-load.d.
  - Writes the limits.d file (logins) and the systemd manager drop-in (services) for an
    unlimited memlock.
  - Reads which of the wanted packages are not installed (dpkg or rpm) and returns them in
    C(missing_packages), with the OS family that chose the list.
  - Files are written only when they differ, atomically. Supports check mode and diff.
options:
  modules:
    description: Kernel modules every RDMA node needs (empty manages no modules).
    type: list
    elements: str
    default: []
  nic_driver:
    description: The NIC's RDMA driver module (empty for none).
    type: str
    default: ""
  nvidia_peermem:
    description:
      - C(true), C(false), or C(auto), which loads and persists it where it is installed for the
        running kernel, and where it does not load (no peer-memory API in the kernel's RDMA
        stack) warns and leaves it out, pointing at DMA-BUF.
    type: str
    choices: [auto, "true", "false"]
    default: auto
  modules_load_file:
    description: The modules-load.d file (empty writes none).
    type: path
    default: ""
  limits_file:
    description: The limits.d file for an unlimited memlock (empty writes none).
    type: path
    default: ""
  systemd_dropin:
    description: The systemd manager drop-in for an unlimited memlock (empty writes none).
    type: path
    default: ""
  packages:
    description: Packages to check, per OS family (C(Debian), C(RedHat)); a list applies to any.
    type: raw
    default: []
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Load and persist the RDMA modules of a ConnectX node, with memlock unlimited
  rocetune.fabric.rdma_core_node:
    modules: [ib_core, ib_uverbs, rdma_ucm, mlx5_ib]
    nic_driver: mlx5_core
    nvidia_peermem: auto
    modules_load_file: /etc/modules-load.d/rocetune-rdma.conf
    limits_file: /etc/security/limits.d/90-rocetune-memlock.conf
    systemd_dropin: /etc/systemd/system.conf.d/90-rocetune-memlock.conf
"""

RETURN = r"""
loaded:
  description: The modules this run loaded (or would load, in check mode).
  type: list
  returned: always
builtin:
  description: The wanted modules that are built into the running kernel (nothing to load).
  type: list
  returned: always
written:
  description: The files written (or that would be, in check mode).
  type: list
  returned: always
missing_packages:
  description: Wanted packages that are not installed.
  type: list
  returned: always
os_family:
  description: The OS family as Ansible's facts name it.
  type: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rdma_core_node_state import (
    PEERMEM_UNUSABLE,
    boot_modules,
    builtin_modules,
    missing_modules,
    wanted_files,
    wanted_modules,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import missing_packages


def peermem_installed(module):
    """Whether nvidia_peermem is installed for the running kernel (modinfo finds its file)."""
    modinfo = module.get_bin_path("modinfo")
    if not modinfo:
        return False
    rc, dummy, dummy = module.run_command([modinfo, "-n", "nvidia_peermem"])
    return rc == 0


def main():
    module = AnsibleModule(
        argument_spec=dict(
            modules=dict(type="list", elements="str", default=[]),
            nic_driver=dict(type="str", default=""),
            nvidia_peermem=dict(type="str", choices=["auto", "true", "false"], default="auto"),
            modules_load_file=dict(type="path", default=""),
            limits_file=dict(type="path", default=""),
            systemd_dropin=dict(type="path", default=""),
            packages=dict(type="raw", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    family, missing_pkgs = missing_packages(module, p["packages"], "rdma_core_packages")

    installed = p["nvidia_peermem"] == "auto" and bool(p["modules"]) and peermem_installed(module)
    modules = wanted_modules(p["modules"], p["nic_driver"], p["nvidia_peermem"], installed) if p["modules"] else []
    builtin = builtin_modules(modules)
    to_load = missing_modules(modules, builtin=builtin)
    # The files' targets are checked before any module is loaded: a refused target changes nothing.
    try:
        plan_files(wanted_files(p["modules_load_file"] if modules else "", boot_modules(modules, builtin),
                                p["limits_file"], p["systemd_dropin"]), [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
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
        apply_changes(changes)
    module.exit_json(changed=bool(to_load or changes), loaded=to_load, builtin=builtin,
                     written=[c[1]["path"] for c in changes],
                     missing_packages=missing_pkgs, os_family=family, diff=diffs)


if __name__ == "__main__":
    main()
