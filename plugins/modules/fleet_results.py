#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Write every node's doctor result as the fleet directory's HOST.json, in one controller call."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_results
short_description: Write each node's rocetune doctor result as DIR/<host>.json for rocetune fleet report
version_added: "0.1.0"
description:
  - Runs once on the controller for the whole play (C(run_once), C(delegate_to) localhost); writes
    C(<host>.json) in the format C(rocetune fleet report) reads (schema C(rocetune.fleet-host/1)),
    each atomically and only when its content differs.
  - A host whose command did not run (unreachable, failed before it) or did not answer with a
    JSON result gets a file whose C(error) says why, so the report names it.
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
  results:
    description:
      - Host name to the registered result of C(rocetune --json doctor) on it (C(rc), C(stdout),
        C(stderr)); for an unreachable host (the task has C(ignore_unreachable)), the result with
        C(unreachable) and ssh's C(msg); null for a host where it did not run.
    type: dict
    required: true
  gathered_at:
    description: When the results were gathered (ISO 8601), written into every file.
    type: str
    required: true
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Keep every node's doctor result on the controller
  rocetune.fabric.fleet_results:
    dir: "{{ playbook_dir }}/fleet"
    results: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars)
                 | map(attribute='doctor', default=none) | list)) }}"
    gathered_at: "{{ now(utc=true).isoformat() }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
written:
  description: The files written (or that would be).
  type: list
  elements: str
  returned: always
  sample: [/home/ops/.local/share/rocetune/fleet/gpu-h100-001.json]
failed_hosts:
  description: Hosts whose file records an error.
  type: list
  elements: str
  returned: always
  sample: [gpu-h100-007]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_fleet_doc import (
    HOST_NAME,
    dumps,
    from_registered,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(dir=dict(type="path", required=True),
                           results=dict(type="dict", required=True),
                           gathered_at=dict(type="str", required=True)),
        supports_check_mode=True,
    )
    p = module.params
    bad = sorted(h for h in p["results"] if not HOST_NAME.match(h))
    if bad:
        module.fail_json(msg="results: host names that cannot be file names: %s" % ", ".join(bad))
    files, failed = [], []
    for host in sorted(p["results"]):
        doc = from_registered(host, p["results"][host], p["gathered_at"])
        if doc["error"]:
            failed.append(host)
        files.append({"path": os.path.join(p["dir"], host + ".json"), "mode": "0644",
                      "content": dumps(doc)})
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
    extra = {}
    if module._diff:
        extra["diff"] = diffs
    module.exit_json(changed=bool(changes), written=[c[1]["path"] for c in changes],
                     failed_hosts=failed, **extra)


if __name__ == "__main__":
    main()
