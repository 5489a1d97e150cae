# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune_agent_install's controller side: ask the node whether the agent with this sha256 is
installed (one module call); only when it is not, transfer the packed zip into Ansible's private
temporary directory there and call the module again to install it. One task, and no copy of
the zip on a node that has the agent."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.action import ActionBase

MODULE = "rocetune.fabric.rocetune_agent_install"


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        package = args.pop("package", None)
        first = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if first.get("failed") or not first.get("needs_content") or self._task.check_mode or args.get("src"):
            result.update(first)
            return result
        if not package or not os.path.isfile(package):
            result.update(first, failed=True,
                          msg="the agent is not installed and no package was given to install (%r)" % (package,))
            return result
        remote_tmp = self._connection._shell.tmpdir or self._make_tmp_path()
        remote = self._connection._shell.join_path(remote_tmp, "rocetune-agent.pyz")
        try:
            self._transfer_file(package, remote)
            self._fixup_perms2((remote_tmp, remote))
            second = self._execute_module(module_name=MODULE, module_args=dict(args, src=remote),
                                          task_vars=task_vars)
        finally:
            self._remove_tmp_path(remote_tmp)
        result.update(second)
        return result
