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
  - Takes the GPU-NIC pairs to clear (I(pairs), else those that C(rocetune --json probe) on the
    node places at PIX or PXB on the plan's rails, where NCCL uses GPUDirect RDMA by default),
    finds the PCIe bridges between the two of each pair from sysfs (or every ACS-capable function,
    or the addresses named), reads each one's ACS Control register from its configuration space
    and clears the named bits, reading each write back. It refuses, changing nothing, when it
    cannot tell the pairs.
  - Every input and the node's state are read and checked before anything changes. A boot loader
    step that fails is undone (the drop-in as it was), so the next run tries it again.
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
    details: Each bridge's ACS Control before and wanted, and the drop-in's text; only in diff mode.
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
    description:
      - ACS Control bits to clear. They include the redirect bits C(ReqRedir), C(CmpltRedir) and
        C(EgressCtrl), the ones doctor-acs-redirect holds clear; a list without one of them fails.
    type: list
    elements: str
    default: [ReqRedir, CmpltRedir, EgressCtrl]
  acs_devices:
    description: PCI addresses cleared as well.
    type: list
    elements: str
    default: []
  pairs:
    description:
      - With C(acs_scope=gpu_nic), the GPU-NIC pairs whose path is cleared, each C(gpu) and C(nic)
        as PCI addresses (C(dddd:bb:dd.f)). Empty, the pairs come from I(rocetune_command).
    type: list
    elements: dict
    default: []
  rocetune_command:
    description:
      - The rocetune agent on the node (C(rocetune --json probe) tells the pairs when I(pairs) is
        empty); the rocetune_agent role installs it.
    type: str
    default: /usr/local/bin/rocetune
  iommu:
    description: C(pt) or C(keep).
    type: str
    choices: [pt, keep]
    default: pt
  boot_loader:
    description:
      - C(auto), C(grubby), C(update-grub) or C(none).
      - A tool named here that is not installed fails the task before anything changes.
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
pairs:
  description: The GPU-NIC pairs cleared between, as C({gpu, nic}) PCI addresses.
  type: list
  elements: dict
  returned: always
  sample: [{"gpu": "0000:1b:00.0", "nic": "0000:18:00.0"}]
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

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_pcie_p2p import (
    P2PError,
    Sysfs,
    apply,
    cmdline_has,
    flags,
    grub_dropin,
    mask_of,
    pairs_from_probe,
    plan,
)
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_signals import mark_reboot_required

WORD = "iommu=pt"
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\Z")  # as sysfs names it: lower case


class InputError(Exception):
    """One input or node state that stops the module before it changes anything; the message
    names the input."""


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def boot_loader(module, wanted):
    if wanted in ("grubby", "auto") and module.get_bin_path("grubby"):
        return "grubby"
    if wanted in ("update-grub", "auto") and module.get_bin_path("update-grub"):
        return "update-grub"
    if wanted == "none":
        return "none"
    if wanted != "auto":
        raise InputError("boot_loader: %s is not installed on this node (give auto, or none to leave the "
                         "command line alone)" % wanted)
    return None


def check_inputs(p):
    """The arguments the options' types do not check: pairs, addresses and ACS bit names."""
    for pair in p["pairs"]:
        if sorted(pair) != ["gpu", "nic"] or not all(_BDF.match(str(pair[k])) for k in ("gpu", "nic")):
            raise InputError("pairs: %r is not {gpu, nic} with PCI addresses as sysfs names them "
                             "(dddd:bb:dd.f, lower case)" % (pair,))
    for value in p["acs_devices"]:
        if not _BDF.match(value):
            raise InputError("acs_devices: %r is not a PCI address as sysfs names it (dddd:bb:dd.f, lower case)"
                             % (value,))
    try:
        mask_of(p["acs_clear"])
    except P2PError as exc:
        raise InputError("acs_clear: %s" % exc) from None


def gpu_nic_pairs(module, p):
    """The (gpu, nic) pairs to clear between: I(pairs), else what the agent's probe tells."""
    if p["acs_scope"] != "gpu_nic":
        return []
    if p["pairs"]:
        return sorted((str(x["gpu"]), str(x["nic"])) for x in p["pairs"])
    command = p["rocetune_command"]
    if not (os.path.isabs(command) and os.access(command, os.X_OK)) and not module.get_bin_path(command):
        raise InputError("rocetune_command: %s is not installed: the GPU-NIC pairs come from the rocetune "
                         "agent (the rocetune_agent role), or give pairs" % command)
    rc, out, err = module.run_command([command, "--json", "probe"])
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if doc is None or rc not in (0, 1, 5):
        raise InputError("rocetune --json probe failed (exit %d): %s; cannot tell the GPU-NIC pairs"
                         % (rc, " ".join((err or out or "").split())[:300]))
    try:
        return pairs_from_probe(doc)
    except P2PError as exc:
        raise InputError("cannot tell the GPU-NIC pairs: %s" % exc) from None


def _writable_parent(path):
    """Why a file cannot be created at `path` (its directory, or the nearest one that exists, is
    not a writable directory), or None."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return "%s is not a directory" % parent
    if not os.access(parent, os.W_OK | os.X_OK):
        return "%s is not writable" % parent
    return None


def plan_iommu(module, p, cmdline_path="/proc/cmdline"):
    """What the boot loader needs, read only: (info, action); action is None, ("grubby",) or
    ("dropin", changes, before, text). InputError for a boot loader or drop-in it cannot use."""
    running = cmdline_has(_read(cmdline_path) or "", WORD)
    info = {"word": WORD, "running": running, "configured": running, "boot_loader": None}
    if p["iommu"] == "keep":
        return info, None
    tool = boot_loader(module, p["boot_loader"])
    info["boot_loader"] = tool
    if tool == "grubby":
        rc, out, err = module.run_command([module.get_bin_path("grubby"), "--info=ALL"])
        if rc != 0:
            raise InputError("boot_loader: grubby --info=ALL failed: %s" % (err or out).strip()[:300])
        args = [ln.split("=", 1)[1].strip('"').split() for ln in out.splitlines() if ln.startswith("args=")]
        info["configured"] = bool(args) and all(WORD in words for words in args)
        return info, (None if info["configured"] else ("grubby",))
    if tool == "update-grub":
        why = _writable_parent(p["grub_dropin"])
        if why:
            raise InputError("grub_dropin: %s: %s" % (p["grub_dropin"], why))
        text = grub_dropin(WORD)
        try:  # root's file, written atomically, never through a link (rocetune_files' rule)
            changes, dummy = plan_files([{"path": p["grub_dropin"], "content": text, "mode": "0644"}], [])
        except FileTargetError as exc:
            raise InputError("grub_dropin: %s" % exc) from None
        info["configured"] = not changes
        return info, (("dropin", changes, _read(p["grub_dropin"]), text) if changes else None)
    if tool is None:
        module.warn("no boot loader tool (grubby, update-grub) on this node: put %s on the kernel command "
                    "line where its boot loader is configured" % WORD)
    return info, None


def set_iommu(module, p, info, action, result):
    result["iommu"] = info
    if action is not None:
        result["changed"] = True
        if action[0] == "grubby":
            if not module.check_mode:
                rc, out, err = module.run_command([module.get_bin_path("grubby"), "--update-kernel=ALL",
                                                   "--args=" + WORD])
                if rc != 0:
                    module.fail_json(msg="grubby --update-kernel=ALL --args=%s failed: %s"
                                     % (WORD, (err or out).strip()), **shown(module, result))
        else:
            dummy, changes, have, text = action
            result["diff"]["before"] += "%s:\n%s" % (p["grub_dropin"], have or "")
            result["diff"]["after"] += "%s:\n%s" % (p["grub_dropin"], text)
            if not module.check_mode:
                try:
                    apply_changes(changes)
                except (OSError, FileTargetError) as exc:
                    module.fail_json(msg="cannot write %s: %s; ACS cleared live on %s, the command line not changed"
                                     % (p["grub_dropin"], getattr(exc, "strerror", None) or exc,
                                        ", ".join(b for b, a in sorted(result["acs"].items())
                                                  if a["before"] != a["after"]) or "no bridge"),
                                     **shown(module, result))
                rc, out, err = module.run_command([module.get_bin_path("update-grub")])
                if rc != 0:
                    undone = undo_dropin(p["grub_dropin"], have)
                    module.fail_json(msg="update-grub failed: %s; %s" % ((err or out).strip(), undone),
                                     **shown(module, result))
        info["configured"] = True
    if not info["running"] and info["configured"] and p["iommu"] != "keep":
        result["reboot_required"] = True
        module.warn("%s takes effect at the next reboot; nothing was rebooted" % WORD)
        if not module.check_mode:
            write_marker(module, p["reboot_marker"], result)


def shown(module, result):
    """The result as returned: the diff only in diff mode."""
    return dict((k, v) for k, v in result.items() if k != "diff" or getattr(module, "_diff", False))


def undo_dropin(path, before):
    """Put the drop-in back as it was before this run (so that the next run writes it and runs
    update-grub again); says what it did."""
    try:
        if before is None:
            os.unlink(path)
        else:
            changes, dummy = plan_files([{"path": path, "content": before, "mode": "0644"}], [])
            apply_changes(changes)
    except (OSError, FileTargetError) as exc:
        return "%s could not be put back (%s): remove it, then run again" % (path, exc)
    return "%s is as it was: the next run tries again" % path


ARGUMENT_SPEC = dict(
    acs_scope=dict(type="str", choices=["gpu_nic", "all", "none"], default="gpu_nic"),
    acs_clear=dict(type="list", elements="str", default=["ReqRedir", "CmpltRedir", "EgressCtrl"]),
    acs_devices=dict(type="list", elements="str", default=[]),
    pairs=dict(type="list", elements="dict", default=[]),
    rocetune_command=dict(type="str", default="/usr/local/bin/rocetune"),
    iommu=dict(type="str", choices=["pt", "keep"], default="pt"),
    boot_loader=dict(type="str", choices=["auto", "grubby", "update-grub", "none"], default="auto"),
    grub_dropin=dict(type="path", default="/etc/default/grub.d/rocetune-pcie-p2p.cfg"),
    reboot_marker=dict(type="path", default="/run/reboot-required"),
)


def converge(module, fs, cmdline_path="/proc/cmdline"):
    """Reads and validates every input and the node's state (bridges, boot loader, drop-in)
    first; on any error fails naming the input, having changed nothing. Then clears ACS and
    configures the boot loader."""
    p = module.params
    result = dict(changed=False, acs={}, iommu={}, reboot_required=False, unreadable=[], pairs=[],
                  diff={"before": "", "after": "", "before_header": "ACS control and boot loader",
                        "after_header": "wanted"})
    try:
        check_inputs(p)
        pairs = gpu_nic_pairs(module, p)
        result["pairs"] = [{"gpu": g, "nic": n} for g, n in pairs]
        steps, result["unreadable"] = plan(fs, p["acs_scope"], p["acs_clear"], p["acs_devices"], pairs)
        if result["unreadable"]:
            raise InputError("cannot read the extended configuration space of %s (run as root)"
                             % ", ".join(result["unreadable"]))
        info, action = plan_iommu(module, p, cmdline_path)
    except (InputError, P2PError) as exc:
        module.fail_json(msg="%s; nothing was changed" % exc, **shown(module, result))
    for s in steps:
        result["acs"][s["bdf"]] = {"before": flags(s["before"]), "after": flags(s["after"]), "between": s["why"]}
        if s["after"] != s["before"]:
            result["changed"] = True
            result["diff"]["before"] += "%s ACSCtl: %s\n" % (s["bdf"], flags(s["before"]))
            result["diff"]["after"] += "%s ACSCtl: %s\n" % (s["bdf"], flags(s["after"]))
    if not module.check_mode:
        try:
            apply(fs, steps)
        except (P2PError, OSError) as exc:
            module.fail_json(msg="clearing ACS: %s" % exc, **shown(module, result))
    set_iommu(module, p, info, action, result)
    module.exit_json(**shown(module, result))


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    converge(module, Sysfs("/"))


def write_marker(module, marker, result):
    try:
        mark_reboot_required(marker)
    except OSError as exc:
        module.warn("could not write %s: %s" % (marker, exc))


if __name__ == "__main__":
    main()
