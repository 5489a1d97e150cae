# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""role_vars_check: fail on a misspelt role variable, on the controller, for the whole play.

A role's meta/argument_specs.yml validates the values of its known variables; a misspelt name
is ignored by Ansible and leaves the default in force, silently. This action reads the spec and
names every variable with the role's prefix that is not one of its options: this host's view
(play, role and extra vars included) and every play host's inventory variables. No module runs
on a node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.six import string_types
from ansible.plugins.action import ActionBase

try:
    import yaml
except ImportError:  # ansible-core requires PyYAML; kept for a clear message
    yaml = None


def unknown_names(role, known, task_vars, hosts):
    """The `<role>_*` names in this host's variables (play, role and extra vars included) and in
    the inventory variables of `hosts` that are not in `known`, sorted."""
    prefix = role + "_"
    names = set(n for n in task_vars if isinstance(n, string_types) and n.startswith(prefix))
    hostvars = task_vars.get("hostvars") or {}
    for host in hosts:
        if host in hostvars:
            names.update(n for n in hostvars[host] if isinstance(n, string_types) and n.startswith(prefix))
    return sorted(names - known)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("role", "role_path", "outputs"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        role, role_path = self._task.args.get("role"), self._task.args.get("role_path")
        if not isinstance(role, string_types) or not role or not isinstance(role_path, string_types):
            raise AnsibleActionFail("role (the role's name) and role_path are required")
        outputs = self._task.args.get("outputs") or []
        if not isinstance(outputs, list):
            raise AnsibleActionFail("outputs must be a list of the facts the role sets itself")
        known = self._options(role_path) | set(outputs)
        unknown = unknown_names(role, known, task_vars, task_vars.get("ansible_play_hosts") or [])
        result.update(changed=False, unknown=unknown, options=sorted(known))
        if unknown:
            result["failed"] = True
            result["msg"] = ("unknown variable(s) %s: not options of the %s role (misspelt?). The options are "
                             "listed in its README.md." % (", ".join(unknown), role))
        return result

    @staticmethod
    def _options(role_path):
        path = os.path.join(role_path, "meta", "argument_specs.yml")
        if yaml is None:
            raise AnsibleActionFail("PyYAML is needed to read %s" % path)
        try:
            with open(path) as fh:
                spec = yaml.safe_load(fh)
            return set(spec["argument_specs"]["main"]["options"])
        except (IOError, OSError, KeyError, TypeError, yaml.YAMLError) as exc:
            raise AnsibleActionFail("cannot read the options of %s: %s" % (path, exc))
