#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Check that the installed DOCA/MLNX OFED fits the running kernel."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_core_ofed_check
short_description: Fail clearly when the installed OFED does not match the running kernel
version_added: "0.1.0"
description:
  - Reads C(ofed_info -s), C(uname -r) and C(modinfo) of the NIC driver, and fails naming the
    kernel and the module file when the driver that would load is not OFED's build for the
    running kernel; a build for another kernel linked into the running kernel's
    C(weak-updates/) (RHEL's kABI) passes.
  - Compares the loaded driver (C(/sys/module/MODULE/srcversion)) with the installed one and
    returns C(driver_restart_required), with a warning, when they differ (OFED installed while
    the inbox driver ran).
  - Read-only; runs in check mode.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: It only reads.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - NVIDIA DOCA/MLNX OFED (C(ofed_info)) and C(modinfo) on the node.
options:
  tarball:
    description:
      - An MLNX_OFED tarball name to check against this node's distribution, release
        (C(/etc/os-release)) and architecture before it is copied; the kernel is not checked then.
    type: str
    default: ""
  module:
    description: The NIC driver module OFED provides (mlx5_ib).
    type: str
    default: mlx5_ib
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Refuse an OFED tarball built for another distribution or kernel
  rocetune.fabric.rdma_core_ofed_check:
    tarball: MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz

- name: Fail when the installed OFED's mlx5_ib does not match the running kernel
  rocetune.fabric.rdma_core_ofed_check:
    module: mlx5_ib
"""

RETURN = r"""
ofed_version:
  description: The version C(ofed_info -s) reports, or null when OFED is not installed.
  type: str
  returned: always
  sample: MLNX_OFED_LINUX-24.10-1.1.4.0
summary:
  description: What matched.
  type: str
  returned: success
  sample: mlx5_ib of MLNX_OFED_LINUX-24.10-1.1.4.0 built for 6.8.0-45-generic, the running kernel
driver_restart_required:
  description: The loaded driver is not the installed one (OFED installed after the inbox driver loaded).
  type: bool
  returned: when OFED is installed
  sample: false
driver_restart:
  description: What to do about it, or null.
  type: str
  returned: when OFED is installed
  sample: null
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import read_text
from ansible_collections.rocetune.fabric.plugins.module_utils.rdma_core_ofed import (
    OfedMismatch, check_kernel, check_tarball, driver_restart, parse_ofed_info, parse_os_release
)


def main():
    module = AnsibleModule(argument_spec=dict(tarball=dict(type="str", default=""),
                                              module=dict(type="str", default="mlx5_ib")),
                           supports_check_mode=True)
    if module.params["tarball"]:
        with open("/etc/os-release") as fh:
            distro, version = parse_os_release(fh.read())
        try:
            fit = check_tarball(module.params["tarball"], distro, version, os.uname()[4])
        except OfedMismatch as exc:
            module.fail_json(msg=str(exc), ofed_version=None)
        module.exit_json(changed=False, ofed_version=fit["version"], summary="%s fits %s %s %s" % (
            module.params["tarball"], distro, version, os.uname()[4]))
    ofed_info = module.get_bin_path("ofed_info")
    if not ofed_info:
        module.exit_json(changed=False, ofed_version=None, summary="OFED is not installed")
    rc, out, err = module.run_command([ofed_info, "-s"])
    version = parse_ofed_info(out) if rc == 0 else None
    if not version:
        module.fail_json(msg="ofed_info -s gave no OFED version: %s" % (err or out).strip(), ofed_version=None)
    running = os.uname()[2]
    rc, out, err = module.run_command([module.get_bin_path("modinfo", required=True), module.params["module"]])
    modinfo = out if rc == 0 else ""
    try:
        summary = check_kernel(module.params["module"], running, modinfo, version)
    except OfedMismatch as exc:
        module.fail_json(msg=str(exc), ofed_version=version)
    restart = driver_restart(module.params["module"], modinfo,
                             read_text("/sys/module/%s/srcversion" % module.params["module"]))
    if restart:
        module.warn(restart)
    module.exit_json(changed=False, ofed_version=version, summary=summary,
                     driver_restart_required=bool(restart), driver_restart=restart)


if __name__ == "__main__":
    main()
