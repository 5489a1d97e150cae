# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""roce_qos_apply's controller side: the plan given in plan_content is loaded with PyYAML and
checked here, before anything runs on the node (a node without PyYAML, or without the QoS tools,
still has its plan refused in check mode); a node file the node could not read is checked here
from the text the module returned. Then the module runs as usual."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_apply_run import (
    NOTHING,
    controller_args,
    controller_result,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_state import QosError


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        import yaml

        result = super().run(tmp, task_vars)
        try:
            args = controller_args(self._task.args, yaml.safe_load)
        except QosError as exc:
            result.update(failed=True, changed=False, msg="QoS plan %s%s" % (exc, NOTHING))
            return result
        module_result = self._execute_module(module_name="rocetune.fabric.roce_qos_apply", module_args=args,
                                             task_vars=task_vars)
        result.update(controller_result(args, module_result, yaml.safe_load))
        return result
