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
short_description: Persist sysctls in a sysctl.d file and apply them, skipping keys absent or read-only here
description:
  - Checks every key and value first (a sysctl name, a one-line value); a bad one fails the
    call, naming it, before anything is changed.
  - Reads each key under C(/proc/sys), writes the ones that differ, and reads them back; a
    value the kernel refuses or clamps restores the ones already written and fails.
  - Then writes I(file) (sorted keys, atomically, only when it differs; with a diff), with the
    keys this node has and can set; an absent key is never persisted.
  - Keys that are absent or read-only (network namespaces, containers) are returned in
    C(unsupported) and named in a warning, or fail the host, as I(on_unsupported) says.
  - Supports check mode.
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
    description: C(warn), C(ignore) or C(fail) for keys that are absent or read-only.
    type: str
    choices: [warn, ignore, fail]
    default: warn
  proc_sys:
    description: Where the sysctl tree is (tests point it elsewhere).
    type: path
    default: /proc/sys
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Persist and apply the network buffers of a GPU node
  rocetune.fabric.host_tuning_sysctl:
    sysctls:
      net.core.rmem_max: 268435456
      net.core.wmem_max: 268435456
      net.ipv4.tcp_mtu_probing: 1
    file: /etc/sysctl.d/90-rocetune.conf
    on_unsupported: warn
"""

RETURN = r"""
sysctls:
  description: One entry per key, with C(key), C(want), C(have) (before) and C(state).
  type: list
  returned: always
written:
  description: The file written (or that would be, in check mode), else nothing.
  type: list
  returned: always
unsupported:
  description: Keys that are absent or read-only here.
  type: list
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.host_tuning_sysctl_state import (
    CHANGED,
    apply,
    file_content,
    invalid_entries,
    plan,
    unsupported_message,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysctls=dict(type="dict", required=True),
            file=dict(type="path", default=""),
            apply=dict(type="bool", default=True),
            on_unsupported=dict(type="str", choices=["warn", "ignore", "fail"], default="warn"),
            proc_sys=dict(type="path", default="/proc/sys"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = invalid_entries(p["sysctls"])
    if problems:
        module.fail_json(msg="host_tuning_sysctls: " + "; ".join(problems) + "; nothing was changed")
    # Read everything first; apply live, and persist only what this node has and took.
    items = plan(p["proc_sys"], p["sysctls"])
    unsupported = [i["key"] for i in items if i["state"] not in (CHANGED, "unchanged")]
    message = unsupported_message(items)
    files = []
    if p["file"]:
        files = [{"path": p["file"], "content": file_content(p["sysctls"], items), "mode": "0644"}]
    try:
        changes, diffs = plan_files(files, [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
    live = [i for i in items if p["apply"]]
    changed = bool(changes) or any(i["state"] == CHANGED for i in live)
    result = dict(changed=changed, sysctls=live, unsupported=unsupported,
                  written=[c[1]["path"] for c in changes], diff=diffs)
    if message and p["on_unsupported"] == "fail":
        result.update(changed=False, written=[])
        module.fail_json(msg=message + " (host_tuning_on_unsupported: fail); nothing was changed", **result)
    if not module.check_mode:
        try:
            apply(p["proc_sys"], live)
        except ValueError as exc:
            result.update(changed=False, written=[])
            module.fail_json(msg=str(exc) + "; the values written were restored and nothing was persisted",
                             **result)
        if changes:
            apply_changes(changes)
    if message and p["on_unsupported"] == "warn":
        module.warn(message)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
