# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The roce_qos_apply module's body: its argument spec and run(module), here so that the
preflight runs the very same code in check mode (rocetune_preflight); plus what its action
plugin (and the preflight's) does on the controller with the plan: load plan_content with
PyYAML there, and check a node's plan file the node could not read (no PyYAML yet).

Order: interface names, the ETS setting and the plan (the one about to be installed, else the
node's file) are checked first, before the tools are looked for, so check mode on a node without
the tools still refuses a broken plan. Then the tools (missing: stop, pending), the interfaces,
the link-flap guard and each NIC's state; then the NICs; then the plan file and the boot unit."""

from __future__ import absolute_import, division, print_function

import json
import os

__metaclass__ = type

try:
    # The boot script's libraries: the module installs its own copies of them (BOOT_LIBS).
    from ansible_collections.rocetune.fabric.plugins.module_utils import (
        roce_qos_buffer,
        roce_qos_state,
        rocetune_nic_facts,
        rocetune_qos_plan,
        rocetune_qos_tools,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_state import (
        NotSupported,
        QosError,
        desired,
        driver_of,
        interface_plan,
        load_plan,
        parse_plan,
        pick_backend,
        plan_from_doc,
        rdma_cm_writes,
        rdma_ports,
        traffic_class,
        write_value,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
        FileTargetError,
        apply_changes,
        plan_files,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import read_text as read
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_links import (
        interface_name_problems,
        read_connection_interfaces,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import missing_packages
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_qos_plan import QosPlanError, validate_ets
except ImportError:  # unit tests import the files as plain modules
    import roce_qos_buffer  # pylint: disable=import-error
    import roce_qos_state  # pylint: disable=import-error
    import rocetune_nic_facts  # pylint: disable=import-error
    import rocetune_qos_plan  # pylint: disable=import-error
    import rocetune_qos_tools  # pylint: disable=import-error
    from roce_qos_state import (  # pylint: disable=import-error
        NotSupported,
        QosError,
        desired,
        driver_of,
        interface_plan,
        load_plan,
        parse_plan,
        pick_backend,
        plan_from_doc,
        rdma_cm_writes,
        rdma_ports,
        traffic_class,
        write_value,
    )
    from rocetune_files import FileTargetError, apply_changes, plan_files  # pylint: disable=import-error
    from rocetune_files import read_text as read  # pylint: disable=import-error
    from rocetune_links import interface_name_problems, read_connection_interfaces  # pylint: disable=import-error
    from rocetune_packages import missing_packages  # pylint: disable=import-error
    from rocetune_qos_plan import QosPlanError, validate_ets  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    plan_content=dict(type="str", default=""),
    plan_src=dict(type="str", default=""),
    plan_doc=dict(type="raw"),
    boot=dict(type="dict"),
    packages=dict(type="raw", default=[]),
    interfaces=dict(type="list", elements="str", required=True),
    plan_file=dict(type="path", required=True),
    backend=dict(type="str", choices=["auto", "dcb", "mlnx_qos"], default="auto"),
    ets=dict(type="dict", default={}),
    dcqcn=dict(type="bool", default=True),
    pause_off=dict(type="bool", default=True),
    rdma_cm=dict(type="bool", default=True),
    required=dict(type="bool", default=False),
    allow_link_flap=dict(type="bool", default=False),
    connection_addresses=dict(type="list", elements="str", default=[]),
)

NOTHING = "; nothing was changed"
MAX_PLAN_BYTES = 1 << 20


def plan_source(params):
    """How messages name the plan: the controller's file it came from, else the node's file."""
    if params.get("plan_content") or params.get("plan_doc") is not None:
        return "%s (roce_qos_plan_src)" % (params.get("plan_src") or "the plan given")
    return params["plan_file"]


# ---------------------------------------------------------------------------------------------
# On the controller: the action plugin's and the preflight's part


def controller_args(args, yaml_load):
    """The module's arguments with plan_content loaded on the controller (plan_doc), so that the
    node needs no PyYAML to have the plan checked; QosError names the file and every field."""
    args = dict(args)
    content = args.get("plan_content") or ""
    if content:
        import yaml  # ansible-core's own dependency on the controller
        try:
            doc = yaml_load(content) if content.strip() else None
        except yaml.YAMLError as exc:
            raise QosError("%s: not valid YAML: %s" % (plan_source(args), " ".join(str(exc).split()))) from exc
        plan_from_doc(doc, plan_source(args))
        args["plan_doc"] = doc
    return args


def controller_result(args, result, yaml_load):
    """The module's result with the node's plan file checked here when the node could not read
    it (no PyYAML there yet): a broken plan fails before any package is installed."""
    text = result.pop("plan_text", None)
    if text is None or result.get("failed"):
        return result
    try:
        parse_plan(text, yaml_load, args.get("plan_file"))
    except QosError as exc:
        return dict(result, failed=True, changed=False, msg="QoS plan %s%s" % (exc, NOTHING))
    except Exception as exc:  # a YAML error, named with the file  # pylint: disable=broad-except
        said = " ".join(str(exc).split())
        return dict(result, failed=True, changed=False,
                    msg="QoS plan %s: not valid YAML: %s%s" % (args.get("plan_file"), said, NOTHING))
    return result


# ---------------------------------------------------------------------------------------------
# On the node


def read_plan(module, p):
    """(plan, None), or (None, text) when this node has no PyYAML to read its plan file with (the
    controller checks the text). A plan that cannot be used fails the call, naming its file."""
    source = plan_source(p)
    try:
        if p["plan_doc"] is not None:
            return plan_from_doc(p["plan_doc"], source), None
        if not p["plan_content"]:
            # No plan file, or an empty one: the built-in defaults, without importing a YAML
            # reader (a tenth of this module's start).
            text = read(p["plan_file"])
            if text is None:
                return load_plan(None, None), None
            if not text.strip():
                return parse_plan(text, None, p["plan_file"]), None
        try:
            import yaml
        except ImportError:
            if p["plan_content"]:
                return None, p["plan_content"]
            text = read(p["plan_file"])
            return (load_plan(None, None), None) if text is None else (None, text[:MAX_PLAN_BYTES])
        try:
            if p["plan_content"]:
                return parse_plan(p["plan_content"], yaml.safe_load, source), None
            return load_plan(p["plan_file"], yaml.safe_load), None
        except yaml.YAMLError as exc:
            raise QosError("%s: not valid YAML: %s" % (source, " ".join(str(exc).split()))) from exc
    except QosError as exc:
        module.fail_json(msg="QoS plan %s%s" % (exc, NOTHING))


def plan_files_wanted(plan_file, plan_content):
    return [{"path": plan_file, "content": plan_content, "mode": "0644"}] if plan_content else [], [], []


# What the boot script imports from beside it: the module's own decisions, the plan's one
# validator and the reader of the QoS tools' outputs (both the agent's too), the buffer decisions
# and the NIC driver facts (the registry's). Written from the source this module runs (its
# payload), so the boot re-applies with the code that applied now, and no copy travels as an argument.
BOOT_LIBS = (roce_qos_state, rocetune_qos_plan, roce_qos_buffer, rocetune_qos_tools, rocetune_nic_facts)


def boot_lib_files(lib_dir):
    """[{path, content, mode}] of BOOT_LIBS in lib_dir, each its module's source as imported."""
    files = []
    for lib in BOOT_LIBS:
        name = lib.__name__.rpartition(".")[2]
        loader = getattr(lib, "__loader__", None)
        source = loader.get_source(lib.__name__) if hasattr(loader, "get_source") else None
        if not source:
            raise QosError("the boot script's library %s has no source in this module's payload" % name)
        files.append({"path": os.path.join(lib_dir, name + ".py"), "content": source, "mode": "0644"})
    return files


def boot_files_wanted(boot):
    """(files, links, absent) of the boot unit: script, its libraries (in C(lib_dir)), settings,
    unit, and its enable link; with C(state: absent), all of them removed (a unit turned off is
    not left enabled)."""
    if not boot:
        return [], [], []
    unit = boot["unit"]["path"]
    link = os.path.join(os.path.dirname(unit), "multi-user.target.wants", os.path.basename(unit))
    libs = boot_lib_files(boot["lib_dir"]) if boot.get("lib_dir") else []
    if boot.get("state") == "absent":
        return [], [], [link, unit, boot["script"]["path"], boot["settings"]["path"]] + [lib["path"] for lib in libs]
    files = [
        {"path": boot["script"]["path"], "content": boot["script"]["content"], "mode": "0644"},
    ] + libs + [
        {"path": boot["settings"]["path"], "mode": "0644",
         "content": json.dumps(boot["settings"]["data"], indent=2, sort_keys=True) + "\n"},
        {"path": unit, "content": boot["unit"]["content"], "mode": "0644"},
    ]
    return files, [{"path": link, "src": unit}], []


def install(module, wanted, result, unit=None):
    """Write what differs of (files, links, absent) into result's written/diff; reload systemd
    when the unit changed."""
    try:
        changes, diffs = plan_files(*wanted)
    except FileTargetError as exc:
        module.fail_json(msg=str(exc))
    if changes and not module.check_mode:
        try:
            apply_changes(changes)
        except (OSError, FileTargetError) as exc:
            module.fail_json(msg="cannot write %s: %s; what was written before it: %s" % (
                ", ".join(c[1]["path"] for c in changes), getattr(exc, "strerror", None) or exc,
                ", ".join(result["written"]) or "nothing"), **result)
        if any(c[1]["path"] == unit for c in changes) and os.path.isdir("/run/systemd/system"):
            module.run_command([module.get_bin_path("systemctl", required=True), "daemon-reload"])
    result["written"] += [c[1]["path"] for c in changes]
    result["diff"] += diffs
    result["changed"] |= bool(changes)


def _checked_input(p):
    """(the problems with the module's own input, the validated ETS setting, the boot unit's
    (files, links, absent))."""
    problems = interface_name_problems(p["interfaces"], "roce_qos_interfaces")
    ets, boot = None, ([], [], [])
    try:
        ets = validate_ets(p["ets"], "roce_qos_ets")
    except QosPlanError as exc:
        problems.append(exc.describe())
    try:
        boot = boot_files_wanted(p["boot"])
    except QosError as exc:
        problems.append(str(exc))
    except (KeyError, TypeError, AttributeError) as exc:
        problems.append("boot: the re-apply unit needs script, settings and unit, each a mapping with a path"
                        " (%s: %s)" % (type(exc).__name__, exc))
    return problems, ets, boot


def run(module):
    p = module.params
    result = dict(changed=False, written=[], diff=[], missing_packages=[], pending=False, interfaces={})
    problems, ets, boot_wanted = _checked_input(p)
    if problems:
        module.fail_json(msg="; ".join(problems) + NOTHING)
    # The plan (the one about to be installed, not the one on disk) is checked before the tools
    # are looked for: check mode on a node without them refuses a broken plan all the same.
    plan, plan_text = read_plan(module, p)
    dummy, result["missing_packages"] = missing_packages(module, p["packages"], "roce_qos_packages")
    if result["missing_packages"]:
        result["pending"] = True
        if plan_text is not None:
            result["plan_text"] = plan_text  # for the controller to check (the action plugin does)
        finish(module, result)
    if plan is None:
        module.fail_json(msg="PyYAML is missing on the node: install python3-yaml (roce_qos_packages)" + NOTHING)
    for warning in plan.pop("warnings", []):
        module.warn("QoS plan %s: %s" % (plan["source"], warning))
    refuse_missing_and_connection_interfaces(module, p)
    want = desired(plan, ets, p["dcqcn"])

    def run_tool(argv):
        path = module.get_bin_path(argv[0])
        if not path:
            return 127, "", "%s: not installed" % argv[0]
        return module.run_command([path] + argv[1:])

    result["plan"] = plan
    skipped, errors, steps, buffer_unsupported = [], [], [], []
    for ifname in p["interfaces"]:
        driver = driver_of(ifname, run_tool)
        backend = pick_backend(p["backend"], driver, bool(module.get_bin_path("mlnx_qos")))
        if not module.get_bin_path(backend):
            errors.append("%s: %s is not installed (roce_qos_backend / roce_qos_packages)" % (ifname, backend))
            continue
        try:
            step = interface_plan(ifname, driver, backend, want, run_tool, read, p["pause_off"])
        except NotSupported as exc:
            skipped.append(str(exc))
            result["interfaces"][ifname] = {"driver": driver, "backend": backend, "not_supported": str(exc)}
            continue
        except QosError as exc:
            errors.append(str(exc))
            continue
        step["ifname"] = ifname
        result["interfaces"][ifname] = {"driver": driver, "backend": backend,
                                        "commands": [" ".join(c) for c in step["commands"]],
                                        "writes": ["%s = %s" % w for w in step["writes"]],
                                        "ecn_unexposed": step["ecn_unexposed"]}
        steps.append(step)
        if step["ecn_unexposed"]:
            module.warn(step["ecn_unexposed"])
        report_buffer(ifname, step["buffer"], result, buffer_unsupported)
    cm_writes = rdma_cm_writes(rdma_ports(p["interfaces"]), traffic_class(plan), read) if p["rdma_cm"] else []
    if p["rdma_cm"]:
        result["rdma_cm"] = ["%s = %s" % w for w in cm_writes]
    if skipped and p["required"]:
        errors += ["%s (roce_qos_required: true)" % s for s in skipped]
    if buffer_unsupported and p["required"]:
        errors += ["%s (roce_qos_required: true)" % s for s in buffer_unsupported]
    if errors:
        module.fail_json(msg="; ".join(errors) + NOTHING, **result)
    if skipped:
        module.warn("; ".join(s + ": skipped" for s in skipped))
    for message in buffer_unsupported:
        module.warn(message)
    result["changed"] = any(st["commands"] or st["writes"] for st in steps) or bool(cm_writes)
    result["diff"] += node_diff(steps, cm_writes, read)

    if not module.check_mode:
        apply_steps(module, run_tool, steps, cm_writes, result)
    install(module, plan_files_wanted(p["plan_file"], p["plan_content"]), result)
    install(module, boot_wanted, result, unit=(p["boot"] or {}).get("unit", {}).get("path"))
    finish(module, result)


def finish(module, result):
    """exit_json, with the diff only in diff mode (as ansible.builtin's modules do)."""
    if not getattr(module, "_diff", False):
        result.pop("diff", None)
    module.exit_json(**result)


def node_diff(steps, cm_writes, reader):
    """The NICs' QoS as it is and as it becomes: `ens1np0 pfc: 0,0,0,0,... -> 0,0,0,1,...`."""
    before, after = [], []
    for step in steps:
        for what, now, wanted in step.get("notes", []):
            label = what if what.startswith("/") else "%s %s" % (step["ifname"], what)
            before.append("%s: %s\n" % (label, now))
            after.append("%s: %s\n" % (label, wanted))
    for path, value in cm_writes:
        before.append("%s: %s\n" % (path, (reader(path) or "").strip() or "(not set)"))
        after.append("%s: %s\n" % (path, value))
    if not before:
        return []
    return [{"before_header": "NIC QoS (node)", "after_header": "NIC QoS (node, from the plan)",
             "before": "".join(before), "after": "".join(after)}]


def report_buffer(ifname, step, result, unsupported):
    """The plan's lossless buffers on one interface into the result: what the NIC cannot take
    (a warning, or a failure under `required`) and the change, as a diff of the NIC's settings."""
    if step is None:
        return
    unsupported += step["not_supported"]
    if step["not_supported"]:
        result["interfaces"][ifname]["buffer_not_supported"] = step["not_supported"]
    if step["commands"]:
        result["diff"].append({"before_header": "%s: lossless buffers" % ifname, "before": step["before"],
                               "after_header": "%s: lossless buffers (plan)" % ifname, "after": step["after"]})


def refuse_missing_and_connection_interfaces(module, p):
    missing = [i for i in p["interfaces"] if not os.path.isdir("/sys/class/net/%s" % i)]
    if missing:
        module.fail_json(msg="no interface %s on this node (check roce_qos_interfaces)%s"
                             % (", ".join(missing), NOTHING))
    if p["allow_link_flap"]:
        return
    protected, error, dummy = read_connection_interfaces(module, p["connection_addresses"])
    if error:
        module.fail_json(msg=error)
    refused = ["refusing to change the QoS of %s: %s (set roce_qos_allow_link_flap: true to allow it)"
               % (i, protected[i]) for i in p["interfaces"] if i in protected]
    if refused:
        module.fail_json(msg="; ".join(refused) + NOTHING, protected=protected)


def apply_steps(module, run_tool, steps, cm_writes, result):
    errors = []
    for step in steps:
        for cmd in step["commands"]:
            rc, out, err = run_tool(cmd)
            if rc != 0:
                errors.append("%s: %s" % (" ".join(cmd), (err or out).strip()))
        for path, value in step["writes"]:
            try:
                write_value(path, value)
            except OSError as exc:
                errors.append("%s: %s" % (path, exc))
    for path, value in cm_writes:
        try:
            write_value(path, value)
        except OSError as exc:
            errors.append("%s: %s (is configfs mounted and rdma_cm loaded?)" % (path, exc))
    if errors:
        module.fail_json(msg="; ".join(errors), **result)
