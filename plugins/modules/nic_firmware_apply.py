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
version_added: "0.1.0"
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
  - Refuses C(PCI_WR_ORDERING=force_relax), before anything is read or set, unless
    I(allow_forced_write_reordering), because it lets the NIC reorder every PCIe write, which NCCL's
    maintainers trace to "collective mismatch" and completion errors (NVIDIA/nccl#531 and 615);
    C(per_mkey), the default, lets NCCL use relaxed ordering where it is safe.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Queries only; nothing is set.
  diff_mode:
    support: full
    details: Each C(BDF PARAM) with its Next Boot and wanted value.
  platform:
    platforms: posix
requirements:
  - C(mlxconfig) (NVIDIA MFT) or C(mstconfig) (mstflint) on the node, and a ConnectX NIC.
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
  allow_forced_write_reordering:
    description:
      - Allow C(PCI_WR_ORDERING=force_relax), knowing that the NIC then reorders every PCIe write
        (NVIDIA/nccl#531 and 615, deepseek-ai/DeepEP#40).
    type: bool
    default: false
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: RoCE congestion control on priority 3 and per-key PCI write ordering, set for the next boot
  rocetune.fabric.nic_firmware_apply:
    interfaces: [ens1f0np0, ens2f0np0]
    settings:
      ROCE_CC_PRIO_MASK_P1: 8
      CNP_DSCP_P1: 48
      CNP_802P_PRIO_P1: 6
      PCI_WR_ORDERING: per_mkey
"""

RETURN = r"""
devices:
  description: Per device (first function) C(named_by), C(changes) (param to C(next_boot), C(wanted)), C(pending_reset).
  type: dict
  returned: always
  sample: {"0000:3b:00.0": {"named_by": [ens1f0np0], "changes": {"CNP_DSCP_P1": {"next_boot": "0", "wanted": "48"}},
           "pending_reset": [CNP_DSCP_P1]}}
changes:
  description: One line per parameter set (or that would be), C(BDF PARAM) with its next-boot and wanted value.
  type: list
  elements: str
  returned: when a device was read
  sample: ["0000:3b:00.0 CNP_DSCP_P1: 0 -> 48"]
reboot_required:
  description: True when some device's Next Boot values differ from Current (a firmware reset or reboot applies them).
  type: bool
  returned: always
  sample: true
tool:
  description: The tool that read and set the parameters.
  type: str
  returned: unless pending
  sample: mstconfig
missing_packages:
  description: Packages of I(packages) that are not installed.
  type: list
  elements: str
  returned: always
  sample: [mstflint]
pending:
  description: True when no tool was installed and packages were missing; nothing was done.
  type: bool
  returned: always
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.nic_firmware_apply_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
