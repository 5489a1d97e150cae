# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""roce_net_path: the jumbo path check. The pairs are worked out here, on the controller; the
node runs only the pings, in one shell command (no module, no Python there), and the answers are
read back here (module_utils/roce_net_path_run.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_path_run import (
    ARGUMENT_SPEC,
    PathError,
    check,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True  # it only pings
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)

        def run(command):
            res = self._low_level_execute_command(command, sudoable=True)
            if res.get("unreachable"):
                raise _Unreachable(res)
            return res.get("rc"), res.get("stdout") or "", res.get("stderr") or ""

        try:
            result.update(check(params, run))
        except _Unreachable as exc:
            result.update(exc.result)
        except PathError as exc:
            raise AnsibleActionFail("jumbo path check from %s: %s" % (params["host"], exc)) from None
        return result


class _Unreachable(Exception):
    def __init__(self, result):
        super().__init__("unreachable")
        self.result = result
