#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The agent the controller installs, packed or given, by its path and sha256.
Documentation only: the action plugin of the same name does the work, on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_pack
short_description: The rocetune agent zip on the controller, packed from the sources or given
version_added: "0.1.0"
description:
  - Runs on the controller, in Ansible's own process (an action plugin; nothing runs on a node),
    once for the play (C(run_once)).
  - With I(package), hashes that file (an agent packed beforehand, or the one the built collection
    ships); otherwise packs the agent from the rocetune sources in I(src_dir) with
    C(rocetune.agentpack) into I(out_dir). The zip is deterministic and named by its version and
    sha256; a pack of the same inputs returns the zip already there without building it again.
  - Made in check mode too, as a controller-side artifact, not a change to a managed host.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The zip is packed in check mode as well (the controller's cache).
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - None; it runs on the controller.
options:
  package:
    description: An agent packed beforehand, on the controller; empty packs one.
    type: path
    default: ""
  src_dir:
    description:
      - The directory holding the C(rocetune) package to pack; empty packs the rocetune that the
        Python running ansible-playbook imports.
    type: path
    default: ""
  out_dir:
    description: The controller directory for the packed zip.
    type: path
    required: true
  python:
    description: The node's interpreter, for the zip's shebang.
    type: str
    required: true
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Pack the agent on the controller
  rocetune.fabric.rocetune_agent_pack:
    src_dir: /home/ops/rocetune/src
    out_dir: ~/.cache/rocetune/agent
    python: /usr/bin/python3
  run_once: true
"""

RETURN = r"""
path:
  description: The zip on the controller.
  type: str
  returned: success
  sample: /home/ops/.cache/rocetune/agent/rocetune-0.1.0-0123456789ab.pyz
sha256:
  description: Its sha256.
  type: str
  returned: success
  sample: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
"""
