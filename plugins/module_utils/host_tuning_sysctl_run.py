# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The host_tuning_sysctl module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight). `module` is an
AnsibleModule or the preflight's stand-in; nothing here imports Ansible.

Order: every key and value, the boot order of the sysctl files and the keys this node lacks are
checked first (any refusal changes nothing); then the live values are written (a value the
kernel refuses or clamps restores the ones already written); then the file. A key the kernel
refuses at write time is not persisted, and with on_unsupported=fail it fails the call after
the live values were restored. A file that cannot be written restores the live values too."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.host_tuning_sysctl_state import (
        CHANGED,
        UNCHANGED,
        apply,
        boot_overrides,
        file_content,
        invalid_entries,
        plan,
        refused,
        restore,
        unsupported_message,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
        FileTargetError,
        apply_changes,
        plan_files,
    )
except ImportError:  # unit tests import the files as plain modules
    from host_tuning_sysctl_state import (  # pylint: disable=import-error
        CHANGED,
        UNCHANGED,
        apply,
        boot_overrides,
        file_content,
        invalid_entries,
        plan,
        refused,
        restore,
        unsupported_message,
    )
    from rocetune_files import FileTargetError, apply_changes, plan_files  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    sysctls=dict(type="dict", required=True),
    file=dict(type="path", default=""),
    apply=dict(type="bool", default=True),
    on_unsupported=dict(type="str", choices=["warn", "ignore", "fail"], default="fail"),
    proc_sys=dict(type="path", default="/proc/sys"),
    config_root=dict(type="path", default="/"),
)

NOTHING = "; nothing was changed"


def run(module):
    p = module.params
    problems = invalid_entries(p["sysctls"])
    if problems:
        module.fail_json(msg="host_tuning_sysctls: " + "; ".join(problems) + NOTHING)
    items = plan(p["proc_sys"], p["sysctls"])
    errors = []
    if p["file"]:
        overrides = boot_overrides(p["file"], p["sysctls"], p["config_root"])
        if overrides:
            errors.append("a file read after %s at boot sets these keys back: %s (remove them there, or name "
                          "host_tuning_sysctl_file so that it sorts after it; sysctl.d(5))"
                          % (p["file"], "; ".join(overrides)))
    message = unsupported_message(items, p["proc_sys"])
    if message and p["on_unsupported"] == "fail":
        errors.append(message + " (host_tuning_on_unsupported: fail)")
    live = items if p["apply"] else []
    result = dict(changed=False, sysctls=live, written=[],
                  unsupported=[i["key"] for i in items if i["state"] not in (CHANGED, UNCHANGED)])
    if errors:
        module.fail_json(msg="; ".join(errors) + NOTHING, **result)
    files = _files(p, items)
    try:
        changes, diffs = plan_files(files, [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc) + NOTHING, **result)
    result["changed"] = bool(changes) or any(i["state"] == CHANGED for i in live)
    if not module.check_mode:
        try:
            apply(p["proc_sys"], live)
        except ValueError as exc:
            module.fail_json(msg="%s; the values written were restored%s" % (exc, NOTHING), **result)
        if refused(live) and p["on_unsupported"] == "fail":
            restore(p["proc_sys"], live)
            module.fail_json(msg="%s (host_tuning_on_unsupported: fail); the values written were restored%s"
                             % (unsupported_message(refused(live)), NOTHING), **result)
        # What the kernel refused at write time is not persisted either.
        changes, diffs = plan_files(_files(p, items), [])
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            restore(p["proc_sys"], live)
            module.fail_json(msg="cannot write %s: %s; the live values were restored%s" % (p["file"], exc, NOTHING),
                             **result)
        result["changed"] = bool(changes) or any(i.get("written") for i in live)
        message = unsupported_message(items, p["proc_sys"])
        result["unsupported"] = [i["key"] for i in items if i["state"] not in (CHANGED, UNCHANGED)]
    result["written"] = [c[1]["path"] for c in changes]
    if getattr(module, "_diff", False):
        result["diff"] = diffs + _live_diff(live)
    if message and p["on_unsupported"] == "warn":
        module.warn(message)
    module.exit_json(**result)


def _files(p, items):
    if not p["file"]:
        return []
    return [{"path": p["file"], "content": file_content(p["sysctls"], items), "mode": "0644"}]


def _live_diff(items):
    """The running kernel's values that change, as a diff (only in diff mode)."""
    changing = [i for i in items if i["state"] == CHANGED or i.get("written")]
    if not changing:
        return []
    return [{"before_header": "sysctls (running kernel)", "after_header": "sysctls (running kernel, wanted)",
             "before": "".join("%s = %s\n" % (i["key"], i["have"]) for i in changing),
             "after": "".join("%s = %s\n" % (i["key"], i["want"]) for i in changing)}]
