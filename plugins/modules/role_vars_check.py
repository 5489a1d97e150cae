#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Documentation of the controller-side action role_vars_check (no code runs on a node)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: role_vars_check
short_description: Fail on variables with a role's prefix that are not options of the role
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin); nothing runs on the node.
  - Reads the role's C(meta/argument_specs.yml) and names every variable that starts with
    C(<role>_) but is not one of its options, from this host's view (play, role and extra
    vars) and every play host's inventory variables. Ansible ignores such a variable
    silently, leaving the default in force.
  - Use once per play with C(run_once) and C(any_errors_fatal).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: all
options:
  role:
    description: The role's name, which is also its variables' prefix.
    type: str
    required: true
  role_path:
    description: The role's directory (C(role_path) inside the role).
    type: path
    required: true
  outputs:
    description: Facts the role sets itself (its results, with its prefix), which are not inputs.
    type: list
    elements: str
    default: []
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Fail on unknown roce_net_* variables
  rocetune.fabric.role_vars_check:
    role: roce_net
    role_path: "{{ role_path }}"
  run_once: true
  any_errors_fatal: true
"""

RETURN = r"""
unknown:
  description: The variables that are not options of the role, sorted.
  type: list
  elements: str
  returned: always
  sample: [roce_net_mtus]
options:
  description: The role's options.
  type: list
  elements: str
  returned: always
  sample: [roce_net_interfaces, roce_net_mtu]
"""
