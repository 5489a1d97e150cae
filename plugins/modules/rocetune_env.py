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
  - Supports check mode and diff.
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
findings:
  description: >-
    What the agent found about the node (host checks and rules), each with C(id), C(severity),
    C(message), C(fix) and C(source); C(docs/checks/<id>.md) describes each id.
  type: list
  elements: dict
  returned: when the agent ran
files:
  description: Each file written (or that would be), with C(path) and C(changed).
  type: list
  elements: dict
  returned: always
env:
  description: The planned variables, name to value.
  type: dict
  returned: when the agent ran
agent_warnings:
  description: What the agent warned about (unreadable sources, uncertain choices, findings).
  type: list
  elements: str
  returned: when the agent ran
"""

import json
import os
import re
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import FileTargetError, apply_changes, plan_files

WANTED_BY = "multi-user.target"
NCCL_RELEASE = re.compile(r"^\d+\.\d+\.\d+\Z")  # the whole value: "2.21.5\n" is none


def run_agent(module, argv, timeout):
    """The agent's JSON envelope; a failure (its errors[], or no JSON) fails the module."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=timeout)
    except OSError as exc:
        module.fail_json(msg="cannot run %s: %s" % (argv[0], exc))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        module.fail_json(msg="`%s` timed out after %ss" % (" ".join(argv), timeout))
    out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    try:
        envelope = json.loads(out)
    except ValueError:
        tail = [ln for ln in (err or out).splitlines() if ln.strip()]
        module.fail_json(msg="`%s` exited %d without a JSON result: %s"
                         % (" ".join(argv), proc.returncode, tail[-1] if tail else "no output"))
    if envelope.get("errors") or not isinstance(envelope.get("data"), dict):
        first = (envelope.get("errors") or [{}])[0]
        module.fail_json(msg="rocetune env on this node (exit %s): %s"
                         % (envelope.get("exit_code"), first.get("message", "no data")),
                         hint=first.get("hint"), errors=envelope.get("errors"),
                         agent_warnings=envelope.get("warnings") or [], files=[])
    return envelope


def agent_argv(module):
    p = module.params
    argv = [p["command"], "--root", p["root"], "--json", "env",
            "--env-dir", os.path.dirname(p["env_file"]), "--format", "sh", "-o", p["env_file"]]
    if p["nccl_conf_file"]:
        argv += ["--format", "nccl-conf", "-o", p["nccl_conf_file"]]
    argv += ["--diff", "--mkdir"]
    if module.check_mode:
        argv.append("--check")
    if p["on_warnings"] == "fail":
        argv.append("--fail-on-warnings")
    if p["nccl_version"]:
        argv += ["--nccl-version", p["nccl_version"]]
    return argv + p["args"]


def unit_files(path, content):
    """plan_files' arguments for the unit and its enable link (content None: remove both)."""
    link = os.path.join(os.path.dirname(path), WANTED_BY + ".wants", os.path.basename(path))
    if content is not None:
        return [{"path": path, "content": content, "mode": "0644"}], [{"path": link, "src": path}], []
    return [], [], [link, path]


def boot_unit(module, path, content):
    """(results, diffs) after writing (content given) or removing (None) the unit and its
    enable link, with the file writer the other roles' boot units use."""
    try:
        changes, diffs = plan_files(*unit_files(path, content))
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
    if changes and not module.check_mode:
        apply_changes(changes)
        if os.path.isdir("/run/systemd/system"):  # systemd runs here
            rc, dummy, err = module.run_command(["systemctl", "daemon-reload"])
            if rc != 0:
                module.fail_json(msg="systemctl daemon-reload failed: %s" % err.strip())
    return [{"path": path, "changed": bool(changes), "backup": None}], diffs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type="path", required=True),
            root=dict(type="path", default="/"),
            env_file=dict(type="path", required=True),
            nccl_conf_file=dict(type="path"),
            nccl_version=dict(type="str", default=""),
            args=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int", default=120),
            on_warnings=dict(type="str", choices=["ignore", "report", "fail"], default="report"),
            unit_path=dict(type="path"),
            unit_content=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["nccl_version"] and not NCCL_RELEASE.match(p["nccl_version"]):
        module.fail_json(msg="nccl_version %r: expected an NCCL release like 2.21.5" % p["nccl_version"])
    if not os.path.exists(p["command"]):
        if module.check_mode:  # the agent itself is installed by this same run
            module.exit_json(changed=True, files=[], features=None,
                             msg="%s is not installed yet: the env would be planned after it is" % p["command"])
        module.fail_json(msg="%s not found: run the rocetune_agent role first" % p["command"])

    if p["unit_path"]:  # a refused unit target fails before the agent writes the env files
        try:
            plan_files(*unit_files(p["unit_path"], p["unit_content"]))
        except FileTargetError as exc:
            module.fail_json(msg=str(exc))
    data = run_agent(module, agent_argv(module), p["timeout"])
    agent_warnings = data.get("warnings") or []
    writes = data["data"]["env"]["writes"]
    results = [{"path": w["path"], "changed": w["changed"], "backup": w["backup"]} for w in writes]
    diffs = [{"before_header": w["path"], "after_header": w["path"],
              "before": w["before"] or "", "after": w["after"]} for w in writes if w["changed"]]
    diffs += [{"before_header": w["backup"], "after_header": w["backup"], "before": "",
               "after": w["before"]} for w in writes if w["changed"] and w["backup"]]
    if p["unit_path"]:
        unit_results, unit_diffs = boot_unit(module, p["unit_path"], p["unit_content"])
        results += unit_results
        diffs += unit_diffs

    if p["on_warnings"] == "report":
        for w in agent_warnings:
            module.warn("rocetune: %s" % w)
    module.exit_json(changed=any(r["changed"] for r in results), diff=diffs, files=results,
                     features=data["data"].get("features"),
                     findings=data["data"].get("findings") or [],
                     env=(data["data"].get("plan") or {}).get("env") or {},
                     agent_warnings=agent_warnings)


if __name__ == "__main__":
    main()
