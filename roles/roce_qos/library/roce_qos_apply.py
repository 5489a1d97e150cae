#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Bring the fabric NICs' QoS to what the QoS plan says, running only the commands needed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_qos_apply
short_description: RoCE QoS (trust, DSCP->priority, PFC, ETS, ECN, pause, RDMA-CM ToS) from the QoS plan
description:
  - Reads rocetune's QoS plan file with PyYAML, reads each NIC's state (C(dcb -N pfc/app/ets
    show) or C(mlnx_qos -i), C(ethtool -a), the ECN sysfs files, RDMA-CM configfs) and runs
    only the commands that change something.
  - A NIC without DCB (veth, virtio-net) is reported as not supported and skipped, or fails
    the host when I(required).
  - Supports check mode (returns the commands it would run).
options:
  interfaces:
    description: The fabric interfaces.
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
    description: Fail when an interface has no DCB instead of skipping it.
    type: bool
    default: false
author: rocetune contributors
"""

RETURN = r"""
interfaces:
  description: Per interface C(backend), C(driver), C(commands), C(writes), or C(not_supported).
  type: dict
  returned: always
plan:
  description: The plan the values came from (C(source) names the file or the defaults).
  type: dict
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.roce_qos_state import (NotSupported, QosError, desired, driver_of, interface_plan,
                                                 load_plan, pick_backend, rdma_cm_writes, rdma_ports,
                                                 traffic_class)


def read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except (IOError, OSError):
        return None


def write(path, value):
    parent = os.path.dirname(path)
    if "/rdma_cm/" in path and not os.path.isdir(parent):
        os.makedirs(os.path.dirname(os.path.dirname(parent)), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(value + "\n")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type="list", elements="str", required=True),
            plan_file=dict(type="path", required=True),
            backend=dict(type="str", choices=["auto", "dcb", "mlnx_qos"], default="auto"),
            ets=dict(type="dict", default={}),
            dcqcn=dict(type="bool", default=True),
            pause_off=dict(type="bool", default=True),
            rdma_cm=dict(type="bool", default=True),
            required=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="PyYAML is missing on the node: install python3-yaml (roce_qos_packages)")
    try:
        plan = load_plan(p["plan_file"], yaml.safe_load)
    except (QosError, yaml.YAMLError) as exc:
        module.fail_json(msg="QoS plan: %s" % exc)
    want = desired(plan, p["ets"], p["dcqcn"])

    def run(argv):
        path = module.get_bin_path(argv[0])
        if not path:
            return 127, "", "%s: not installed" % argv[0]
        return module.run_command([path] + argv[1:])

    result = dict(changed=False, interfaces={}, plan=plan)
    skipped, errors = [], []
    for ifname in p["interfaces"]:
        if not os.path.isdir("/sys/class/net/%s" % ifname):
            module.fail_json(msg="no interface %s on this node (check roce_qos_interfaces)" % ifname, **result)
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
        info = {"driver": driver, "backend": backend, "commands": [" ".join(c) for c in step["commands"]],
                "writes": ["%s = %s" % w for w in step["writes"]]}
        result["interfaces"][ifname] = info
        if step["commands"] or step["writes"]:
            result["changed"] = True
        if module.check_mode:
            continue
        for cmd in step["commands"]:
            rc, out, err = run(cmd)
            if rc != 0:
                errors.append("%s: %s" % (" ".join(cmd), (err or out).strip()))
        for path, value in step["writes"]:
            write(path, value)

    if p["rdma_cm"]:
        writes = rdma_cm_writes(rdma_ports(p["interfaces"]), traffic_class(plan), read)
        result["rdma_cm"] = ["%s = %s" % w for w in writes]
        if writes:
            result["changed"] = True
            if not module.check_mode:
                for path, value in writes:
                    try:
                        write(path, value)
                    except (IOError, OSError) as exc:
                        errors.append("%s: %s (is configfs mounted and rdma_cm loaded?)" % (path, exc))

    if skipped and p["required"]:
        errors += ["%s (roce_qos_required: true)" % s for s in skipped]
    elif skipped:
        module.warn("; ".join(s + ": skipped" for s in skipped))
    if errors:
        module.fail_json(msg="; ".join(errors), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
