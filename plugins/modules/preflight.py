#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Every role's module, in check mode, in one call per node: the site's preflight."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: preflight
short_description: Check every role's input and this node's state in one call, before anything changes
version_added: "0.1.0"
description:
  - Runs the module of each role in I(checks) in check mode, in one process on the node, with
    the very code the role runs later (each module's body; rocetune_preflight in module_utils),
    and returns, per role, whether it failed (with the module's own message), whether it will
    change something on this node (C(change)), whether it runs there at all (C(run), to change
    or to verify) and its warnings. Nothing changes on the node.
  - The action plugin of the same name first checks, on the controller, each role's variables
    against the role's C(meta/argument_specs.yml), its misspelt C(<role>_*) names, and the QoS
    plan given from the controller (loaded there with PyYAML); then it makes this one call, and
    checks a node's QoS plan file that the node could not read. The task fails with every error
    of every role, named by role.
  - C(rocetune_env) is run ahead only when no role before it has something to do (the agent plans
    from the node as those roles leave it); otherwise it is reported as C(deferred).
  - The site playbook runs this on all hosts, with C(any_errors_fatal), before its first change,
    and runs a role on a node only where its C(run) is true.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Role variables, variable names and a controller-side QoS plan are checked on the controller.
  check_mode:
    support: full
    details: It never changes anything; check mode changes nothing about it.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - Python 3.8 or newer on the node.
options:
  checks:
    description:
      - The roles to check, in the order the site runs them, each with C(role) (its name),
        C(module) (the module it runs on the node), C(args) (that module's arguments, as the
        role passes them) and C(outputs) (the facts the role sets itself, which are not
        misspelt variables).
    type: list
    elements: dict
    required: true
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Check host_tuning's input and this node's sysctls before anything changes
  rocetune.fabric.preflight:
    checks:
      - role: host_tuning
        module: host_tuning_sysctl
        args:
          sysctls: {net.ipv4.tcp_mtu_probing: 1}
          file: /etc/sysctl.d/99-zz-rocetune-host-tuning.conf
  register: preflight
"""

RETURN = r"""
roles:
  description: Per role C(failed), C(msg), C(run) (it has something to do here), C(warnings),
    C(result) (its module's check-mode result, without the large parts) and C(deferred).
  type: dict
  returned: always
  sample: {"host_tuning": {"failed": false, "msg": "", "run": true, "warnings": [],
           "result": {"changed": true, "written": ["/etc/sysctl.d/99-zz-rocetune-host-tuning.conf"]}}}
run:
  description: The roles that have something to do on this node (to change or to verify), in order.
  type: list
  elements: str
  returned: always
  sample: [host_tuning, roce_net]
change:
  description:
    - The roles that will change something on this node, in order (a subset of C(run)); a role
      that runs only to verify (C(always) in its preflight) is not among them. A rollout drains
      a node only when this is not empty.
  type: list
  elements: str
  returned: always
  sample: [host_tuning]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_preflight import check_all


def main():
    module = AnsibleModule(argument_spec=dict(checks=dict(type="list", elements="dict", required=True)),
                           supports_check_mode=True)
    answers = check_all(module, module.params["checks"])
    failed = ["%s: %s" % (role, a["msg"]) for role, a in answers.items() if a["failed"]]
    result = dict(changed=False, roles=answers, run=[role for role, a in answers.items() if a["run"]],
                  change=[role for role, a in answers.items() if a["change"]])
    if failed:
        module.fail_json(msg="; ".join(failed) + "; nothing was changed anywhere", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
