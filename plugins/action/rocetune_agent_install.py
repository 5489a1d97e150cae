# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune_agent_install: one module call per node when the agent is up to date.

ansible.builtin.copy runs two modules on an unchanged file (stat, then file for the
attributes) and makes a remote temporary directory first. This action hashes the packed agent
on the controller and asks the node's module whether that agent is installed (unpacked and
compiled for the node's Python, the launcher in place); the zip goes over only when the node
says it is not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

MODULE = "rocetune.fabric.rocetune_agent_install"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False  # a remote temporary directory only when the file must go over
    _VALID_ARGS = frozenset(("src", "dest", "mode", "python", "lib_dir"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        src, dest = args.get("src"), args.get("dest")
        if not all(args.get(k) for k in ("src", "dest", "python", "lib_dir")):
            raise AnsibleActionFail("src, dest, python and lib_dir are required")
        try:
            with open(src, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("cannot read the agent %s: %s" % (src, exc))
        args = {"dest": dest, "sha256": digest, "mode": str(args.get("mode", "0755")),
                "python": args["python"], "lib_dir": args["lib_dir"]}
        res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if res.get("failed") or not res.get("needs_content"):
            result.update(res)
            return result
        if self._task.check_mode:
            result.update(changed=True, msg="%s would be installed as %s" % (src, dest),
                          diff={"before_header": dest, "after_header": dest, "before": "",
                                "after": "rocetune agent sha256 %s, unpacked into %s and compiled\n"
                                         % (digest, args["lib_dir"])})
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
