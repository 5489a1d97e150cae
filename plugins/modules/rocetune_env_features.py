#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Save every node's Features on the controller in one call, with check mode and diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_env_features
short_description: Write each node's Features document as DIR/<host>.json, all in one call
version_added: "0.1.0"
description:
  - Runs once on the controller for the whole play (C(run_once), C(delegate_to) localhost)
    instead of one delegated copy per node; writes C(<host>.json) for every host given, each
    only when its content differs, atomically.
  - The JSON is indented by 4 with sorted keys and ends with a newline.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Each file that changes.
  platform:
    platforms: posix
requirements:
  - Runs on the controller (C(delegate_to) localhost).
options:
  dir:
    description: The controller directory for the files (created when missing).
    type: path
    required: true
  features:
    description:
      - Host name to its Features document; hosts whose value is null are skipped (the agent did
        not run there, e.g. in check mode before it was installed).
    type: dict
    required: true
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Keep every node's Features on the controller
  rocetune.fabric.rocetune_env_features:
    dir: "{{ playbook_dir }}/artifacts/features"
    features: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['env', 'features']))) }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
files:
  description: Each file written (or that would be), with C(path) and C(changed).
  type: list
  elements: dict
  returned: always
  sample: [{"path": "/home/ops/.local/share/rocetune/features/gpu-h100-001.json", "changed": true}]
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.@:-]+\Z")


def render(features):
    return json.dumps(features, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def main():
    module = AnsibleModule(
        argument_spec=dict(dir=dict(type="path", required=True),
                           features=dict(type="dict", required=True)),
        supports_check_mode=True,
    )
    directory, hosts = module.params["dir"], module.params["features"]
    bad = sorted(h for h in hosts if not SAFE_NAME.match(h) or h in (".", ".."))
    if bad:
        module.fail_json(msg="host names unfit for a file name: %s" % ", ".join(bad))
    files = [{"path": os.path.join(directory, host + ".json"), "content": render(hosts[host]), "mode": "0644"}
             for host in sorted(hosts) if hosts[host] is not None]
    try:
        changes, diffs = plan_files(files, [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
    if changes and not module.check_mode:
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (", ".join(c[1]["path"] for c in changes),
                                                          getattr(exc, "strerror", None) or exc))
    written = {c[1]["path"] for c in changes}
    results = [{"path": f["path"], "changed": f["path"] in written} for f in files]
    extra = {"diff": diffs} if module._diff else {}
    module.exit_json(changed=bool(diffs), files=results, **extra)


if __name__ == "__main__":
    main()
