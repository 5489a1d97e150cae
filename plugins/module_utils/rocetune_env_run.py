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
import shutil
import tempfile

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
        FileTargetError,
        apply_changes,
        plan_files,
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
    no_degrade=dict(type="bool", default=True),
    expect=dict(type="str"),
    expect_path=dict(type="path", default="/etc/rocetune/expect.yml"),
    doctor_config=dict(type="str"),
    doctor_config_path=dict(type="path", default="/etc/rocetune/doctor.yml"),
    units=dict(type="list", elements="dict", default=[], options={
        "path": {"type": "path", "required": True},
        "content": {"type": "str"},
        "wanted_by": {"type": "str"},
    }),
    dirs=dict(type="list", elements="path", default=[]),
)

WANTED_BY = "multi-user.target"
# Whole values: a trailing newline ("2.21.5\n", "x.service\n") is none of them.
NCCL_RELEASE = re.compile(r"^\d+\.\d+\.\d+\Z")
UNIT_FILE = re.compile(r"^[A-Za-z0-9_.@-]+\.(service|timer)\Z")
TARGET = re.compile(r"^[A-Za-z0-9_.@-]+\.target\Z")
# The first line of the files this module writes from the role's variables: a file without it is
# the site's own and is never removed.
MANAGED_HEADER = "# Written by rocetune's rocetune_env role"


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
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        module.fail_json(msg="rocetune env on this node (exit %s): %s"
                         % (envelope.get("exit_code"), first.get("message", "no data")),
                         hint=first.get("hint"), errors=envelope.get("errors"),
                         refused=(data.get("refused") or {}).get("reasons") or [],
                         agent_warnings=envelope.get("warnings") or [], files=[])
    return envelope


def run_agent_named(module, argv, timeout, given):
    """run_agent, with the private copies named in any message as the variables they hold."""
    def role_var(option):
        return "rocetune_env_expect" if option == "--expect" else "rocetune_env_doctor_config"

    names = {path: "%s (the role's %s)" % (option.lstrip("-").replace("-", "_"), role_var(option))
             for option, path in given.items() if path != os.devnull}
    real_fail = module.fail_json

    def fail_json(**kw):
        for path, name in names.items():
            kw["msg"] = kw.get("msg", "").replace(path, name)
        real_fail(**kw)

    module.fail_json = fail_json
    try:
        return run_agent(module, argv, timeout)
    finally:
        module.fail_json = real_fail


def agent_argv(module, given=None):
    """The agent's command line; `given` maps --expect / --doctor-config to the private copies
    of the content this run will write."""
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
    if p["no_degrade"]:
        argv.append("--no-degrade")
    for option, path in sorted((given or {}).items()):
        argv += [option, path]
    return argv + p["args"]


def unit_files(path, content, wanted_by=WANTED_BY):
    """plan_files' arguments for a unit and its enable link (content None: remove both)."""
    link = os.path.join(os.path.dirname(path), wanted_by + ".wants", os.path.basename(path)) if wanted_by else None
    if content is not None:
        return ([{"path": path, "content": content, "mode": "0644"}],
                [{"path": link, "src": path}] if link else [], [])
    return [], [], ([link] if link else []) + [path]


def managed_file(path, content):
    """plan_files' arguments for a file this module writes from the role's variables: written
    (content given), removed where it carries MANAGED_HEADER (None), else left alone."""
    if content is not None:
        return [{"path": path, "content": content, "mode": "0644"}], [], []
    try:
        with open(path, "rb") as fh:
            ours = fh.read(len(MANAGED_HEADER)).decode("utf-8", "replace") == MANAGED_HEADER
    except OSError:
        ours = False
    return [], [], [path] if ours else []


def side_files(module):
    """[(path, is_unit, wanted_by, (files, links, absent))] of everything besides the env: the
    boot unit, further units, the expectations and the check configuration."""
    p = module.params
    out = []
    if p["unit_path"]:
        # An empty unit_content removes the unit, as an omitted one does.
        out.append((p["unit_path"], True, WANTED_BY, unit_files(p["unit_path"], p["unit_content"] or None)))
    for unit in p["units"]:
        out.append((unit["path"], True, unit.get("wanted_by"),
                    unit_files(unit["path"], unit.get("content") or None, unit.get("wanted_by"))))
    out.append((p["expect_path"], False, None, managed_file(p["expect_path"], p["expect"])))
    out.append((p["doctor_config_path"], False, None, managed_file(p["doctor_config_path"], p["doctor_config"])))
    return out


def plan_side_files(module):
    """(path, is_unit, wanted_by, content given, changes, diffs) per side file; a refused target
    fails the module before anything is written."""
    planned = []
    for path, is_unit, wanted_by, args in side_files(module):
        try:
            changes, diffs = plan_files(*args)
        except FileTargetError as exc:
            module.fail_json(msg=str(exc))
        planned.append((path, is_unit, wanted_by, bool(args[0]), changes, diffs))
    return planned


def apply_side_files(module, planned):
    """Write what changed; daemon-reload when a unit changed and start (or stop) a timer whose
    file changed, where systemd runs."""
    changed = [x for x in planned if x[4]]
    if not changed or module.check_mode:
        return
    systemd = os.path.isdir("/run/systemd/system")
    for path, is_unit, dummy, present, changes, dummy2 in changed:
        if is_unit and not present and systemd and path.endswith(".timer"):
            module.run_command(["systemctl", "stop", os.path.basename(path)])
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (path, getattr(exc, "strerror", None) or exc))
    if systemd and any(x[1] for x in changed):
        rc, dummy, err = module.run_command(["systemctl", "daemon-reload"])
        if rc != 0:
            module.fail_json(msg="systemctl daemon-reload failed: %s" % err.strip())
        for path, is_unit, dummy, present, dummy2, dummy3 in changed:
            if is_unit and present and path.endswith(".timer"):
                rc, dummy, err = module.run_command(["systemctl", "start", os.path.basename(path)])
                if rc != 0:
                    module.fail_json(msg="systemctl start %s failed: %s" % (os.path.basename(path), err.strip()))


def missing_dirs(module):
    """The directories of `dirs` that do not exist yet, with their missing parents, parents
    first. An existing one is left as it is (its mode and owner are its package's); a path
    through a file is refused before anything is written."""
    out = []
    for path in module.params["dirs"]:
        if not os.path.isabs(path):
            module.fail_json(msg="dirs: %r is not an absolute path" % path)
        chain, d = [], os.path.normpath(path)
        while not os.path.lexists(d):
            chain.append(d)
            d = os.path.dirname(d)
        if not os.path.isdir(d):
            module.fail_json(msg="dirs: cannot make %s: %s is not a directory" % (path, d))
        out.extend(x for x in reversed(chain) if x not in out)
    return out


def make_dirs(module, dirs):
    """Make each directory (0755) unless in check mode."""
    if module.check_mode:
        return
    for d in dirs:
        try:
            os.mkdir(d, 0o755)
            os.chmod(d, 0o755)  # whatever the umask
        except OSError as exc:
            module.fail_json(msg="cannot make %s: %s" % (d, exc.strerror or exc))


def private_copies(module, tmp):
    """--expect / --doctor-config -> a private copy of the content the agent checks and plans
    with before the real file is written; an empty copy (nothing declared) where a file this
    module wrote is about to be removed: the agent reads only regular files, never a device."""
    p = module.params
    given = {}
    for option, key, path_key in (("--expect", "expect", "expect_path"),
                                  ("--doctor-config", "doctor_config", "doctor_config_path")):
        if p[key] is not None:
            copy = os.path.join(tmp, "rocetune_env_%s.yml" % key)
            with open(copy, "w") as fh:
                fh.write(p[key])
            given[option] = copy
        elif managed_file(p[path_key], None)[2]:
            copy = os.path.join(tmp, "rocetune_env_%s.yml" % key)
            with open(copy, "w") as fh:
                fh.write("")
            given[option] = copy
    return given


def run(module):
    p = module.params
    # The role passes "" where it has nothing to give (its arguments are one dict of variables,
    # which cannot hold `omit`): the same as omitted.
    for key in ("nccl_conf_file", "unit_content", "expect", "doctor_config"):
        if p[key] == "":
            p[key] = None
    if p["nccl_version"] and not NCCL_RELEASE.match(p["nccl_version"]):
        module.fail_json(msg="nccl_version %r: expected an NCCL release like 2.21.5" % p["nccl_version"])
    if not os.path.exists(p["command"]):
        if module.check_mode:  # the agent itself is installed by this same run
            module.exit_json(changed=True, files=[], features=None,
                             msg="%s is not installed yet: the env would be planned after it is" % p["command"])
        module.fail_json(msg="%s not found: run the rocetune_agent role first" % p["command"])

    for unit in p["units"]:
        if not unit["path"].startswith("/etc/systemd/system/") or not UNIT_FILE.match(
                os.path.basename(unit["path"])):
            module.fail_json(msg="units: %r is not a .service or .timer under /etc/systemd/system" % unit["path"])
        if unit.get("wanted_by") and not TARGET.match(unit["wanted_by"]):
            module.fail_json(msg="units: wanted_by %r of %s is not a target" % (unit["wanted_by"], unit["path"]))
    # A refused target fails before the agent writes the env files.
    planned = plan_side_files(module)
    # Made first: a directory that cannot be made fails before anything is written.
    dirs = missing_dirs(module)
    make_dirs(module, dirs)
    tmp = tempfile.mkdtemp(prefix="rocetune-env-")
    try:
        given = private_copies(module, tmp)
        data = run_agent_named(module, agent_argv(module, given), p["timeout"], given)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    agent_warnings = data.get("warnings") or []
    writes = data["data"]["env"]["writes"]
    results = [{"path": w["path"], "changed": w["changed"], "backup": w["backup"]} for w in writes]
    diffs = [{"before_header": w["path"], "after_header": w["path"],
              "before": w["before"] or "", "after": w["after"]} for w in writes if w["changed"]]
    diffs += [{"before_header": w["backup"], "after_header": w["backup"], "before": "",
               "after": w["before"]} for w in writes if w["changed"] and w["backup"]]
    apply_side_files(module, planned)
    results += [{"path": d, "changed": True, "backup": None} for d in dirs]
    diffs += [{"before": {"path": d, "state": "absent"}, "after": {"path": d, "state": "directory"}} for d in dirs]
    for path, dummy, dummy2, dummy3, changes, side_diffs in planned:
        if changes or path == p["unit_path"]:
            results.append({"path": path, "changed": bool(changes), "backup": None})
        diffs += side_diffs

    if p["on_warnings"] == "report":
        for w in agent_warnings:
            module.warn("rocetune: %s" % w)
    extra = dict(diff=diffs) if getattr(module, "_diff", False) else {}
    module.exit_json(changed=any(r["changed"] for r in results), files=results,
                     features=data["data"].get("features"),
                     findings=data["data"].get("findings") or [],
                     env=(data["data"].get("plan") or {}).get("env") or {},
                     agent_warnings=agent_warnings, **extra)
