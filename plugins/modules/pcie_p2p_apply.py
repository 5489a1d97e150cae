#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""pcie_p2p on a node in one call: ACS redirect cleared on the bridges between GPUs and NICs, and
iommu=pt put on the kernel command line through the boot loader; never a reboot."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: pcie_p2p_apply
short_description: ACS redirect cleared between GPUs and NICs, iommu=pt through the boot loader
version_added: "0.1.0"
description:
  - Finds the PCIe bridges between each GPU and its nearest NIC from sysfs (or every ACS-capable
    function, or the addresses named), reads each one's ACS Control register from its
    configuration space and clears the named bits, reading each write back.
  - With I(iommu=pt), puts C(iommu=pt) on the kernel command line with C(grubby --update-kernel=ALL
    --args) or a C(/etc/default/grub.d) drop-in and C(update-grub); where the running command
    line lacks it, returns C(reboot_required), warns and writes C(/run/reboot-required).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads the bridges and the boot loader's state; writes nothing.
  diff_mode:
    support: full
    details: Each bridge's ACS Control before and wanted, and the drop-in's text.
  platform:
    platforms: posix
requirements:
  - Root (the extended PCI configuration space under C(/sys/bus/pci/devices)); C(grubby) or C(update-grub)
    for I(iommu=pt).
options:
  acs_scope:
    description: C(gpu_nic), C(all) or C(none).
    type: str
    choices: [gpu_nic, all, none]
    default: gpu_nic
  acs_clear:
    description: ACS Control bits to clear.
    type: list
    elements: str
    default: [ReqRedir, CmpltRedir, EgressCtrl]
  acs_devices:
    description: PCI addresses cleared as well.
    type: list
    elements: str
    default: []
  gpu_ids:
    description: vendor[:device] ids counted as GPUs ([] NVIDIA display/3D controllers).
    type: list
    elements: str
    default: []
  nic_ids:
    description: vendor[:device] ids counted as NICs ([] Ethernet and InfiniBand controllers).
    type: list
    elements: str
    default: []
  iommu:
    description: C(pt) or C(keep).
    type: str
    choices: [pt, keep]
    default: pt
  boot_loader:
    description: C(auto), C(grubby), C(update-grub) or C(none).
    type: str
    choices: [auto, grubby, update-grub, none]
    default: auto
  grub_dropin:
    description: The drop-in update-grub sources.
    type: path
    default: /etc/default/grub.d/rocetune-pcie-p2p.cfg
  reboot_marker:
    description: The file written when a reboot is pending.
    type: path
    default: /run/reboot-required
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Clear ACS redirect between GPUs and NICs, and put iommu=pt on the kernel command line
  rocetune.fabric.pcie_p2p_apply:
    acs_scope: gpu_nic
    iommu: pt
  register: p2p

- name: Every ACS-capable function fully cleared (DeepOps' nvidia-acs-disable), the command line left alone
  rocetune.fabric.pcie_p2p_apply:
    acs_scope: all
    acs_clear: [SrcValid, TransBlk, ReqRedir, CmpltRedir, UpstreamFwd, EgressCtrl, DirectTrans]
    iommu: keep
"""

RETURN = r"""
acs:
  description: Per bridge, its ACS Control before and after (lspci's flags) and the GPU-NIC pairs it is between.
  type: dict
  returned: always
  sample:
    "0000:00:10.0":
      before: "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
      after: "SrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-"
      between: ["0000:01:00.0-0000:02:00.0"]
iommu:
  description: The IOMMU word wanted, whether the running and the configured command lines have it, the boot loader used.
  type: dict
  returned: always
  sample: {word: iommu=pt, running: false, configured: true, boot_loader: update-grub}
reboot_required:
  description: True when the configured command line waits for a reboot.
  type: bool
  returned: always
  sample: true
unreadable:
  description: Bridges whose extended configuration space could not be read (the module then fails, changing nothing).
  type: list
  elements: str
  returned: always
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError, apply_changes, plan_files
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_pcie_p2p import (
    P2PError, Sysfs, apply, cmdline_has, flags, grub_dropin, plan
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_signals import mark_reboot_required

WORD = "iommu=pt"


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except (IOError, OSError):
        return None


def boot_loader(module, wanted):
    if wanted in ("grubby", "auto") and module.get_bin_path("grubby"):
        return "grubby"
    if wanted in ("update-grub", "auto") and module.get_bin_path("update-grub"):
        return "update-grub"
    if wanted == "none":
        return "none"
    return None


def set_iommu(module, p, result):
    running = cmdline_has(_read("/proc/cmdline") or "", WORD)
    info = {"word": WORD, "running": running, "configured": running, "boot_loader": None}
    result["iommu"] = info
    if p["iommu"] == "keep":
        return
    tool = boot_loader(module, p["boot_loader"])
    info["boot_loader"] = tool
    if tool == "grubby":
        rc, out, err = module.run_command([module.get_bin_path("grubby"), "--info=ALL"])
        args = [ln.split("=", 1)[1].strip('"').split() for ln in out.splitlines() if ln.startswith("args=")]
        info["configured"] = bool(args) and all(WORD in words for words in args)
        if not info["configured"]:
            result["changed"] = True
            if not module.check_mode:
                rc, out, err = module.run_command([module.get_bin_path("grubby"), "--update-kernel=ALL",
                                                   "--args=" + WORD])
                if rc != 0:
                    module.fail_json(msg="grubby --update-kernel=ALL --args=%s failed: %s"
                                     % (WORD, (err or out).strip()), **result)
            info["configured"] = True
    elif tool == "update-grub":
        text = grub_dropin(WORD)
        have = _read(p["grub_dropin"])
        try:  # root's file, written atomically, never through a link (rocetune_files' rule)
            changes, dummy = plan_files([{"path": p["grub_dropin"], "content": text, "mode": "0644"}], [])
        except FileTargetError as exc:
            module.fail_json(msg="grub_dropin: %s" % exc, **result)
        info["configured"] = not changes
        if changes:
            result["changed"] = True
            result["diff"]["before"] += "%s:\n%s" % (p["grub_dropin"], have or "")
            result["diff"]["after"] += "%s:\n%s" % (p["grub_dropin"], text)
            if not module.check_mode:
                apply_changes(changes)
                rc, out, err = module.run_command([module.get_bin_path("update-grub")])
                if rc != 0:
                    module.fail_json(msg="update-grub failed: %s" % (err or out).strip(), **result)
            info["configured"] = True
    elif tool is None:
        module.warn("no boot loader tool (grubby, update-grub) on this node: put %s on the kernel command "
                    "line where its boot loader is configured" % WORD)
    if not running and info["configured"]:
        result["reboot_required"] = True
        module.warn("%s takes effect at the next reboot; nothing was rebooted" % WORD)
        if not module.check_mode:
            write_marker(module, p["reboot_marker"], result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            acs_scope=dict(type="str", choices=["gpu_nic", "all", "none"], default="gpu_nic"),
            acs_clear=dict(type="list", elements="str", default=["ReqRedir", "CmpltRedir", "EgressCtrl"]),
            acs_devices=dict(type="list", elements="str", default=[]),
            gpu_ids=dict(type="list", elements="str", default=[]),
            nic_ids=dict(type="list", elements="str", default=[]),
            iommu=dict(type="str", choices=["pt", "keep"], default="pt"),
            boot_loader=dict(type="str", choices=["auto", "grubby", "update-grub", "none"], default="auto"),
            grub_dropin=dict(type="path", default="/etc/default/grub.d/rocetune-pcie-p2p.cfg"),
            reboot_marker=dict(type="path", default="/run/reboot-required"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, acs={}, iommu={}, reboot_required=False, unreadable=[],
                  diff={"before": "", "after": "", "before_header": "ACS control and boot loader",
                        "after_header": "wanted"})
    fs = Sysfs("/")
    try:
        steps, result["unreadable"] = plan(fs, p["acs_scope"], p["acs_clear"], p["acs_devices"], p["gpu_ids"],
                                           p["nic_ids"])
    except P2PError as exc:
        module.fail_json(msg="%s; nothing was changed" % exc, **result)
    if result["unreadable"]:
        module.fail_json(msg="cannot read the extended configuration space of %s (run as root); nothing was "
                             "changed" % ", ".join(result["unreadable"]), **result)
    for s in steps:
        result["acs"][s["bdf"]] = {"before": flags(s["before"]), "after": flags(s["after"]), "between": s["why"]}
        if s["after"] != s["before"]:
            result["changed"] = True
            result["diff"]["before"] += "%s ACSCtl: %s\n" % (s["bdf"], flags(s["before"]))
            result["diff"]["after"] += "%s ACSCtl: %s\n" % (s["bdf"], flags(s["after"]))
    if not module.check_mode:
        try:
            apply(fs, steps)
        except (P2PError, IOError, OSError) as exc:
            module.fail_json(msg="clearing ACS: %s" % exc, **result)
    set_iommu(module, p, result)
    module.exit_json(**result)


def write_marker(module, marker, result):
    try:
        mark_reboot_required(marker)
    except (IOError, OSError) as exc:
        module.warn("could not write %s: %s" % (marker, exc))


if __name__ == "__main__":
    main()
