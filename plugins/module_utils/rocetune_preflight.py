# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The site's preflight on a node: every role's module run in check mode, in one process, with
the very code the role runs later (each module's body lives in module_utils as run(module)).
Nothing changes on the node; what each role would change, and every input or node state it
refuses, comes back in one answer (rocetune.fabric.preflight).

CheckOnly stands in for AnsibleModule: check mode on, no diff, the module's real run_command and
get_bin_path, and exit_json/fail_json turned into a result instead of the process ending.

apply_all is the site's converge step: the roles that will change this node, each module's body
run for real (in the task's own check and diff mode), in order, in the same one process; the
first failure stops the roles after it."""

from __future__ import absolute_import, division, print_function

import os
import shutil
import time
import traceback

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.rocetune.fabric.plugins.module_utils import (
    host_tuning_sysctl_run,
    nic_firmware_apply_run,
    rdma_core_node_run,
    roce_net_links_run,
    roce_qos_apply_run,
    rocetune_agent_install_run,
    rocetune_env_run,
)

# The modules a site's roles run on a node, by name: their argument spec and body.
MODULES = {
    "rdma_core_node": rdma_core_node_run,
    "roce_net_links": roce_net_links_run,
    "roce_qos_apply": roce_qos_apply_run,
    "nic_firmware_apply": nic_firmware_apply_run,
    "host_tuning_sysctl": host_tuning_sysctl_run,
    "rocetune_agent_install": rocetune_agent_install_run,
    "rocetune_env": rocetune_env_run,
}
# A result that means the role will change something on this node (what a rollout drains for):
# packages to install count, as rdma_core reports them without `pending` ...
CHANGE_KEYS = ("changed", "pending", "needs_content", "missing_packages")
# ... or has something to tell where it runs (a pending reboot, a daemon to re-execute).
RUN_KEYS = CHANGE_KEYS + ("daemon_reexec_required", "reboot_required")
# Big or node-private parts of a result the controller does not need back.
DROP_KEYS = ("diff", "features", "findings", "env", "plan", "sysctls", "invocation")
# Modules whose check depends on what the roles before them change (the agent plans from the
# node as those roles leave it): with an earlier role pending, they are not run ahead.
AFTER_THE_OTHERS = ("rocetune_env",)


class _Done(Exception):
    def __init__(self, result):
        Exception.__init__(self, "exit_json")
        self.result = result


class _Failed(Exception):
    def __init__(self, msg, result):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result


class CheckOnly(object):
    """An AnsibleModule for one module's body, in check mode."""

    check_mode = True
    _diff = False

    def __init__(self, module, params):
        self._module = module
        self.params = params
        self.warnings = []

    def __getattr__(self, name):
        return getattr(self._module, name)

    def run_command(self, *args, **kwargs):
        return self._module.run_command(*args, **kwargs)

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        path = self._module.get_bin_path(arg, required=False, opt_dirs=opt_dirs)
        if required and not path:
            self.fail_json(msg="Failed to find required executable %s in paths" % arg)
        return path

    def warn(self, warning):
        self.warnings.append(warning)

    def exit_json(self, **kwargs):
        raise _Done(kwargs)

    def fail_json(self, msg, **kwargs):
        raise _Failed(msg, kwargs)


class Applying(CheckOnly):
    """An AnsibleModule for one module's body, run as its role runs it (the task's check and diff
    mode)."""

    def __init__(self, module, params):
        CheckOnly.__init__(self, module, params)
        self.check_mode = module.check_mode
        self._diff = module._diff


def check_one(module, name, args, stand_in_class=CheckOnly):
    """{failed, msg, run, warnings, result} of one module's body in check mode."""
    body = MODULES.get(name)
    if body is None:
        return {
            "failed": True,
            "msg": "no preflight for module %s" % name,
            "run": True,
            "change": True,
            "warnings": [],
            "result": {},
        }
    validated = ArgumentSpecValidator(body.ARGUMENT_SPEC).validate(dict(args or {}))
    if validated.error_messages:
        return {
            "failed": True,
            "msg": "%s: %s" % (name, "; ".join(validated.error_messages)),
            "run": True,
            "change": True,
            "warnings": [],
            "result": {},
        }
    stand_in = stand_in_class(module, validated.validated_parameters)
    small = _small if stand_in_class is CheckOnly else _without_invocation
    try:
        body.run(stand_in)
    except _Done as done:
        result = done.result
        return {
            "failed": False,
            "msg": "",
            "warnings": stand_in.warnings,
            "result": small(result),
            "run": any(result.get(k) for k in RUN_KEYS),
            "change": any(result.get(k) for k in CHANGE_KEYS),
        }
    except _Failed as failed:
        return {
            "failed": True,
            "msg": failed.msg,
            "run": True,
            "change": True,
            "warnings": stand_in.warnings,
            "result": small(failed.result),
        }
    except Exception as exc:  # a fault in a module's body must not end the preflight  # pylint: disable=broad-except
        return {
            "failed": True,
            "msg": "%s: %s: %s" % (name, type(exc).__name__, exc),
            "run": True,
            "change": True,
            "warnings": stand_in.warnings,
            "result": {"exception": traceback.format_exc()},
        }
    return {
        "failed": True,
        "msg": "%s ended without a result" % name,
        "run": True,
        "change": True,
        "warnings": [],
        "result": {},
    }


def check_all(module, checks):
    """{role: answer} for [{role, module, args}] in order (check_one's answers; a module in
    AFTER_THE_OTHERS is not run while a role before it has something to do)."""
    out = {}
    for check in checks:
        role, name = check["role"], check["module"]
        waiting = [r for r, a in out.items() if a["run"]]
        if name in AFTER_THE_OTHERS and waiting:
            out[role] = {
                "failed": False,
                "msg": "",
                "run": True,
                "change": True,
                "warnings": [],
                "result": {},
                "deferred": "checked when it runs, after %s" % ", ".join(waiting),
            }
            continue
        began, cpu = time.time(), cpu_seconds()
        out[role] = check_one(module, name, check.get("args"))
        out[role].update(seconds=round(time.time() - began, 3), cpu_seconds=round(cpu_seconds() - cpu, 3))
    return out


def cpu_seconds():
    """CPU seconds of this process and the commands it waited for (user and system)."""
    return sum(os.times()[:4])


def apply_all(module, checks, files):
    """{role: answer} for [{role, module, args}] applied in order, each module's body as its role
    runs it; the roles after a failed one, or after one that waits for packages, are not run (not
    in the answer). `files`: {role: {option: path}}, files the controller transferred into
    Ansible's private temporary directory on the node (the agent's zip), each given to the
    module as that option."""
    out = {}
    for check in checks:
        role, args = check["role"], dict(check.get("args") or {})
        missing = [path for path in (files or {}).get(role, {}).values()
                   if not isinstance(path, str) or os.path.islink(path) or not os.path.isfile(path)]
        if missing:
            out[role] = {
                "failed": True,
                "msg": "the file the controller sent for %s is not on the node (%s); it was not applied"
                       % (role, ", ".join(str(p) for p in missing)),
                "run": True,
                "change": True,
                "changed": False,
                "warnings": [],
                "result": {},
                "seconds": 0.0,
            }
            break
        args.update((files or {}).get(role, {}))
        began, cpu = time.time(), cpu_seconds()
        answer = check_one(module, check["module"], args, stand_in_class=Applying)
        answer.update(changed=bool(answer["result"].get("changed")), seconds=round(time.time() - began, 3),
                      cpu_seconds=round(cpu_seconds() - cpu, 3))
        out[role] = answer
        # A failure stops the roles after it; so does a role that waits for packages (the
        # roles after it may need them): it and they run whole after this call.
        if answer["failed"] or answer["result"].get("pending") or answer["result"].get("missing_packages"):
            break
    return out


def remove_files_dir(path, files):
    """Remove the directory the controller made for `files` ({role: {option: path}}), with them;
    True when it is gone. Only a real directory (not a link) that holds every one of those paths
    directly is removed."""
    if not path or not os.path.isabs(path):
        return False
    path = os.path.normpath(path)  # Ansible names its directories with a trailing slash
    paths = [p for options in (files or {}).values() for p in options.values()]
    if (os.path.islink(path) or not os.path.isdir(path)
            or any(not isinstance(p, str) or os.path.dirname(p) != path for p in paths)):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


def _without_invocation(result):
    return dict((k, v) for k, v in result.items() if k != "invocation")


def _small(result):
    return dict((k, v) for k, v in result.items() if k not in DROP_KEYS)
