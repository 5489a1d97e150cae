# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune_agent_install: one module call per node when the agent is up to date.

ansible.builtin.copy runs two modules on an unchanged file (stat, then file for the
attributes) and makes a remote temporary directory first. This action hashes the agent on the
controller, asks the node's module to compare (and fix owner and mode), and transfers the file
only when the node says its content differs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

MODULE = "rocetune.fabric.rocetune_agent_install"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # a remote temporary directory only when the file must go over
    _VALID_ARGS = frozenset(("src", "dest", "mode"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        src, dest = self._task.args.get("src"), self._task.args.get("dest")
        if not src or not dest:
            raise AnsibleActionFail("src and dest are required")
        try:
            with open(src, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("cannot read the agent %s: %s" % (src, exc))
        args = {"dest": dest, "sha256": digest, "mode": str(self._task.args.get("mode", "0755"))}
        res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if res.get("failed") or not res.get("needs_content"):
            result.update(res)
            return result
        if self._task.check_mode:
            result.update(changed=True, msg="%s would be installed as %s" % (src, dest),
                          diff={"before_header": dest, "after_header": dest, "before": "",
                                "after": "sha256 %s\n" % digest})
            return result
        self._make_tmp_path()
        try:
            remote = self._connection._shell.join_path(self._connection._shell.tmpdir, "rocetune.pyz")
            self._transfer_file(src, remote)
            self._fixup_perms2((self._connection._shell.tmpdir, remote))
            args["src"] = remote
            res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(res)
        return result
