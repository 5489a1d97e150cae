# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The rocetune_env module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight): the agent itself plans
and writes the files (`rocetune env`, with --check in check mode)."""

from __future__ import absolute_import, division, print_function

import json
import os
import re

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
        FileTargetError, apply_changes, plan_files
    )
except ImportError:  # unit tests import the files as plain modules
    from rocetune_files import FileTargetError, apply_changes, plan_files  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
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
)

WANTED_BY = "multi-user.target"


def run_agent(module, argv, timeout):
    """The agent's JSON envelope; a failure (its errors[], or no JSON) fails the module. The
    agent runs under coreutils' timeout(1), which ends it (and kills it 10 s later if need be)."""
    limit = module.get_bin_path("timeout")
    wrapped = [limit, "--kill-after=10", str(timeout)] + argv if limit else argv
    rc, out, err = module.run_command(wrapped)
    if limit and rc in (124, 137):  # timeout(1): the command timed out (124), or was killed (128 + 9)
        module.fail_json(msg="`%s` timed out after %ss" % (" ".join(argv), timeout))
    if rc == 127 and not out:
        module.fail_json(msg="cannot run %s: %s" % (argv[0], (err or "not found").strip()))
    try:
        envelope = json.loads(out)
    except ValueError:
        tail = [ln for ln in (err or out).splitlines() if ln.strip()]
        module.fail_json(msg="`%s` exited %d without a JSON result: %s"
                         % (" ".join(argv), rc, tail[-1] if tail else "no output"))
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


def run(module):
    p = module.params
    if p["nccl_version"] and not re.match(r"^\d+\.\d+\.\d+$", p["nccl_version"]):
        module.fail_json(msg="nccl_version %r: expected an NCCL release like 2.21.5" % p["nccl_version"])
    if not os.path.exists(p["command"]):
        if module.check_mode:  # the agent itself is installed by this same run
            module.exit_json(changed=True, files=[], features=None,
                             msg="%s is not installed yet: the env would be planned after it is" % p["command"])
        module.fail_json(msg="%s not found: run the rocetune_agent role first" % p["command"])

    if p["unit_path"]:  # a refused unit target fails before the agent writes the env files
        try:
            plan_files(*unit_files(p["unit_path"], p["unit_content"] or None))
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
        unit_results, unit_diffs = boot_unit(module, p["unit_path"], p["unit_content"] or None)
        results += unit_results
        diffs += unit_diffs

    if p["on_warnings"] == "report":
        for w in agent_warnings:
            module.warn("rocetune: %s" % w)
    extra = dict(diff=diffs) if getattr(module, "_diff", False) else {}
    module.exit_json(changed=any(r["changed"] for r in results), files=results,
                     features=data["data"].get("features"),
                     findings=data["data"].get("findings") or [],
                     env=(data["data"].get("plan") or {}).get("env") or {},
                     agent_warnings=agent_warnings, **extra)
