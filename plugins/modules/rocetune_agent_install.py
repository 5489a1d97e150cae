#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Install the rocetune agent: the packed zip unpacked into a versioned directory, compiled by
the node's Python, and the `rocetune` command as a launcher script. Asked first without the
zip, it says whether the zip must be copied over at all."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_install
short_description: Install the rocetune agent as bytecode for the node's Python
description:
  - Without I(src) it looks for the agent with I(sha256) under I(lib_dir); when it is missing
    it returns C(needs_content=true) and changes nothing (in check mode it reports the change
    the install would make), so the zip is copied to the node only when it is needed.
  - When it is there, it compiles it for I(python) if needed and writes the launcher I(dest)
    (owner root, I(mode)) where it differs.
  - With I(src) (the transferred zip) it checks the sha256, unpacks it into
    I(lib_dir)/VERSION-SHA12, compiles it with I(python), then writes the launcher and removes
    the tree the launcher ran before.
options:
  dest:
    description: The rocetune command (a launcher script).
    type: path
    required: true
  sha256:
    description: The sha256 of the packed agent the controller holds.
    type: str
    required: true
  python:
    description: The node's Python that runs the agent (3.9 or newer).
    type: path
    required: true
  lib_dir:
    description: Where the agent's versioned directories go.
    type: path
    required: true
  mode:
    description: The launcher's mode.
    type: str
    default: "0755"
  src:
    description: The transferred agent zip, on the node.
    type: path
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Is the agent with this sha256 installed? (needs_content says whether to copy the zip)
  rocetune.fabric.rocetune_agent_install:
    sha256: "{{ agent_sha256 }}"
    dest: /usr/local/bin/rocetune
    python: /usr/bin/python3
    lib_dir: /usr/local/lib/rocetune
  register: agent

- name: Install the copied zip
  rocetune.fabric.rocetune_agent_install:
    src: /tmp/rocetune-agent.x/rocetune.pyz
    sha256: "{{ agent_sha256 }}"
    dest: /usr/local/bin/rocetune
    python: /usr/bin/python3
    lib_dir: /usr/local/lib/rocetune
  when: agent.needs_content
"""

RETURN = r"""
needs_content:
  description: The agent with I(sha256) is not installed and I(src) was not given.
  type: bool
  returned: always
incoming:
  description: The private directory under I(lib_dir) to copy the zip into, when I(needs_content).
  type: str
  returned: when the agent must be copied over (not in check mode)
tree:
  description: The directory the launcher runs the agent from.
  type: str
  returned: when the agent is installed
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_agent_tree import (
    TreeError,
    add_cache_tag,
    find_tree,
    launcher_text,
    launcher_tree,
    python_facts,
    read_stamp,
    read_text,
    remove_tree,
    unpack,
    write_launcher,
)

# Where the role copies the zip when this module asks for it (private to root, inside lib_dir).
INCOMING = ".incoming"


def sha256_of(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _describe(text, path):
    if text is not None:
        return text
    return "" if not os.path.lexists(path) else "(the agent as one zip file, sha256 %s)\n" % sha256_of(path)


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True),
                           sha256=dict(type="str", required=True),
                           python=dict(type="path", required=True),
                           lib_dir=dict(type="path", required=True),
                           mode=dict(type="str", default="0755"),
                           src=dict(type="path")),
        supports_check_mode=True,
    )
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r: an octal mode such as 0755" % p["mode"])
    try:
        facts = python_facts(p["python"])
    except TreeError as exc:
        module.fail_json(msg="rocetune_agent_python: %s" % exc)
    tree = find_tree(p["lib_dir"], p["sha256"])
    changes = []
    if tree is None:
        if not p["src"]:
            if module.check_mode:  # the zip would go over and be installed
                module.exit_json(changed=True, needs_content=True, diff={
                    "before_header": p["dest"], "after_header": p["dest"], "before": "",
                    "after": "rocetune agent sha256 %s, unpacked into %s and compiled\n"
                             % (p["sha256"], p["lib_dir"])})
            incoming = os.path.join(p["lib_dir"], INCOMING)
            try:
                if not os.path.isdir(incoming):
                    os.makedirs(incoming, 0o700)
            except OSError as exc:
                module.fail_json(msg="cannot make %s for the agent's zip: %s" % (incoming, exc))
            module.exit_json(changed=False, needs_content=True, incoming=incoming)
        if sha256_of(p["src"]) != p["sha256"]:
            module.fail_json(msg="the transferred agent %s does not have sha256 %s" % (p["src"], p["sha256"]))
        try:
            tree = unpack(p["src"], p["lib_dir"], p["sha256"], p["python"], facts["cache_tag"])
        except (TreeError, OSError) as exc:
            module.fail_json(msg="cannot install the agent in %s: %s" % (p["lib_dir"], exc))
        changes.append("unpacked and compiled in %s" % tree)
        if os.path.dirname(os.path.abspath(p["src"])) == os.path.join(os.path.abspath(p["lib_dir"]), INCOMING):
            os.unlink(p["src"])  # the copy this module asked for, unpacked: not kept
            try:
                os.rmdir(os.path.dirname(os.path.abspath(p["src"])))
            except OSError:
                pass  # another copy is in there
    stamp = read_stamp(tree)
    if facts["cache_tag"] not in stamp.get("compiled", []):
        if not module.check_mode:
            stamp = add_cache_tag(p["python"], tree, stamp, facts["cache_tag"])
        changes.append("compiled in %s for %s" % (tree, facts["cache_tag"]))
    want = launcher_text(p["python"], tree, facts, stamp)
    have = read_text(p["dest"])
    result = dict(needs_content=False, tree=tree)
    if have != want:
        result["diff"] = {"before_header": p["dest"], "after_header": p["dest"],
                          "before": _describe(have, p["dest"]), "after": want}
        changes.append("launcher %s written" % p["dest"])
    else:
        st = os.stat(p["dest"])
        owner = (0, 0) if os.geteuid() == 0 else (os.geteuid(), os.getegid())  # root: root's
        if (st.st_mode & 0o7777, st.st_uid, st.st_gid) != (mode,) + owner:
            changes.append("owner and mode %s set on %s" % (p["mode"], p["dest"]))
    if changes and not module.check_mode:
        try:
            write_launcher(p["dest"], want, mode)
        except (TreeError, OSError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (p["dest"], exc))
        old = launcher_tree(have)
        if old and os.path.normpath(old) != os.path.normpath(tree) and remove_tree(p["lib_dir"], old):
            changes.append("%s removed" % old)
    module.exit_json(changed=bool(changes), msg="; ".join(changes) or "up to date", **result)


if __name__ == "__main__":
    main()
