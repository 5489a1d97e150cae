# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune_env_features: every node's Features document written on the controller, in the
controller's own process (no module, no Python started anywhere), once for the play."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)

ARGUMENT_SPEC = dict(dir=dict(type="path", required=True), features=dict(type="dict", required=True))
# A host name as a file name: no separator, no dot-only name, nothing a shell or a glob reads.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.@:-]+\Z")


def render(features):
    return json.dumps(features, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def write_features(directory, hosts, check_mode):
    """(changed, [{path, changed}], diffs): DIR/<host>.json for each host whose Features are
    not null, each written (atomically) only when its content differs."""
    bad = sorted(h for h in hosts if not SAFE_NAME.match(h) or h in (".", ".."))
    if bad:
        raise AnsibleActionFail("host names unfit for a file name: %s" % ", ".join(bad))
    files = [{"path": os.path.join(directory, host + ".json"), "content": render(hosts[host]), "mode": "0644"}
             for host in sorted(hosts) if hosts[host] is not None]
    try:
        changes, diffs = plan_files(files, [])
    except FileTargetError as exc:
        raise AnsibleActionFail(str(exc)) from None
    if changes and not check_mode:
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            raise AnsibleActionFail("cannot write %s: %s" % (", ".join(c[1]["path"] for c in changes),
                                                             getattr(exc, "strerror", None) or exc)) from None
    written = {c[1]["path"] for c in changes}
    return bool(diffs), [{"path": f["path"], "changed": f["path"] in written} for f in files], diffs


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        changed, files, diffs = write_features(params["dir"], params["features"], self._task.check_mode)
        result.update(changed=changed, files=files)
        if self._task.diff:
            result["diff"] = diffs
        return result
