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
  - Runs C(rocetune --json env --env-dir DIR --format sh [--format nccl-conf]) once on the node
    (read-only), then writes the env file, NCCL's config file and every file the env points at
    (an NCCL topology XML on a flattened host), each only when its content differs.
  - Files the env points at are written before the env file, so an env never names a missing file.
  - A file at I(nccl_conf_file) that rocetune did not write (no rocetune header) is kept once as
    C(<file>.rocetune-orig) before it is replaced.
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
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import read_text as read

MARKER = "# rocetune "
BACKUP_SUFFIX = ".rocetune-orig"
WANTED_BY = "multi-user.target"


def run_agent(module, argv, timeout):
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
        module.fail_json(msg="rocetune env failed on this node (exit %s): %s"
                         % (envelope.get("exit_code"), first.get("message", "no data")),
                         hint=first.get("hint"), errors=envelope.get("errors"))
    return envelope


def write(module, path, content):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".rocetune-", dir=directory)
    with os.fdopen(fd, "wb") as fh:
        fh.write(content.encode("utf-8"))
    os.chmod(tmp, 0o644)
    module.atomic_move(tmp, path)


def boot_unit(module, path, content, results, diffs):
    """Write (content given) or remove (None) the unit and its enable link; True if changed."""
    link = os.path.join(os.path.dirname(path), WANTED_BY + ".wants", os.path.basename(path))
    before = read(path)
    link_ok = os.path.islink(link) and os.readlink(link) == path
    if content is not None:
        unit_changed, link_changed = before != content, not link_ok
    else:
        unit_changed, link_changed = before is not None, os.path.lexists(link)
    if unit_changed:
        diffs.append({"before_header": path, "after_header": path,
                      "before": before or "", "after": content or ""})
    if link_changed:
        diffs.append({"before_header": link, "after_header": link,
                      "before": "-> %s\n" % os.readlink(link) if os.path.islink(link) else "",
                      "after": "-> %s\n" % path if content is not None else ""})
    if not module.check_mode:
        if unit_changed:
            if content is None:
                os.unlink(path)
            else:
                write(module, path, content)
        if link_changed:
            if os.path.lexists(link):
                os.unlink(link)
            if content is not None:
                if not os.path.isdir(os.path.dirname(link)):
                    os.makedirs(os.path.dirname(link), 0o755)
                os.symlink(path, link)
        if unit_changed and os.path.isdir("/run/systemd/system"):  # systemd runs here
            rc, dummy, err = module.run_command(["systemctl", "daemon-reload"])
            if rc != 0:
                module.fail_json(msg="systemctl daemon-reload failed: %s" % err.strip(), files=results)
    results.append({"path": path, "changed": unit_changed or link_changed, "backup": None})
    return unit_changed or link_changed


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
    if p["nccl_version"] and not re.match(r"^\d+\.\d+\.\d+$", p["nccl_version"]):
        module.fail_json(msg="nccl_version %r: expected an NCCL release like 2.21.5" % p["nccl_version"])
    if not os.path.exists(p["command"]):
        if module.check_mode:  # the agent itself is installed by this same run
            module.exit_json(changed=True, files=[], features=None,
                             msg="%s is not installed yet: the env would be planned after it is" % p["command"])
        module.fail_json(msg="%s not found: run the rocetune_agent role first" % p["command"])

    env_dir = os.path.dirname(p["env_file"])
    formats = ["sh"] + (["nccl-conf"] if p["nccl_conf_file"] else [])
    argv = [p["command"], "--root", p["root"], "--json", "env", "--env-dir", env_dir]
    for fmt in formats:
        argv += ["--format", fmt]
    if p["nccl_version"]:
        argv += ["--nccl-version", p["nccl_version"]]
    data = run_agent(module, argv + p["args"], p["timeout"])
    envelope_warnings = data.get("warnings") or []
    env = data["data"]["env"]
    if envelope_warnings and p["on_warnings"] == "fail":
        # Before anything is written: an env the operator refuses must not reach the node.
        module.fail_json(msg="rocetune reported %d warning(s), nothing was written: %s"
                         % (len(envelope_warnings), "; ".join(envelope_warnings)),
                         agent_warnings=envelope_warnings, files=[])

    targets = [(f["path"], f["content"]) for f in env.get("files") or []]
    targets.append((p["env_file"], env["texts"]["sh"]))
    if p["nccl_conf_file"]:
        targets.append((p["nccl_conf_file"], env["texts"]["nccl-conf"]))

    results, diffs, changed = [], [], False
    for path, content in targets:
        before = read(path)
        differs = before != content
        backup = None
        if differs and before is not None and path == p["nccl_conf_file"] \
                and not before.startswith(MARKER) and not os.path.exists(path + BACKUP_SUFFIX):
            backup = path + BACKUP_SUFFIX
        if differs:
            changed = True
            diffs.append({"before_header": path, "after_header": path,
                          "before": before or "", "after": content})
            if not module.check_mode:
                if backup:
                    write(module, backup, before)
                write(module, path, content)
        results.append({"path": path, "changed": differs, "backup": backup})
    if p["unit_path"]:
        changed = boot_unit(module, p["unit_path"], p["unit_content"], results, diffs) or changed

    if p["on_warnings"] == "report":
        for w in envelope_warnings:
            module.warn("rocetune: %s" % w)
    module.exit_json(changed=changed, diff=diffs, files=results,
                     features=data["data"].get("features"),
                     findings=data["data"].get("findings") or [],
                     env=(data["data"].get("plan") or {}).get("env") or {},
                     agent_warnings=envelope_warnings)


if __name__ == "__main__":
    main()
