#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Install the boot-time QoS re-apply (script, settings, unit, enable link) in one call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_qos_boot
short_description: Install the QoS re-apply script, its settings and its systemd unit, enabled
description:
  - Writes the script, the settings JSON and the unit file (only those that differ, each
    atomically) and the C(multi-user.target.wants) link C(systemctl enable) would make, so it
    works before systemd runs. Supports check mode and diff.
options:
  script:
    description: Path and content of the script (C(path), C(content)).
    type: dict
    required: true
  settings:
    description: Path (C(path)) and the settings (C(data)), written as sorted JSON.
    type: dict
    required: true
  unit:
    description: Path (C(path)) and content (C(content)) of the unit file.
    type: dict
    required: true
author: rocetune contributors
"""

RETURN = r"""
written:
  description: The paths written (or that would be, in check mode).
  type: list
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.roce_qos_files import apply_changes, plan_files


def main():
    module = AnsibleModule(argument_spec=dict(script=dict(type="dict", required=True),
                                              settings=dict(type="dict", required=True),
                                              unit=dict(type="dict", required=True)),
                           supports_check_mode=True)
    p = module.params
    unit_path = p["unit"]["path"]
    files = [
        {"path": p["script"]["path"], "content": p["script"]["content"], "mode": "0644"},
        {"path": p["settings"]["path"], "content": json.dumps(p["settings"]["data"], indent=2, sort_keys=True) + "\n",
         "mode": "0644"},
        {"path": unit_path, "content": p["unit"]["content"], "mode": "0644"},
    ]
    links = [{"path": os.path.join(os.path.dirname(unit_path), "multi-user.target.wants", os.path.basename(unit_path)),
              "src": unit_path}]
    changes, diffs = plan_files(files, links)
    if changes and not module.check_mode:
        apply_changes(changes)
    module.exit_json(changed=bool(changes), written=[c[1]["path"] for c in changes],
                     unit_changed=any(c[1]["path"] == unit_path for c in changes), diff=diffs)


if __name__ == "__main__":
    main()
