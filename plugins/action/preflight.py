# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The site's preflight, controller side: for each role named, what it checks on the node
(`__<role>_preflight` in the role's vars: its module, that module's arguments as the role passes
them, the facts it sets, whether it runs every time, what its variables refuse that its
argument spec cannot say), templated as the role's own tasks would
(its role_path and search path); its variables checked against its meta/argument_specs.yml
(the same validator Ansible runs when the role starts) and its misspelt
`<role>_*` names (role_vars_check's rule), the QoS plan given from the controller loaded and
checked here; then one module call on the node runs every role's module in check mode
(rocetune.fabric.preflight), and a QoS plan file the node could not read is checked here. All
errors of all roles are reported at once, each named by its role.

With `apply`, the site's converge step: the roles named, those the preflight found to change the
node, applied in one module call (their inputs were checked by the preflight before); a role's
`payload` ({option: controller file}) is transferred into Ansible's private temporary directory
on the node for the call where the earlier answer (`preflight`) says the node lacks that content
(the agent's zip), and removed after it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible_collections.rocetune.fabric.plugins.action.role_vars_check import unknown_names
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_apply_run import (
    controller_args,
    controller_result,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_state import QosError

try:
    import yaml
except ImportError:  # ansible-core requires PyYAML; kept for a clear message
    yaml = None
# The roles' own argument specs (the collection's files, read once per role and node): libyaml's
# loader where PyYAML has it, ten times faster than the pure-Python one.
SPEC_LOADER = getattr(yaml, "CSafeLoader", None) or getattr(yaml, "SafeLoader", None)

ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("roles", "apply", "preflight"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        names = self._task.args.get("roles")
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise AnsibleActionFail("roles must be a list of the roles' names, in the order the site runs them")
        if yaml is None:
            raise AnsibleActionFail("PyYAML is needed to read the roles' argument specs")
        if boolean(self._task.args.get("apply", False), strict=False):
            result.update(self._apply(names, task_vars))
            return result
        refused, node_checks, checks, payload = {}, [], [], {}
        for role in names:
            templar = self._role_templar(role, task_vars)
            name = "__%s_preflight" % role
            if name not in task_vars:
                raise AnsibleActionFail(
                    "%s is not defined: import the role %s (tasks_from: preflight) in this play" % (name, role)
                )
            options = self._role_options(role)
            provided, problems = self._role_input_problems(options, task_vars, templar)
            # The role's check templated with its options' values as just templated: each option's
            # own template is compiled once (Ansible compiles a template anew at every use).
            templar.available_variables = dict(templar.available_variables, **provided)
            check = dict(_template_check(task_vars[name], provided, task_vars, templar), role=role)
            checks.append(check)
            problems.extend(_unknown_names(role, set(options) | set(check.get("outputs") or []), task_vars))
            # What the role's own variables refuse that its argument spec cannot say.
            problems.extend(str(problem) for problem in check.get("refuse") or [])
            args = check.get("args") or {}
            if check.get("module") == "roce_qos_apply" and not problems:
                try:
                    args = controller_args(args, yaml.safe_load)
                except QosError as exc:
                    problems.append("QoS plan %s" % exc)
            if problems:
                refused[role] = "; ".join(problems)
            elif check.get("module"):
                node_checks.append({"role": role, "module": check["module"], "args": args})
                if check.get("payload"):
                    payload[role] = check["payload"]
        answer = {"roles": {}}
        if node_checks:
            answer = self._execute_module(
                module_name="rocetune.fabric.preflight", module_args={"checks": node_checks}, task_vars=task_vars
            )
            if answer.get("unreachable") or "roles" not in answer:  # no answer: no Python, a broken transfer
                result.update(answer, refused=not answer.get("unreachable"))
                if result["refused"]:
                    result.update(failed=True, msg=answer.get("msg") or "the preflight got no answer from the node")
                return result
        roles = answer["roles"]
        for check in node_checks:
            if check["module"] == "roce_qos_apply" and check["role"] in roles:
                checked = controller_result(check["args"], dict(roles[check["role"]]["result"]), yaml.safe_load)
                if checked.get("failed") and not roles[check["role"]]["failed"]:
                    roles[check["role"]].update(failed=True, msg=checked["msg"])
        out = {}
        for check in checks:
            role = check["role"]
            answer_of = roles.get(role) or {
                "failed": False,
                "msg": "",
                "run": False,
                "change": False,
                "warnings": [],
                "result": {},
                "unchecked": "nothing to check on the node",
            }
            if role in refused:
                answer_of = dict(answer_of, failed=True, msg=refused[role], change=True)
            answer_of["change"] = bool(answer_of.get("change", answer_of.get("run")))
            # A role whose verification runs every time (`always`: roce_net's jumbo path check, OFED)
            # runs even where its module has nothing to change.
            answer_of["run"] = bool(answer_of.get("run")) or boolean(check.get("always") or False, strict=False)
            # Whether the site's converge step may apply this role's module with the others'.
            answer_of["batch"] = boolean(check.get("batch", True), strict=False)
            out[role] = answer_of
        errors = ["%s: %s" % (role, a["msg"]) for role, a in out.items() if a["failed"]]
        change = [r for r, a in out.items() if a["change"]]
        # The site's converge step: every role that will change the node, in one call, where each allows it.
        batch = change if all(out[r]["batch"] for r in change) else []
        # What the converge step sends (the roles' module arguments as templated and checked here),
        # so that it need not template them again.
        sent = [dict(c, payload=payload[c["role"]]) if c["role"] in payload else c for c in node_checks]
        result.update(
            changed=False,
            roles=out,
            run=[r for r, a in out.items() if a["run"]],
            change=change,
            batch=batch,
            checks=sent,
            refused=bool(errors),
        )
        if errors:
            result.update(failed=True, msg="preflight refused this node, nothing was changed: " + " | ".join(errors))
        return result

    def _apply(self, names, task_vars):
        """The converge step: every role named applied on the node in one call."""
        preflight = self._task.args.get("preflight") or {}
        found = preflight.get("roles") or {}
        # The preflight's own templated and checked arguments where it gave them.
        sent = dict((c["role"], c) for c in preflight.get("checks") or [] if isinstance(c, dict) and "role" in c)
        checks, sends = [], {}
        for role in names:
            check = sent.get(role) or self._templated_check(role, task_vars)
            if not check.get("module"):
                continue
            args = check.get("args") or {}
            if check["module"] == "roce_qos_apply" and role not in sent:
                try:
                    args = controller_args(args, yaml.safe_load)
                except QosError as exc:
                    return dict(failed=True, changed=False, msg="roce_qos: QoS plan %s; nothing was changed" % exc)
            checks.append({"role": role, "module": check["module"], "args": args})
            lacks = ((found.get(role) or {}).get("result") or {}).get("needs_content", not found)
            if check.get("payload") and lacks and not self._task.check_mode:
                sends[role] = check["payload"]
        if not checks:
            return dict(changed=False, roles={}, applied=[], change=[])
        files, remote_tmp, made_tmp, answer = {}, None, False, {}
        try:
            if sends:
                # Sent as files (sftp or scp), not inside the module's arguments: a large argument
                # is copied, encoded and parsed several times on both sides.
                remote_tmp = self._connection._shell.tmpdir
                if not remote_tmp:
                    remote_tmp, made_tmp = self._make_tmp_path(), True
                for role, options in sorted(sends.items()):
                    for option, path in sorted(options.items()):
                        if not os.path.isfile(path):
                            raise AnsibleActionFail("cannot read %s on the controller: not a file" % path)
                        remote = self._connection._shell.join_path(remote_tmp, "%s-%s" % (role, option))
                        self._transfer_file(path, remote)
                        files.setdefault(role, {})[option] = remote
                # Read by the module as root (or as the ssh user itself): nothing to change, and no
                # command for it; only an unprivileged become user needs them made readable.
                self._fixup_perms2([remote_tmp] + [p for o in files.values() for p in o.values()],
                                   execute=self._is_become_unprivileged())
            args = {"checks": checks, "apply": True, "files": files}
            if made_tmp:  # the module removes it after the call: no command to the node for it
                args["files_dir"] = remote_tmp
            answer = self._execute_module(module_name="rocetune.fabric.preflight", module_args=args,
                                          task_vars=task_vars)
        finally:
            if remote_tmp:
                if made_tmp and answer.get("files_dir_removed"):
                    self._connection._shell.tmpdir = None
                else:
                    self._remove_tmp_path(remote_tmp)
        answer.pop("files_dir_removed", None)
        for check in checks:
            role = check["role"]
            if check["module"] == "roce_qos_apply" and role in answer.get("roles", {}):
                checked = controller_result(check["args"], dict(answer["roles"][role]["result"]), yaml.safe_load)
                if checked.get("failed") and not answer["roles"][role]["failed"]:
                    answer["roles"][role].update(failed=True, msg=checked["msg"])
                    answer.update(failed=True, msg="roce_qos: %s" % checked["msg"])
        return answer

    def _templated_check(self, role, task_vars):
        name = "__%s_preflight" % role
        if name not in task_vars:
            raise AnsibleActionFail(
                "%s is not defined: import the role %s (tasks_from: preflight) in this play" % (name, role)
            )
        return dict(self._role_templar(role, task_vars).template(task_vars[name]), role=role)

    def _role_templar(self, role, task_vars):
        """A templar that sees the variables as the role's own tasks do: its role_path, and its
        directory first in the search path (its templates/ and files/ for lookups)."""
        role_dir = os.path.realpath(os.path.join(ROLES_DIR, role))
        templar = self._templar.copy_with_new_env()
        search = [role_dir] + list(task_vars.get("ansible_search_path") or [])
        templar.available_variables = dict(task_vars, role_path=role_dir, ansible_search_path=search)
        return templar

    def _role_options(self, role):
        path = os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml")
        try:
            with open(path) as fh:
                return yaml.load(fh, Loader=SPEC_LOADER)["argument_specs"]["main"]["options"]
        except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
            raise AnsibleActionFail("cannot read the options of role %s (%s): %s" % (role, path, exc)) from exc

    def _role_input_problems(self, options, task_vars, templar):
        """({option: templated value}, problems): the role's variables checked against its
        argument spec (the same validator Ansible runs when the role starts)."""
        provided = {}
        for name in options:
            if name in task_vars:
                provided[name] = templar.template(task_vars[name])
        spec = dict((name, _spec(opt)) for name, opt in options.items())
        return provided, list(ArgumentSpecValidator(spec).validate(provided).error_messages)


# A value that is one variable's reference and nothing else: "{{ name }}".
_BARE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\Z")


def _templated(value, provided, task_vars, templar, depth=0):
    """`value` templated as the role's tasks would see it, with each string that is exactly one
    variable's reference taken without compiling a template for it: an option's value as the
    argument spec check templated it (`provided`), or another variable's dict or list, itself
    taken the same way. Every other string goes to the templar, leaf by leaf; nothing is
    templated twice."""
    if isinstance(value, str):
        bare = _BARE.match(value) if depth < 8 else None
        if bare and bare.group(1) in provided:
            return provided[bare.group(1)]
        if bare and bare.group(1) in task_vars and isinstance(task_vars[bare.group(1)], (dict, list)):
            return _templated(task_vars[bare.group(1)], provided, task_vars, templar, depth + 1)
        return templar.template(value)
    if isinstance(value, dict):
        return dict((k, _templated(v, provided, task_vars, templar, depth)) for k, v in value.items())
    if isinstance(value, list):
        return [_templated(v, provided, task_vars, templar, depth) for v in value]
    return value


def _template_check(raw, provided, task_vars, templar):
    """A role's `__<role>_preflight`, templated: its module first, and its arguments and payload
    only where it names one (a role with nothing to run on the node has no arguments to build)."""
    if not isinstance(raw, dict) or "module" not in raw:
        return _templated(raw, provided, task_vars, templar)
    module = _templated(raw["module"], provided, task_vars, templar)
    rest = dict((k, v) for k, v in raw.items() if k != "module" and (module or k not in ("args", "payload")))
    return dict(_templated(rest, provided, task_vars, templar), module=module)


def _unknown_names(role, known, task_vars):
    """The role's misspelt names (role_vars_check's rule), as a problem."""
    unknown = unknown_names(role, known, task_vars, hosts=())
    if unknown:
        return ["unknown variable(s) %s: not options of the %s role (misspelt?)" % (", ".join(unknown), role)]
    return []


def _spec(option):
    """An argument_specs.yml option as ArgumentSpecValidator takes it (docs keys dropped)."""
    keep = ("type", "elements", "choices", "required", "default", "options", "no_log")
    out = dict((k, v) for k, v in option.items() if k in keep)
    out.pop("default", None)  # the roles' defaults are already among the variables
    if "options" in out:
        out["options"] = dict((k, _spec(v)) for k, v in out["options"].items())
    return out
