#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""roce_qos on a node in one call: the plan file and the boot unit written, the fabric NICs'
QoS brought to what the plan says with only the commands needed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_qos_apply
short_description: RoCE QoS (trust, DSCP->priority, PFC and its buffers, ETS, ECN, pause, RDMA-CM ToS) from the QoS plan
version_added: "0.1.0"
description:
  - Reads rocetune's QoS plan, reads each NIC's state (C(dcb -N pfc/app/ets show) or
    C(mlnx_qos -i), C(ethtool -a), the ECN sysfs files, RDMA-CM configfs) and runs only the
    commands that change something.
  - Checks the interface names, I(ets) and the plan first, before it looks for the tools, so check
    mode on a node without them still refuses a broken plan. The plan about to be installed,
    I(plan_content), is loaded with PyYAML on the controller by the module's action plugin; a
    node file the node cannot read yet (no PyYAML) is checked on the controller as well. Every
    field that cannot be used is named, with the plan's path and the known keys.
  - A NIC without DCB (veth, virtio-net) is reported as not supported and skipped, or fails
    the host when I(required).
  - The plan's C(buffer) section (cable length, priority to buffer map, buffer sizes) is read
    from C(dcb -j buffer show) and the PFC C(delay), or from C(mlnx_qos -i), and set with C(dcb
    pfc set ... delay), C(dcb buffer set) or C(mlnx_qos --cable_len/--buffer_size/--prio2buffer).
    What the NIC cannot take (no buffer settings, a cable length on a driver other than
    mlx5_core) is a warning, or fails the host when I(required).
  - Reads and checks everything first (the plan, every interface, the tools, each NIC's state);
    any error fails the call, naming it, before anything changes.
  - Never changes an interface that carries the Ansible connection unless I(allow_link_flap).
  - Writes the plan file (from I(plan_content)) and the boot-time re-apply unit (I(boot)) after
    the NICs took the plan, only what differs, atomically, then reloads systemd when the unit
    changed.
  - When some of I(packages) are missing it stops there (after checking the plan), changing
    nothing, and returns them in C(missing_packages) with C(pending) true; the role installs them
    and calls the module again.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: The plan given in I(plan_content) is loaded and checked on the controller.
  check_mode:
    support: full
    details: Returns the commands it would run.
  diff_mode:
    support: full
    details: The NICs' QoS (C(IF pfc), C(IF dscp 26 -> priority), ETS, pause, ECN and RDMA-CM values) as
      they are and as they become, the lossless buffers, and the files.
  platform:
    platforms: posix
requirements:
  - PyYAML on the controller (ansible-core's own) and, to configure the NICs, on the node (python3-yaml).
  - iproute2's C(dcb) or NVIDIA's C(mlnx_qos), and C(ethtool), on the node.
options:
  plan_content:
    description: The QoS plan to install at I(plan_file); empty leaves the file as it is.
    type: str
    default: ""
  plan_src:
    description: Where I(plan_content) came from on the controller; it names the plan in messages.
    type: str
    default: ""
  plan_doc:
    description:
      - I(plan_content) as loaded on the controller; the module's action plugin sets it, do not set it.
    type: raw
  boot:
    description:
      - The re-apply unit, C(script) and C(unit) (each C(path), C(content)) and C(settings)
        (C(path), C(data), written as sorted JSON); enabled with the C(multi-user.target.wants)
        link C(systemctl enable) would make. C(lib_dir) is where the script imports from; the
        module writes there the sources of the libraries it runs itself (the QoS state, plan,
        buffer and tool readers). With C(state) C(absent) (and the paths alone), the unit, its
        link, script, libraries and settings are removed. Omitted, nothing is done.
    type: dict
  packages:
    description: Tools the module needs, per OS family (C(Debian), C(RedHat)) or one list.
    type: raw
    default: []
  interfaces:
    description:
      - The fabric interfaces, each a netdev name (1 to 15 of C(A-Z a-z 0-9 _ . -)); any other
        fails the call before anything changes.
    type: list
    elements: str
    required: true
  plan_file:
    description: The QoS plan (absent means the built-in defaults of docs/qos.md).
    type: path
    required: true
  backend:
    description: C(dcb), C(mlnx_qos) or C(auto) (mlnx_qos where it is installed and the driver is mlx5_core).
    type: str
    choices: [auto, dcb, mlnx_qos]
    default: auto
  ets:
    description:
      - ETS as C(prio_tc) (the TC of each priority, 0..7), C(tc_tsa) (C(strict), C(ets) or
        C(vendor) per TC) and C(tc_bw) (percent per TC; the ETS TCs' shares add up to 100), each a
        list of 8; empty leaves ETS alone. Anything else fails the call before anything changes.
    type: dict
    default: {}
  dcqcn:
    description: Enable ECN (DCQCN) notification and reaction points on the RoCE priority.
    type: bool
    default: true
  pause_off:
    description: Turn 802.3x global pause off (PFC and global pause exclude each other).
    type: bool
    default: true
  rdma_cm:
    description: Make RoCE v2 and the plan's ToS the RDMA-CM defaults of the interfaces' RDMA ports.
    type: bool
    default: true
  required:
    description: Fail when an interface has no DCB, or cannot take the plan's C(buffer) settings,
      instead of skipping them with a warning.
    type: bool
    default: false
  allow_link_flap:
    description: Allow changing the QoS of an interface that carries the Ansible connection.
    type: bool
    default: false
  connection_addresses:
    description: Addresses Ansible connects to this node by (names are resolved on the node).
    type: list
    elements: str
    default: []
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: DSCP trust, PFC on priority 3 and ECN on the fabric NICs from the QoS plan
  rocetune.fabric.roce_qos_apply:
    interfaces: [ens1f0np0, ens2f0np0]
    plan_file: /etc/rocetune/qos.yml
    plan_content: "{{ lookup('ansible.builtin.file', 'files/qos.yml') }}"
    plan_src: files/qos.yml
    backend: auto
    ets: {prio_tc: [0, 0, 0, 1, 0, 0, 0, 0], tc_tsa: [ets, ets, strict, strict, strict, strict, strict, strict],
          tc_bw: [50, 50, 0, 0, 0, 0, 0, 0]}
    connection_addresses: ["{{ ansible_host | default(inventory_hostname) }}"]
"""

RETURN = r"""
interfaces:
  description: Per interface C(backend), C(driver), C(commands), C(writes), C(buffer_not_supported)
    (the plan's buffer settings the NIC cannot take), or C(not_supported).
  type: dict
  returned: always
  sample: {"ens1f0np0": {"backend": "dcb", "driver": "mlx5_core",
                         "commands": ["dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off"],
                         "writes": [], "ecn_unexposed": null}}
plan:
  description: The plan the values came from (C(source) names the file or the defaults).
  type: dict
  returned: unless pending
  sample: {"trust": "dscp", "data": {"dscp": 26, "priority": 3}, "cnp": {"dscp": 48, "priority": 6}, "ecn": 2,
           "lossless_priorities": [3], "source": "/etc/rocetune/qos.yml"}
rdma_cm:
  description: The RDMA-CM defaults written (or that would be), C(path = value).
  type: list
  elements: str
  returned: when I(rdma_cm)
  sample: ["/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos = 106"]
written:
  description: The files written (or that would be, in check mode).
  type: list
  elements: str
  returned: always
  sample: [/etc/rocetune/qos.yml]
missing_packages:
  description: Packages of I(packages) that are not installed.
  type: list
  elements: str
  returned: always
  sample: [ethtool]
pending:
  description: True when packages were missing and no QoS was applied.
  type: bool
  returned: always
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_apply_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
