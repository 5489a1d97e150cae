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
  - With I(apply), the site's converge step - the roles named (those the preflight found to change
    this node) are applied, each module's body run as its role runs it (the task's check and diff
    mode), in order, in one call. The first role that fails stops the roles after it; the
    task fails naming it and the roles already applied. A role whose module waits for packages
    (C(pending), C(missing_packages)) also stops the roles after it, without failing; the site
    runs it and them whole afterwards. Their results come back per role, the
    diffs of all of them as one list.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Role variables, variable names and a controller-side QoS plan are checked on the controller.
  check_mode:
    support: full
    details: Without I(apply) it never changes anything; with I(apply) each role's module runs in check mode.
  diff_mode:
    support: full
    details: With I(apply), each role's module's diff (none without I(apply)).
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
  apply:
    description:
      - Apply the roles in I(checks) instead of checking them (the site's converge step, run after
        the preflight found what will change).
    type: bool
    default: false
  files:
    description:
      - Per role, files the action plugin transferred into Ansible's private temporary directory
        on the node for this call, by the name of the module option they stand for (the agent's
        zip where the node lacks it); each path is given to the role's module as that option.
    type: dict
    default: {}
  files_dir:
    description:
      - The directory the action plugin made for I(files); removed, with them, after the call
        (saving the controller a command to the node). Only a directory that holds every path
        of I(files) directly is removed.
    type: path
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
    C(result) (its module's check-mode result, without the large parts), C(deferred), and the
    C(seconds) and C(cpu_seconds) its module took (CPU of the module and the commands it ran).
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
batch:
  description:
    - The roles of C(change) when every one of them may be applied in the site's converge step
      (with I(apply)), else none.
  type: list
  elements: str
  returned: without apply
  sample: [host_tuning]
checks:
  description:
    - Without I(apply), the roles' module arguments as sent to the node (templated and checked
      on the controller), which the site's converge step sends again.
  type: list
  elements: dict
  returned: without apply
  sample: [{"role": "host_tuning", "module": "host_tuning_sysctl",
            "args": {"sysctls": {"net.ipv4.tcp_mtu_probing": 1}, "file": "/etc/sysctl.d/99-zz-rocetune-host-tuning.conf"}}]
applied:
  description: With I(apply), the roles applied (a failed role last), in order.
  type: list
  elements: str
  returned: with apply
  sample: [roce_net, host_tuning]
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
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_preflight import (
    apply_all,
    check_all,
    remove_files_dir,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="dict", required=True),
            apply=dict(type="bool", default=False),
            files=dict(type="dict", default={}),
            files_dir=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    if module.params["apply"]:
        converge(module)
    answers = check_all(module, module.params["checks"])
    failed = ["%s: %s" % (role, a["msg"]) for role, a in answers.items() if a["failed"]]
    result = dict(
        changed=False,
        roles=answers,
        run=[role for role, a in answers.items() if a["run"]],
        change=[role for role, a in answers.items() if a["change"]],
    )
    if failed:
        module.fail_json(msg="; ".join(failed) + "; nothing was changed anywhere", invocation=invocation(module),
                         **result)
    module.exit_json(invocation=invocation(module), **result)


def invocation(module):
    """The call as Ansible echoes it back, with each role named instead of its arguments: those the
    controller built and holds already (a QoS plan, a unit file), and every byte returned is parsed,
    copied and kept per node there."""
    p = module.params
    args = dict(p, checks=[{"role": c.get("role"), "module": c.get("module")} for c in p["checks"]])
    return {"module_args": args}


def converge(module):
    try:
        answers = apply_all(module, module.params["checks"], module.params["files"])
    finally:
        removed = remove_files_dir(module.params.get("files_dir"), module.params["files"])
    diffs = []
    for role, answer in answers.items():
        for warning in answer["warnings"]:
            module.warn("%s: %s" % (role, warning))
        diff = answer["result"].pop("diff", None)
        if diff and module._diff:
            diffs.extend(diff if isinstance(diff, list) else [diff])
    changed = [role for role, a in answers.items() if a["changed"]]
    result = dict(changed=bool(changed), roles=answers, applied=list(answers), change=changed, files_dir_removed=removed,
                  invocation=invocation(module))
    if diffs:
        result["diff"] = diffs
    failed = [role for role, a in answers.items() if a["failed"]]
    if failed:
        done = [role for role in answers if role not in failed]
        module.fail_json(
            msg="%s: %s; applied before it: %s (changed: %s); not run after it: %s"
            % (
                failed[0],
                answers[failed[0]]["msg"],
                ", ".join(done) or "none",
                ", ".join(r for r in changed if r in done) or "none",
                ", ".join(c["role"] for c in module.params["checks"] if c["role"] not in answers) or "none",
            ),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
