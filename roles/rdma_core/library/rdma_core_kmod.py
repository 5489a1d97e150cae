#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Load kernel modules that are not loaded yet (all in one call)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_core_kmod
short_description: modprobe the modules that are not loaded, report each
description:
  - A module counts as loaded when C(/sys/module/NAME) exists (built-in ones too); the others
    are loaded with C(modprobe NAME). Never unloads or reloads. Supports check mode.
options:
  modules:
    description: Module names (dashes and underscores are the same).
    type: list
    elements: str
    required: true
author: rocetune contributors
"""

RETURN = r"""
loaded:
  description: The modules this run loaded (or would load, in check mode).
  type: list
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(modules=dict(type="list", elements="str", required=True)),
                           supports_check_mode=True)
    wanted = [m.replace("-", "_") for m in module.params["modules"]]
    missing = [m for m in wanted if not os.path.isdir("/sys/module/%s" % m)]
    if missing and not module.check_mode:
        modprobe = module.get_bin_path("modprobe", required=True)
        for name in missing:
            rc, out, err = module.run_command([modprobe, name])
            if rc != 0:
                module.fail_json(msg="modprobe %s: %s" % (name, (err or out).strip() or "exit %d" % rc),
                                 loaded=missing[:missing.index(name)])
    module.exit_json(changed=bool(missing), loaded=missing)


if __name__ == "__main__":
    main()
