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
version_added: "0.1.0"
description:
  - Loads the modules that C(/sys/module) lacks with C(modprobe) (never unloads or reloads) and
    writes the modules-load.d file that loads them at boot.
  - Modules built into the kernel (a C(/sys/module) directory without C(initstate), or a line of
    C(modules.builtin)) are present; they are never loaded and never written to modules-load.d.
  - Writes the limits.d file (logins) and the systemd manager drop-in (services) for an
    unlimited memlock.
  - Reads which of the wanted packages are not installed (dpkg or rpm) and returns them in
    C(missing_packages), with the OS family that chose the list.
  - Checks the module names and that every module to load exists for the running kernel
    (C(modinfo)) before the first C(modprobe); a misspelt name loads nothing and writes nothing.
  - Files are written only when they differ, atomically.
  - Where systemd runs with another C(DefaultLimitMEMLOCK) than the drop-in's, returns
    C(daemon_reexec_required), warns and writes I(reboot_marker); it never re-executes systemd.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The files, and the kernel modules loaded before and after.
  platform:
    platforms: posix
requirements:
  - Linux, C(modprobe) and C(modinfo) (kmod), and C(dpkg-query) or C(rpm) to read the packages.
options:
  modules:
    description:
      - Kernel modules every RDMA node needs (empty manages no modules), each 1 to 55 of
        C(A-Z a-z 0-9 _ -); anything else fails the call before anything changes.
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
  reboot_marker:
    description: The file written when systemd must be re-executed (or the node rebooted) for the memlock limit.
    type: path
    default: /run/reboot-required
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
  elements: str
  returned: always
  sample: [ib_uverbs, rdma_ucm, mlx5_ib]
builtin:
  description: The wanted modules that are built into the running kernel (nothing to load).
  type: list
  elements: str
  returned: always
  sample: []
written:
  description: The files written (or that would be, in check mode).
  type: list
  elements: str
  returned: always
  sample: [/etc/modules-load.d/rocetune-rdma.conf]
missing_packages:
  description: Wanted packages that are not installed.
  type: list
  elements: str
  returned: always
  sample: [perftest]
os_family:
  description: The OS family as Ansible's facts name it.
  type: str
  returned: always
  sample: Debian
daemon_reexec_required:
  description: systemd's manager still runs with another memlock limit than the drop-in's (C(systemctl
    daemon-reexec) or a reboot applies it; C(/run/reboot-required) was written).
  type: bool
  returned: always
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rdma_core_node_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
