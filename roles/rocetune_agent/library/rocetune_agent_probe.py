#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Run `rocetune probe` on a node and return its Features and rendered env files (read-only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_probe
short_description: Probe a node with rocetune and return its Features and tuned env (read-only)
description:
  - Runs C(rocetune probe --json --format FIRST) once on the node, renders the other
    formats from the same Features (C(--features)), and returns the Features, the rendered
    texts and any file the env points at (an NCCL topology XML), so the role writes the files
    with Ansible's own modules (diff, check mode, idempotence).
  - Never changes the node. Runs in check mode too.
options:
  executable:
    description: The rocetune command.
    type: path
    required: true
  root:
    description: Host root to probe (C(/) for the node itself, or an unpacked fixture root).
    type: path
    default: /
  formats:
    description: Env formats to render (C(rocetune probe --format)).
    type: list
    elements: str
    default: [sh, nccl-conf]
  args:
    description: Extra arguments for every C(rocetune probe) call.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds each call may take.
    type: int
    default: 120
  on_warnings:
    description:
      - What to do with the probe's warnings (sources that failed alone).
      - C(ignore) returns them only; C(report) also shows them as Ansible warnings; C(fail)
        fails the host.
    type: str
    choices: [ignore, report, fail]
    default: report
author: rocetune contributors
"""

RETURN = r"""
features:
  description: The node's Features (C(data.features) of the probe's JSON envelope).
  type: dict
  returned: success
env:
  description: Rendered text per format, e.g. C(env['sh']).
  type: dict
  returned: success
files:
  description:
    - Files the env points at (the NCCL topology XML of a flattened host), as
      C(path), C(key) (the variable naming the path), C(rule_id) and C(content).
  type: list
  elements: dict
  returned: success
plan_env:
  description: The planned variables, name to value.
  type: dict
  returned: success
probe_warnings:
  description: Warnings of the probe and the plan (sources that failed alone, uncertain choices).
  type: list
  elements: str
  returned: success
"""

import json
import os
import shutil
import subprocess
import tempfile

from ansible.module_utils.basic import AnsibleModule


def run(argv, timeout):
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    except OSError as exc:
        return 127, "", str(exc)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return 124, "", "timed out after %ss" % timeout


def last_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def call(module, argv, timeout):
    """Run a rocetune command with --json; its envelope, or fail the task clearly."""
    rc, out, err = run(argv, timeout)
    try:
        envelope = json.loads(out)
    except ValueError:
        module.fail_json(msg="`%s` exited %d without a JSON result: %s"
                         % (" ".join(argv), rc, last_line(err) or last_line(out) or "no output"),
                         rc=rc, stderr=err)
    if envelope.get("status") == "error" or not isinstance(envelope.get("data"), dict):
        errors = envelope.get("errors") or []
        first = errors[0] if errors else {}
        module.fail_json(msg="`%s` failed on this node (exit %s): %s"
                         % (" ".join(argv), envelope.get("exit_code", rc), first.get("message", "no data")),
                         hint=first.get("hint"), errors=errors, rc=rc)
    return envelope, out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            executable=dict(type="path", required=True),
            root=dict(type="path", default="/"),
            formats=dict(type="list", elements="str", default=["sh", "nccl-conf"]),
            args=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int", default=120),
            on_warnings=dict(type="str", choices=["ignore", "report", "fail"], default="report"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not p["formats"]:
        module.fail_json(msg="formats must name at least one env format")
    base = [p["executable"], "probe", "--root", p["root"], "--json"]
    tmp = tempfile.mkdtemp(prefix="rocetune-probe-")
    try:
        # 1. Probe once: Features + the first format + the plan.
        first, raw = call(module, base + ["--format", p["formats"][0]] + p["args"], p["timeout"])
        data = first["data"]
        if "features" not in data:
            module.fail_json(msg="rocetune probe returned no features")
        saved = os.path.join(tmp, "features.json")
        with open(saved, "w") as fh:
            fh.write(raw)
        envelopes = {p["formats"][0]: first}
        # 2. The other formats from the same Features (no second probe: same input, same bytes).
        for fmt in p["formats"][1:]:
            envelopes[fmt], _ = call(module, base + ["--features", saved, "--format", fmt] + p["args"],
                                     p["timeout"])
        rendered = {}
        for fmt, env in envelopes.items():
            text = ((env["data"].get("env") or {}).get("text"))
            if text is None:
                module.fail_json(msg="rocetune probe --format %s returned no env text" % fmt)
            rendered[fmt] = text
        # 3. Files the env points at (the NCCL topology XML of a flattened host): rendered into
        #    a scratch directory; they belong at the paths the plan's variables name.
        plan = data.get("plan") or {}
        files = []
        if plan.get("files"):
            scratch = os.path.join(tmp, "out")
            os.mkdir(scratch)
            out_env, _ = call(module, base + ["--features", saved, "--format", p["formats"][0],
                                              "-o", os.path.join(scratch, "env")] + p["args"], p["timeout"])
            written = {os.path.basename(f): f for f in (out_env["data"].get("env") or {}).get("files") or []}
            for f in plan["files"]:
                dest = (plan.get("env") or {}).get(f["key"])
                if f["name"] not in written or not dest:
                    module.fail_json(msg="rocetune planned %s for %s but did not write it" % (f["name"], f["key"]))
                with open(written[f["name"]]) as fh:
                    files.append(dict(path=dest, key=f["key"], rule_id=f.get("rule_id"), content=fh.read()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    warnings = []
    for env in envelopes.values():
        for w in env.get("warnings") or []:
            w = w if isinstance(w, str) else json.dumps(w, sort_keys=True)
            if w not in warnings:
                warnings.append(w)
    if warnings and p["on_warnings"] == "fail":
        module.fail_json(msg="rocetune probe reported %d warning(s): %s" % (len(warnings), "; ".join(warnings)),
                         hint="fix the node, or set rocetune_agent_probe_warnings: report",
                         probe_warnings=warnings)
    if p["on_warnings"] == "report":
        for w in warnings:
            module.warn("rocetune probe: %s" % w)
    module.exit_json(changed=False, features=data["features"], env=rendered, files=files,
                     plan_env=plan.get("env") or {}, probe_warnings=warnings)


if __name__ == "__main__":
    main()
