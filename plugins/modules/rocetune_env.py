#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Plan a node's env with the rocetune agent and write the files, with check mode and diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_env
short_description: Write a node's tuned NCCL/UCX env files planned by the rocetune agent
version_added: "0.1.0"
description:
  - Runs the agent once on the node, C(rocetune --json env --env-dir DIR --format sh -o ENV_FILE
    [--format nccl-conf -o NCCL_CONF_FILE] --diff --mkdir), which plans and writes the env file,
    NCCL's config file and every file the env points at (an NCCL topology XML on a flattened
    host), each only when its content differs; in check mode with C(--check), which writes nothing.
    The agent is the one writer of env files (the same code as C(rocetune env -o) and the boot unit).
  - Files the env points at are written before the env file, so an env never names a missing file.
  - A file at I(nccl_conf_file) that rocetune did not write (no rocetune header) is kept once as
    C(<file>.rocetune-orig) before it is replaced.
  - With I(on_warnings=fail), the agent writes nothing when its plan has warnings.
  - Also installs (or removes) the boot unit that re-derives the env at every boot, and its
    C(multi-user.target) enable link, in the same call; C(systemctl daemon-reload) runs only
    when the unit changed on a node where systemd runs.
  - With I(no_degrade) (the default) the agent refuses to replace the env with one that falls
    short of the expectations or of the env it replaces (fewer RDMA ports, a dropped traffic
    class); then nothing is written and the task fails with the reasons.
  - Writes the node's expectations (I(expect)) and check configuration (I(doctor_config)) after
    the agent has read them, from a private copy, and planned with them; a file this module
    wrote is removed when its content is omitted, a file it did not write is left alone.
  - Installs or removes further units (I(units)); a timer among them is started or stopped when
    its file changed.
  - Makes the directories in I(dirs) that are missing.
  - The agent runs under coreutils' C(timeout) (I(timeout) seconds).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The agent plans with C(--check) and writes nothing.
  diff_mode:
    support: full
    details: Each file that changes, and the backup of an unmanaged NCCL config file.
  platform:
    platforms: posix
requirements:
  - The rocetune agent on the node (the rocetune_agent role installs it) and coreutils' C(timeout).
options:
  command:
    description: The rocetune command on the node.
    type: path
    required: true
  root:
    description: Host root the agent reads (C(/) for the node itself).
    type: path
    default: /
  env_file:
    description: The env file (sh dialect); the files it points at go in its directory.
    type: path
    required: true
  nccl_conf_file:
    description: Where NCCL's config file goes; omit to write none.
    type: path
  nccl_version:
    description:
      - The NCCL release the jobs load (C(2.19.3)), passed as C(--nccl-version); empty plans for
        the lowest NCCL the agent finds on the node.
    type: str
    default: ""
  args:
    description: Extra arguments for C(rocetune env).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds the agent may take.
    type: int
    default: 120
  on_warnings:
    description: C(ignore) returns the agent's warnings only, C(report) shows them, C(fail) fails the host.
    type: str
    choices: [ignore, report, fail]
    default: report
  unit_path:
    description: The boot unit's file (under C(/etc/systemd/system)); omit to leave units alone.
    type: path
  unit_content:
    description: The boot unit's text; omit to remove the unit and its enable link.
    type: str
  no_degrade:
    description: Refuse to replace the env with one that falls short of the expectations or of the env it replaces.
    type: bool
    default: true
  expect:
    description:
      - The node's expectations (YAML text, docs/expect.md), checked by the agent before anything
        is written; omit to write none (a file this module wrote is removed).
    type: str
  expect_path:
    description: Where the expectations go.
    type: path
    default: /etc/rocetune/expect.yml
  doctor_config:
    description:
      - The check configuration (YAML text, docs/doctor.md), checked by the agent; omit to write none.
    type: str
  doctor_config_path:
    description: Where the check configuration goes.
    type: path
    default: /etc/rocetune/doctor.yml
  units:
    description:
      - Further units under C(/etc/systemd/system) (C(.service) or C(.timer)).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The unit's file.
        type: path
        required: true
      content:
        description: The unit's text; omit (or null) to remove the unit and its enable link.
        type: str
      wanted_by:
        description: The target whose C(.wants) link enables it (C(timers.target)); omit for none.
        type: str
  dirs:
    description:
      - Directories to make (mode C(0755), with their missing parents) where they do not exist,
        such as node_exporter's textfile collector directory for doctor's metrics. An existing
        one is left as it is.
    type: list
    elements: path
    default: []
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Write the node's tuned env files, failing on any warning
  rocetune.fabric.rocetune_env:
    command: /usr/local/bin/rocetune
    env_file: /etc/rocetune/nccl.env
    nccl_conf_file: /etc/nccl.conf
    on_warnings: fail
  register: env
"""

RETURN = r"""
features:
  description: The node's Features document (null when the agent did not run).
  type: dict
  returned: always
  sample: {"schema_version": "1", "host": {"hostname": "gpu-h100-001"}}
findings:
  description: >-
    What the agent found about the node (host checks and rules), each with C(id), C(severity),
    C(message), C(fix) and C(source); C(docs/checks/<id>.md) describes each id.
  type: list
  elements: dict
  returned: when the agent ran
  sample: [{"id": "memlock-limit", "severity": "warning", "message": "memlock is 64 KiB", "fix": "rdma_core_memlock: true", "source": "/proc/self/limits"}]
files:
  description: Each file written (or that would be), with C(path) and C(changed).
  type: list
  elements: dict
  returned: always
  sample: [{"path": "/etc/rocetune/nccl.env", "changed": true, "backup": null}]
env:
  description: The planned variables, name to value.
  type: dict
  returned: when the agent ran
  sample: {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3"}
agent_warnings:
  description: What the agent warned about (unreadable sources, uncertain choices, findings).
  type: list
  elements: str
  returned: when the agent ran
  sample: ["no NCCL library found; planned for the oldest release tracked"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_env_run import ARGUMENT_SPEC, run


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


if __name__ == "__main__":
    main()
