#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Install the rocetune agent (one executable zip) when its sha256 differs: the node side of the
rocetune_agent_install action, which transfers the file only when this module asks for it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_install
short_description: Install the rocetune agent file when its sha256 differs
description:
  - Called by the action of the same name. Without I(src) it compares I(dest) with I(sha256)
    and sets owner root, group root and I(mode) where they differ; if the content differs it
    returns C(needs_content=true) and changes nothing.
  - With I(src) (the transferred file) it checks the sha256 and moves it into place atomically.
options:
  dest:
    description: Where the agent goes (the rocetune command).
    type: path
    required: true
  sha256:
    description: The sha256 of the agent the controller holds.
    type: str
    required: true
  mode:
    description: The file's mode.
    type: str
    default: "0755"
  src:
    description: The transferred agent, on the node.
    type: path
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
# The action of the same name computes the sha256 on the controller and sends the file only
# when the node's differs: in a play, give it the packed agent as src.
- name: Install the agent as the rocetune command
  rocetune.fabric.rocetune_agent_install:
    src: "{{ playbook_dir }}/artifacts/rocetune-agent.pyz"
    dest: /usr/local/bin/rocetune
    mode: "0755"
"""

RETURN = r"""
needs_content:
  description: The content differs and I(src) was not given.
  type: bool
  returned: always
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule


def sha256_of(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except (IOError, OSError):
        return None
    return digest.hexdigest()


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True),
                           sha256=dict(type="str", required=True),
                           mode=dict(type="str", default="0755"),
                           src=dict(type="path")),
        supports_check_mode=True,
    )
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r: an octal mode such as 0755" % p["mode"])
    have = sha256_of(p["dest"])
    diff = {"before_header": p["dest"], "after_header": p["dest"],
            "before": "sha256 %s\n" % have if have else "", "after": "sha256 %s\n" % p["sha256"]}
    if have != p["sha256"]:
        if not p["src"]:
            module.exit_json(changed=False, needs_content=True)
        if sha256_of(p["src"]) != p["sha256"]:
            module.fail_json(msg="the transferred agent %s does not have sha256 %s" % (p["src"], p["sha256"]))
        directory = os.path.dirname(p["dest"])
        if not os.path.isdir(directory):
            module.fail_json(msg="%s does not exist: the agent's directory must" % directory)
        module.atomic_move(p["src"], p["dest"])  # a new file gets 0666 & ~umask here:
        os.chmod(p["dest"], mode)                  # the mode and owner are set after the move
        os.chown(p["dest"], 0, 0)
        module.exit_json(changed=True, needs_content=False, diff=diff)
    st = os.stat(p["dest"])
    if (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (mode, 0, 0):
        module.exit_json(changed=False, needs_content=False)
    if not module.check_mode:
        os.chmod(p["dest"], mode)
        os.chown(p["dest"], 0, 0)
    module.exit_json(changed=True, needs_content=False,
                     msg="owner root:root and mode %s set on %s" % (p["mode"], p["dest"]))


if __name__ == "__main__":
    main()
