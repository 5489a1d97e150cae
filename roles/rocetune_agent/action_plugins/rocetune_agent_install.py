# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Action side of rocetune_agent_install: send the wheelhouse only when the node needs it.

The module first runs with the archive's sha256 only. A node that already has that exact
archive installed answers in that one call (the idempotent rerun: one module run per host).
A node that needs it gets the archive in the task's remote temp directory and a second module
run installs from there; nothing stays behind on the node but the venv. Check mode never
transfers anything.
"""

from __future__ import annotations

import hashlib

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

MODULE = "rocetune_agent_install"
_SHA_CACHE = {}  # (path, size, mtime) -> sha256: computed once per controller process


def _sha256(path):
    import os
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


class ActionModule(ActionBase):

    TRANSFERS_FILES = False  # a temp dir is made only when the archive must travel
    _VALID_ARGS = frozenset(("src", "venv", "python", "system_site_packages", "link", "dirs", "timeout"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp
        args = dict(self._task.args)
        src = args.pop("src", None)
        if not src:
            raise AnsibleActionFail("src (the wheelhouse archive on the controller) is required")
        try:
            source = self._find_needle("files", src)
        except Exception as exc:  # AnsibleError with the search path in it
            raise AnsibleActionFail(to_text(exc))
        args["archive_sha256"] = _sha256(source)

        try:
            first = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if first.get("failed") or not first.get("needs_archive") or self._task.check_mode:
                first.pop("needs_archive", None)
                result.update(first)
                return result

            self._make_tmp_path()
            remote = self._connection._shell.join_path(self._connection._shell.tmpdir, "rocetune-wheelhouse.tar")
            self._transfer_file(source, remote)
            self._fixup_perms2((self._connection._shell.tmpdir, remote))
            args["archive"] = remote
            second = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            second.pop("needs_archive", None)
            result.update(second)
            return result
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
