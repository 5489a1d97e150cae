# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune_agent_pack: the agent the controller installs, by its path and sha256, in the
controller's own process (no module, no Python started; the pack's compile child only when the
sources changed): the package given, hashed, or the agent packed from the sources
(rocetune.agentpack, imported from the source tree given)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import importlib
import os
import sys

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = dict(
    package=dict(type="path", default=""),
    src_dir=dict(type="path", default=""),
    out_dir=dict(type="path", required=True),
    python=dict(type="str", required=True),
)


def given_package(path):
    """{path, sha256, changed: false} of a package packed beforehand."""
    if not os.path.isfile(path):
        raise AnsibleActionFail("rocetune_agent_package: %s is not a file on the controller" % path)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise AnsibleActionFail("rocetune_agent_package: cannot read %s: %s" % (path, exc.strerror or exc)) from None
    return {"path": path, "sha256": digest.hexdigest(), "changed": False}


def agentpack(src_dir):
    """rocetune.agentpack from src_dir (the rocetune the controller's Python imports where ""):
    this worker process is Ansible's for this task alone, so its sys.path is its own."""
    if src_dir:
        if not os.path.isfile(os.path.join(src_dir, "rocetune", "agentpack.py")):
            raise AnsibleActionFail("rocetune_agent_source_dir: no rocetune sources in %s" % src_dir)
        sys.path.insert(0, src_dir)
    try:
        module = importlib.import_module("rocetune.agentpack")
    except ImportError as exc:
        raise AnsibleActionFail("cannot import rocetune to pack the agent (set rocetune_agent_source_dir, or "
                                "install rocetune for the Python running ansible-playbook): %s" % exc) from None
    where = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__)))
    if src_dir and os.path.realpath(where) != os.path.realpath(src_dir):
        raise AnsibleActionFail("rocetune was imported from %s, not from %s" % (where, src_dir))
    return module


def pack(src_dir, out_dir, python):
    """{path, sha256, changed} of the agent packed from the sources (cached by its inputs)."""
    module = agentpack(src_dir)
    try:
        module.shebang(python)
        result = module.write(out_dir, python)
    except (OSError, ValueError) as exc:
        raise AnsibleActionFail("packing the agent into %s: %s" % (out_dir, exc)) from None
    return {"path": result["path"], "sha256": result["sha256"], "changed": result["changed"]}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # A controller-side artifact, not a change to a managed host: made in check mode too (the
    # preflight asks each node about this very agent).
    _supports_check_mode = True
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if params["package"]:
            result.update(given_package(params["package"]))
        else:
            result.update(pack(params["src_dir"], params["out_dir"], params["python"]))
        return result
