#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Save every node's Features on the controller in one call, with check mode and diff.
Documentation only: the action plugin of the same name does the work, on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_env_features
short_description: Write each node's Features document as DIR/<host>.json, all in one call
version_added: "0.1.0"
description:
  - Runs once on the controller for the whole play (C(run_once)) instead of one delegated copy
    per node, in the controller's own process (an action plugin; nothing runs on a node); writes
    C(<host>.json) for every host given, each only when its content differs, atomically.
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
  - None; it runs on the controller.
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
"""

RETURN = r"""
files:
  description: Each file written (or that would be), with C(path) and C(changed).
  type: list
  elements: dict
  returned: always
  sample: [{"path": "/home/ops/.local/share/rocetune/features/gpu-h100-001.json", "changed": true}]
"""
