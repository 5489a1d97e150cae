#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Persist sysctls in one sysctl.d file and apply them now, skipping keys that are absent or
read-only on this node: the whole role in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_tuning_sysctl
short_description: Persist sysctls in a sysctl.d file and apply them, checked before anything changes
version_added: "0.1.0"
description:
  - Checks every key and value first (a sysctl name, a one-line value); a bad one fails the
    call, naming it, before anything is changed.
  - Checks the boot order (sysctl.d(5)) too; a file read after I(file) at boot that sets one of
    the keys to another value (C(99-sysctl.conf), C(/etc/sysctl.conf), which C(sysctl --system)
    reads last) fails the call, naming the file, line and key, before anything changes.
  - Keys that are absent or read-only here (network namespaces, containers) are returned in
    C(unsupported); I(on_unsupported) says whether they fail the call before anything changes,
    are named in a warning, or only returned. An absent key is named with a close name beside it
    where there is one (a misspelling).
  - Then writes the values that differ under C(/proc/sys) and reads them back; a value the
    kernel refuses or clamps restores the ones already written and fails. A key the kernel
    refuses at write time is never persisted, and with I(on_unsupported=fail) it fails the call
    after the values written were restored.
  - Then writes I(file) (sorted keys, atomically, only when it differs) with the keys this node
    has and took; a file that cannot be written restores the live values and fails.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The file, and the running kernel's values that change.
  platform:
    platforms: posix
requirements:
  - Linux (C(/proc/sys)) and Python 3.8 or newer on the node.
options:
  sysctls:
    description: Key to value, e.g. C(net.ipv4.tcp_mtu_probing) to C(1).
    type: dict
    required: true
  file:
    description: The sysctl.d file that persists the values; empty writes none.
    type: path
    default: ""
  apply:
    description: Apply the values now as well (false, only at the next boot).
    type: bool
    default: true
  on_unsupported:
    description: C(fail), C(warn) or C(ignore) for keys that are absent or read-only.
    type: str
    choices: [warn, ignore, fail]
    default: fail
  proc_sys:
    description: Where the sysctl tree is (tests point it elsewhere).
    type: path
    default: /proc/sys
  config_root:
    description: The root under which C(/etc/sysctl.d) and the other sysctl.d directories are read
      for the boot order check (tests point it elsewhere).
    type: path
    default: /
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Persist and apply the network buffers of a GPU node
  rocetune.fabric.host_tuning_sysctl:
    sysctls:
      net.core.rmem_max: 268435456
      net.core.wmem_max: 268435456
      net.ipv4.tcp_mtu_probing: 1
    file: /etc/sysctl.d/99-zz-rocetune-host-tuning.conf
    on_unsupported: fail
"""

RETURN = r"""
sysctls:
  description: One entry per key (empty when I(apply) is false), with C(key), C(want), C(have)
    (before) and C(state) (C(changed), C(unchanged), C(absent), C(read-only)).
  type: list
  elements: dict
  returned: always
  sample: [{"key": "net.ipv4.tcp_mtu_probing", "want": "1", "have": "0", "state": "changed"}]
written:
  description: The file written (or that would be, in check mode), else nothing.
  type: list
  elements: str
  returned: always
  sample: [/etc/sysctl.d/99-zz-rocetune-host-tuning.conf]
unsupported:
  description: Keys that are absent or read-only here.
  type: list
  elements: str
  returned: always
  sample: [net.core.netdev_max_backlog]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.host_tuning_sysctl_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
