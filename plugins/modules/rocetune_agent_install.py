#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Install the rocetune agent, run from bytecode by the node's Python (the packed zip itself, or
the zip unpacked and compiled), and the `rocetune` command as a launcher script. Asked first
without the zip, it says whether the zip must be copied over at all."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_install
short_description: Install the rocetune agent as bytecode for the node's Python
version_added: "0.1.0"
description:
  - Looks for the agent with I(sha256) under I(lib_dir), in a form I(python) runs from bytecode,
    and writes the launcher I(dest) (owner root, I(mode)) where it differs, in one remote call.
  - The zip carries the bytecode of the Python that packed it. Where I(python) takes that
    bytecode (the same magic number), the zip itself is the installed agent,
    I(lib_dir)/VERSION-SHA12.pyz (one file, written atomically); else the zip is unpacked into
    I(lib_dir)/VERSION-SHA12 and compiled there with I(python).
  - When it is missing, the module's action plugin transfers I(package) (the packed zip on the
    controller) into Ansible's private temporary directory on the node and calls the module
    again with I(src); the module checks the sha256, installs it, writes the launcher and removes
    what the launcher ran before. Nothing is made on the node before the zip is there.
  - In check mode it reports the install it would make and transfers nothing.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details: Transfers I(package) to the node only when the agent with I(sha256) is not installed there.
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The launcher script.
  platform:
    platforms: posix
requirements:
  - Python 3.9 or newer on the node (I(python)), which compiles and runs the agent.
options:
  dest:
    description: The rocetune command (a launcher script); its directory must exist.
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
  package:
    description: The packed agent (C(python3 -m rocetune.agentpack)) on the controller; transferred only when needed.
    type: path
  src:
    description: The transferred agent zip, on the node (the action plugin sets it).
    type: path
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Install the packed agent as /usr/local/bin/rocetune (the zip goes over only when needed)
  rocetune.fabric.rocetune_agent_install:
    package: /srv/rocetune/rocetune-0.1.0-357c176d9036.pyz
    sha256: "{{ agent_sha256 }}"
    dest: /usr/local/bin/rocetune
    python: /usr/bin/python3
    lib_dir: /usr/local/lib/rocetune
"""

RETURN = r"""
needs_content:
  description: The agent with I(sha256) is not installed (and was not, in check mode or without I(package)).
  type: bool
  returned: always
  sample: false
tree:
  description: What the launcher runs the agent from (the zip, or the directory it was unpacked and compiled in).
  type: str
  returned: when the agent is installed
  sample: /usr/local/lib/rocetune/0.1.0-357c176d9036.pyz
msg:
  description: What was done (C(up to date) when nothing).
  type: str
  returned: always
  sample: installed /usr/local/lib/rocetune/0.1.0-357c176d9036.pyz; launcher /usr/local/bin/rocetune written
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_agent_install_run import ARGUMENT_SPEC, run


def main():
    spec = dict(ARGUMENT_SPEC, package=dict(type="path"))
    run(AnsibleModule(argument_spec=spec, supports_check_mode=True))


if __name__ == "__main__":
    main()
