#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""roce_qos on a node in one call: the plan file and the boot unit written, the fabric NICs'
QoS brought to what the plan says with only the commands needed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_qos_apply
short_description: RoCE QoS (trust, DSCP->priority, PFC and its buffers, ETS, ECN, pause, RDMA-CM ToS) from the QoS plan
description:
  - Reads rocetune's QoS plan with PyYAML, reads each NIC's state (C(dcb -N pfc/app/ets
    show) or C(mlnx_qos -i), C(ethtool -a), the ECN sysfs files, RDMA-CM configfs) and runs
    only the commands that change something.
  - A NIC without DCB (veth, virtio-net) is reported as not supported and skipped, or fails
    the host when I(required).
  - The plan's C(buffer) section (cable length, priority to buffer map, buffer sizes) is read
    from C(dcb -j buffer show) and the PFC C(delay), or from C(mlnx_qos -i), and set with C(dcb
    pfc set ... delay), C(dcb buffer set) or C(mlnx_qos --cable_len/--buffer_size/--prio2buffer);
    the change shows in the diff. What the NIC cannot take (no buffer settings, a cable length on a
    driver other than mlx5_core) is a warning, or fails the host when I(required).
  - Reads and checks everything first (the plan about to be installed, every interface, the
    tools, each NIC's state); any error fails the call, naming it, before anything changes.
  - Never changes an interface that carries the Ansible connection unless I(allow_link_flap).
  - Writes the plan file (from I(plan_content)) and the boot-time re-apply unit (I(boot)) after
    the NICs took the plan, only what differs, atomically, then reloads systemd when the unit
    changed.
  - When some of I(packages) are missing it stops there, changing nothing, and returns them in
    C(missing_packages) with C(pending) true; the role installs them and calls the module again.
  - Supports check mode (returns the commands it would run) and diff.
options:
  plan_content:
    description: The QoS plan to install at I(plan_file); empty leaves the file as it is.
    type: str
    default: ""
  boot:
    description:
      - The re-apply unit, C(script), the C(libs) it imports from beside it and C(unit) (each
        C(path), C(content)) and C(settings)
        (C(path), C(data), written as sorted JSON); enabled with the C(multi-user.target.wants)
        link C(systemctl enable) would make. With C(state) C(absent) (and the paths alone),
        the unit, its link, script and settings are removed. Omitted, nothing is done.
    type: dict
  packages:
    description: Tools the module needs, per OS family (C(Debian), C(RedHat)) or one list.
    type: raw
    default: []
  interfaces:
    description:
      - The fabric interfaces, each a netdev name (1 to 15 of C(A-Z a-z 0-9 _ . -)); any other
        fails the call before anything changes.
    type: list
    elements: str
    required: true
  plan_file:
    description: The QoS plan (absent means the built-in defaults of docs/qos.md).
    type: path
    required: true
  backend:
    description: C(dcb), C(mlnx_qos) or C(auto) (mlnx_qos where it is installed and the driver is mlx5_core).
    type: str
    choices: [auto, dcb, mlnx_qos]
    default: auto
  ets:
    description: ETS as C(prio_tc), C(tc_tsa), C(tc_bw) lists of 8; empty leaves ETS alone.
    type: dict
    default: {}
  dcqcn:
    description: Enable ECN (DCQCN) notification and reaction points on the RoCE priority.
    type: bool
    default: true
  pause_off:
    description: Turn 802.3x global pause off (PFC and global pause exclude each other).
    type: bool
    default: true
  rdma_cm:
    description: Make RoCE v2 and the plan's ToS the RDMA-CM defaults of the interfaces' RDMA ports.
    type: bool
    default: true
  required:
    description: Fail when an interface has no DCB, or cannot take the plan's C(buffer) settings,
      instead of skipping them with a warning.
    type: bool
    default: false
  allow_link_flap:
    description: Allow changing the QoS of an interface that carries the Ansible connection.
    type: bool
    default: false
  connection_addresses:
    description: Addresses Ansible connects to this node by (names are resolved on the node).
    type: list
    elements: str
    default: []
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: DSCP trust, PFC on priority 3 and ECN on the fabric NICs from the QoS plan
  rocetune.fabric.roce_qos_apply:
    interfaces: [ens1f0np0, ens2f0np0]
    plan_file: /etc/rocetune/qos.yml
    plan_content: "{{ lookup('ansible.builtin.file', 'files/qos.yml') }}"
    backend: auto
    connection_addresses: ["{{ ansible_host | default(inventory_hostname) }}"]
"""

RETURN = r"""
interfaces:
  description: Per interface C(backend), C(driver), C(commands), C(writes), C(buffer_not_supported)
    (the plan's buffer settings the NIC cannot take), or C(not_supported).
  type: dict
  returned: always
plan:
  description: The plan the values came from (C(source) names the file or the defaults).
  type: dict
  returned: unless pending
written:
  description: The files written (or that would be, in check mode).
  type: list
  returned: always
missing_packages:
  description: Packages of I(packages) that are not installed.
  type: list
  returned: always
pending:
  description: True when packages were missing and no QoS was applied.
  type: bool
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.roce_qos_state import (
    NotSupported,
    QosError,
    desired,
    driver_of,
    interface_plan,
    load_plan,
    parse_plan,
    pick_backend,
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


def plan_files_wanted(plan_file, plan_content):
    return [{"path": plan_file, "content": plan_content, "mode": "0644"}] if plan_content else [], [], []


def boot_files_wanted(boot):
    """(files, links, absent) of the boot unit: script, settings, unit, and its enable link;
    with C(state: absent), all of them removed (a unit turned off is not left enabled)."""
    if not boot:
        return [], [], []
    unit = boot["unit"]["path"]
    link = os.path.join(os.path.dirname(unit), "multi-user.target.wants", os.path.basename(unit))
    libs = boot.get("libs") or []
    if boot.get("state") == "absent":
        return [], [], [link, unit, boot["script"]["path"], boot["settings"]["path"]] + [lib["path"] for lib in libs]
    files = [
        {"path": boot["script"]["path"], "content": boot["script"]["content"], "mode": "0644"},
    ] + [{"path": lib["path"], "content": lib["content"], "mode": "0644"} for lib in libs] + [
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
        apply_changes(changes)
        if any(c[1]["path"] == unit for c in changes) and os.path.isdir("/run/systemd/system"):
            module.run_command([module.get_bin_path("systemctl", required=True), "daemon-reload"])
    result["written"] += [c[1]["path"] for c in changes]
    result["diff"] += diffs
    result["changed"] |= bool(changes)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plan_content=dict(type="str", default=""),
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
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, written=[], diff=[], missing_packages=[], pending=False, interfaces={})
    problems = interface_name_problems(p["interfaces"], "roce_qos_interfaces")
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was changed")
    # Everything is read and checked before anything changes: the tools, the plan (the one about
    # to be installed, not the one on disk), every interface and its state. Then the NICs are
    # configured, and only then the plan file and the boot unit are installed, so a plan that
    # failed is neither persisted nor re-applied at every boot.
    dummy, result["missing_packages"] = missing_packages(module, p["packages"], "roce_qos_packages")
    if result["missing_packages"]:
        result["pending"] = True
        module.exit_json(**result)
    plan = read_plan(module, p)
    for warning in plan.pop("warnings", []):
        module.warn("QoS plan %s: %s" % (plan["source"], warning))
    refuse_missing_and_connection_interfaces(module, p)
    want = desired(plan, p["ets"], p["dcqcn"])

    def run(argv):
        path = module.get_bin_path(argv[0])
        if not path:
            return 127, "", "%s: not installed" % argv[0]
        return module.run_command([path] + argv[1:])

    result["plan"] = plan
    skipped, errors, steps, buffer_unsupported = [], [], [], []
    for ifname in p["interfaces"]:
        driver = driver_of(ifname, run)
        backend = pick_backend(p["backend"], driver, bool(module.get_bin_path("mlnx_qos")))
        if not module.get_bin_path(backend):
            errors.append("%s: %s is not installed (roce_qos_backend / roce_qos_packages)" % (ifname, backend))
            continue
        try:
            step = interface_plan(ifname, driver, backend, want, run, read, p["pause_off"])
        except NotSupported as exc:
            skipped.append(str(exc))
            result["interfaces"][ifname] = {"driver": driver, "backend": backend, "not_supported": str(exc)}
            continue
        except QosError as exc:
            errors.append(str(exc))
            continue
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
        module.fail_json(msg="; ".join(errors) + "; nothing was changed", **result)
    if skipped:
        module.warn("; ".join(s + ": skipped" for s in skipped))
    for message in buffer_unsupported:
        module.warn(message)
    result["changed"] = any(st["commands"] or st["writes"] for st in steps) or bool(cm_writes)

    if not module.check_mode:
        apply_steps(module, run, steps, cm_writes, result)
    install(module, plan_files_wanted(p["plan_file"], p["plan_content"]), result)
    install(module, boot_files_wanted(p["boot"]), result, unit=(p["boot"] or {}).get("unit", {}).get("path"))
    module.exit_json(**result)


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


def read_plan(module, p):
    """The plan the NICs are configured from: the content about to be installed, else the node's file."""
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="PyYAML is missing on the node: install python3-yaml (roce_qos_packages)")
    try:
        if p["plan_content"]:
            return parse_plan(p["plan_content"], yaml.safe_load, "roce_qos_plan_src")
        return load_plan(p["plan_file"], yaml.safe_load)
    except (QosError, yaml.YAMLError) as exc:
        module.fail_json(msg="QoS plan: %s; nothing was changed" % exc)


def refuse_missing_and_connection_interfaces(module, p):
    missing = [i for i in p["interfaces"] if not os.path.isdir("/sys/class/net/%s" % i)]
    if missing:
        module.fail_json(msg="no interface %s on this node (check roce_qos_interfaces); nothing was changed"
                             % ", ".join(missing))
    if p["allow_link_flap"]:
        return
    protected, error, dummy = read_connection_interfaces(module, p["connection_addresses"])
    if error:
        module.fail_json(msg=error)
    refused = ["refusing to change the QoS of %s: %s (set roce_qos_allow_link_flap: true to allow it)"
               % (i, protected[i]) for i in p["interfaces"] if i in protected]
    if refused:
        module.fail_json(msg="; ".join(refused) + "; nothing was changed", protected=protected)


def apply_steps(module, run, steps, cm_writes, result):
    errors = []
    for step in steps:
        for cmd in step["commands"]:
            rc, out, err = run(cmd)
            if rc != 0:
                errors.append("%s: %s" % (" ".join(cmd), (err or out).strip()))
        for path, value in step["writes"]:
            write_value(path, value)
    for path, value in cm_writes:
        try:
            write_value(path, value)
        except OSError as exc:
            errors.append("%s: %s (is configfs mounted and rdma_cm loaded?)" % (path, exc))
    if errors:
        module.fail_json(msg="; ".join(errors), **result)


if __name__ == "__main__":
    main()
