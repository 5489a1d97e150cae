# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Wall seconds per task (all hosts together), written as JSON to $ROCETUNE_TASK_SECONDS; and,
for the tasks that run several roles' modules in one call (the preflight and the site's converge
step, whose results give `seconds` and `cpu_seconds` per role), each role's wall and CPU seconds
on the nodes, summed over hosts.

Used by bench/ansible_converge.py to show where a run's time goes. Enable with
ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins ANSIBLE_CALLBACKS_ENABLED=task_seconds.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: task_seconds
type: aggregate
short_description: wall seconds per task, as JSON
description: Writes [[task name, seconds], ...] to the file named by $ROCETUNE_TASK_SECONDS.
requirements: [enable in configuration]
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_seconds"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._start = time.monotonic()
        self._current = None
        self._rows = []
        self._in_one_call = {}

    def _close(self):
        if self._current:
            name, began = self._current
            self._rows.append([name, round(time.monotonic() - began, 3)])
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._current = (task.get_name(), time.monotonic())

    def v2_runner_on_ok(self, result):
        roles = result._result.get("roles")
        if not isinstance(roles, dict):
            return
        step = "apply" if result._result.get("applied") is not None else "check"
        for role, answer in roles.items():
            if isinstance(answer, dict) and isinstance(answer.get("seconds"), (int, float)):
                key = "%s %s" % (step, role)
                count, total, cpu = self._in_one_call.get(key, (0, 0.0, 0.0))
                self._in_one_call[key] = (count + 1, round(total + answer["seconds"], 3),
                                          round(cpu + float(answer.get("cpu_seconds") or 0), 3))

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("ROCETUNE_TASK_SECONDS")
        if path:
            with open(path, "w") as fh:
                json.dump(
                    {
                        "tasks": self._rows,
                        "since_start": round(time.monotonic() - self._start, 3),
                        "in_one_call": self._in_one_call,
                    },
                    fh,
                )
