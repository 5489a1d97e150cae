# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Action side of rocetune_agent_probe: probe the node (read-only), then keep the node's
Features JSON on the controller.

The module runs on the node and returns the Features; this writes them to C(features_dest)
on the controller when (and only when) the bytes differ, atomically, with a diff under
--diff and nothing written under --check. The task reports changed only for that controller
file: the node is never changed.
"""

from __future__ import annotations

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

MODULE = "rocetune_agent_probe"


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("executable", "root", "formats", "args", "timeout", "on_warnings", "features_dest"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp
        args = dict(self._task.args)
        dest = args.pop("features_dest", None) or None
        res = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        result.update(res)
        result["changed"] = False
        if res.get("failed") or dest is None:
            return result

        text = json.dumps(res["features"], indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        try:
            with open(dest, encoding="utf-8") as fh:
                before = fh.read()
        except FileNotFoundError:
            before = None
        except OSError as exc:
            raise AnsibleActionFail(f"cannot read {dest} on the controller: {exc}")
        result["features_dest"] = dest
        if before == text:
            return result
        result["changed"] = True
        if self._task.diff:
            result["diff"] = [{"before": before or "", "after": text,
                               "before_header": dest if before is not None else "(absent)",
                               "after_header": dest}]
        if self._task.check_mode:
            return result
        try:
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            fd, tmp_path = tempfile.mkstemp(dir=os.path.dirname(dest) or ".", prefix=".features-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp_path, 0o644)
            os.replace(tmp_path, dest)
        except OSError as exc:
            raise AnsibleActionFail(f"cannot write {dest} on the controller: {exc}")
        return result
