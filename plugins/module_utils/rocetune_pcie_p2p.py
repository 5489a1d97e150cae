# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""PCIe peer-to-peer between GPUs and NICs: the ACS redirect bits of the bridges between them,
and the IOMMU mode on the kernel command line.

ACS (PCIe Access Control Services) P2P Request/Completion Redirect and Egress Control on a
switch or root port send every peer-to-peer request up to the root complex: GPUDirect RDMA
between a GPU and the NIC beside it then crosses the CPU (or fails). The kernel sets them when
an IOMMU is on. This file finds the bridges between each GPU and its nearest NIC(s) from sysfs,
reads each one's ACS Control register from its PCI configuration space
(/sys/bus/pci/devices/BDF/config, extended capability 0x000D, control at +6) and clears the
redirect bits -- what NVIDIA's DeepOps `nvidia-acs-disable` does for every ACS-capable function
with `setpci ECAP_ACS+0x6.w=0`, here limited to the GPU-NIC paths by default.

Pure Python 2.7/3 with no dependency: the pcie_p2p_apply module uses it, the role installs it
beside the boot script the rocetune-pcie-p2p unit runs at every boot
(roles/pcie_p2p/files/rocetune_pcie_p2p_boot.py, which calls run()), and the unit tests run it
on sysfs trees of recorded topologies.
"""

from __future__ import absolute_import, division, print_function

import os
import re
import struct

__metaclass__ = type

ACS_CAP_ID = 0x000D
EXT_CAP_START = 0x100
# ACS Control register bits (PCI Express Base Specification, ACS Extended Capability).
BITS = {"SrcValid": 0x01, "TransBlk": 0x02, "ReqRedir": 0x04, "CmpltRedir": 0x08,
        "UpstreamFwd": 0x10, "EgressCtrl": 0x20, "DirectTrans": 0x40}
DEFAULT_CLEAR = ("ReqRedir", "CmpltRedir", "EgressCtrl")
NVIDIA = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")        # VGA and 3D controllers
NIC_CLASSES = ("0x0200", "0x0207")        # Ethernet and InfiniBand controllers
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
GRUB_DROPIN = "/etc/default/grub.d/rocetune-pcie-p2p.cfg"


class P2PError(Exception):
    """A message the operator can act on."""


def mask_of(names):
    unknown = [n for n in names if n not in BITS]
    if unknown:
        raise P2PError("unknown ACS bit(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(BITS))))
    mask = 0
    for n in names:
        mask |= BITS[n]
    return mask


def flags(value):
    return " ".join("%s%s" % (n, "+" if value & b else "-") for n, b in sorted(BITS.items(), key=lambda kv: kv[1]))


def acs_offset(config):
    """Offset of the ACS extended capability in a config space (bytes), or None: none, or only
    the first 256 bytes readable (not root)."""
    offset, seen = EXT_CAP_START, set()
    while EXT_CAP_START <= offset and offset + 4 <= len(config) and offset not in seen:
        seen.add(offset)
        header = struct.unpack_from("<I", config, offset)[0]
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return offset
        offset = (header >> 20) & 0xFFC
    return None


class Sysfs(object):
    """The PCI tree under /sys/bus/pci/devices (a test points it at a tree of files)."""

    def __init__(self, root="/"):
        self.base = os.path.join(root, "sys/bus/pci/devices")

    def devices(self):
        try:
            return sorted(n for n in os.listdir(self.base) if _BDF.match(n))
        except OSError:
            return []

    def attr(self, bdf, name):
        try:
            with open(os.path.join(self.base, bdf, name)) as fh:
                return fh.read().strip().lower()
        except (IOError, OSError):
            return None

    def parents(self, bdf):
        """The bridges above a device, nearest first (from the realpath of its sysfs entry)."""
        path = os.path.realpath(os.path.join(self.base, bdf))
        chain = [p for p in path.split(os.sep) if _BDF.match(p)]
        return list(reversed(chain[:-1])) if chain and chain[-1] == bdf else []

    def config(self, bdf):
        with open(os.path.join(self.base, bdf, "config"), "rb") as fh:
            return fh.read()

    def write_control(self, bdf, offset, value):
        fd = os.open(os.path.join(self.base, bdf, "config"), os.O_WRONLY)
        try:
            os.lseek(fd, offset + 6, os.SEEK_SET)
            os.write(fd, struct.pack("<H", value))
        finally:
            os.close(fd)


def _matches(fs, bdf, ids, classes):
    vendor, device, cls = fs.attr(bdf, "vendor"), fs.attr(bdf, "device"), fs.attr(bdf, "class") or ""
    if ids:
        return "%s:%s" % ((vendor or "")[2:], (device or "")[2:]) in ids or (vendor or "")[2:] in ids
    return any(cls.startswith(c) for c in classes)


def gpus_and_nics(fs, gpu_ids=(), nic_ids=()):
    """GPUs: NVIDIA display/3D controllers, or the vendor[:device] ids given; NICs: Ethernet and
    InfiniBand controllers, or the ids given."""
    gpus, nics = [], []
    for bdf in fs.devices():
        if gpu_ids:
            gpu = _matches(fs, bdf, gpu_ids, ())
        else:
            gpu = fs.attr(bdf, "vendor") == NVIDIA and _matches(fs, bdf, (), GPU_CLASSES)
        if gpu:
            gpus.append(bdf)
        elif _matches(fs, bdf, nic_ids, NIC_CLASSES):
            nics.append(bdf)
    return gpus, nics


def path_bridges(fs, gpu_ids=(), nic_ids=()):
    """{bridge: [the GPU-NIC pairs whose peer-to-peer path crosses it]}: for each GPU, its nearest
    NIC(s) -- the ones sharing its deepest common bridge -- and every bridge on the way from each
    up to that bridge (both root ports where they share none)."""
    gpus, nics = gpus_and_nics(fs, gpu_ids, nic_ids)
    up = dict((d, fs.parents(d)) for d in gpus + nics)
    out = {}
    for gpu in gpus:
        best, chosen = -1, []
        for nic in nics:
            shared = [b for b in up[gpu] if b in up[nic]]
            depth = len(fs.parents(shared[0])) + 1 if shared else 0
            if depth > best:
                best, chosen = depth, [(nic, shared[0] if shared else None)]
            elif depth == best:
                chosen.append((nic, shared[0] if shared else None))
        for nic, common in chosen:
            for dev in (gpu, nic):
                chain = up[dev]
                for bridge in (chain[:chain.index(common) + 1] if common else chain):
                    pair = "%s-%s" % (gpu, nic)
                    if pair not in out.setdefault(bridge, []):
                        out[bridge].append(pair)
    return out


def plan(fs, scope="gpu_nic", clear=DEFAULT_CLEAR, extra=(), gpu_ids=(), nic_ids=()):
    """What to clear: [{bdf, offset, before, after, why}] for every targeted function with ACS;
    `unreadable` lists targets whose extended config space could not be read (not root)."""
    if scope not in ("gpu_nic", "all", "none"):
        raise P2PError("scope %r: give gpu_nic, all or none" % (scope,))
    mask = mask_of(clear)
    gpu_ids = [i.lower().replace("0x", "") for i in gpu_ids]
    nic_ids = [i.lower().replace("0x", "") for i in nic_ids]
    if scope == "all":
        targets = dict((b, ["every ACS-capable function"]) for b in fs.devices())
    elif scope == "gpu_nic":
        targets = path_bridges(fs, gpu_ids, nic_ids)
    else:
        targets = {}
    for bdf in extra:
        if not _BDF.match(bdf):
            raise P2PError("%r is not a PCI address (DDDD:BB:DD.F)" % (bdf,))
        targets.setdefault(bdf, []).append("named in pcie_p2p_acs_devices")
    out, unreadable = [], []
    for bdf in sorted(targets):
        try:
            config = fs.config(bdf)
        except (IOError, OSError):
            unreadable.append(bdf)
            continue
        if len(config) <= EXT_CAP_START:
            unreadable.append(bdf)
            continue
        offset = acs_offset(config)
        if offset is None:
            continue
        before = struct.unpack_from("<H", config, offset + 6)[0]
        out.append({"bdf": bdf, "offset": offset, "before": before, "after": before & ~mask & 0xFFFF,
                    "why": sorted(set(targets[bdf]))})
    return out, unreadable


def apply(fs, steps):
    """Write every step whose value changes; read each back. Returns the BDFs written."""
    written = []
    for s in steps:
        if s["after"] == s["before"]:
            continue
        fs.write_control(s["bdf"], s["offset"], s["after"])
        got = struct.unpack_from("<H", fs.config(s["bdf"]), s["offset"] + 6)[0]
        if got != s["after"]:
            raise P2PError("%s: ACS control reads %#06x after writing %#06x" % (s["bdf"], got, s["after"]))
        written.append(s["bdf"])
    return written


# --- the IOMMU on the kernel command line ----------------------------------------------------
def cmdline_has(cmdline, word):
    return word in cmdline.split()


def grub_dropin(word="iommu=pt"):
    """The drop-in Debian's update-grub (and grub2-mkconfig with GRUB's /etc/default/grub.d
    support) sources after /etc/default/grub: appends the word to every kernel's command line."""
    return ("# Written by rocetune's pcie_p2p role: GPUDirect RDMA and GPU peer-to-peer without\n"
            "# IOMMU remapping (identity-mapped DMA for host devices).\n"
            'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} %s"\n' % word)


def run(argv, out, err, root="/"):
    """The boot unit's command (roles/pcie_p2p/files/rocetune_pcie_p2p_boot.py): clear the ACS
    bits on the targeted bridges, one line each to `out` (the journal); returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(prog="rocetune_pcie_p2p_boot.py",
                                 description="Clear ACS redirect on the PCIe bridges between GPUs and NICs",
                                 allow_abbrev=False)
    ap.add_argument("--scope", default="gpu_nic", choices=["gpu_nic", "all", "none"])
    ap.add_argument("--clear", default=",".join(DEFAULT_CLEAR), help="ACS bits to clear, comma-separated")
    ap.add_argument("--device", action="append", default=[], help="a bridge to clear as well (DDDD:BB:DD.F)")
    ap.add_argument("--gpu-id", action="append", default=[], help="vendor[:device] counted as a GPU")
    ap.add_argument("--nic-id", action="append", default=[], help="vendor[:device] counted as a NIC")
    ap.add_argument("--check", action="store_true", help="say what would change, change nothing")
    args = ap.parse_args(argv)
    fs = Sysfs(root)
    try:
        steps, unreadable = plan(fs, args.scope, [c for c in args.clear.split(",") if c], args.device,
                                 args.gpu_id, args.nic_id)
        for bdf in unreadable:
            out.write("%s: extended config space not readable (run as root); ACS not checked\n" % bdf)
        if not args.check:
            apply(fs, steps)
    except (P2PError, IOError, OSError) as exc:
        err.write("rocetune-pcie-p2p: %s\n" % exc)
        return 1
    for s in steps:
        state = ("would clear" if args.check else "cleared") if s["after"] != s["before"] else "already clear"
        between = ", ".join(s["why"])
        out.write("%s: ACS %s (%s -> %s) for %s\n" % (s["bdf"], state, flags(s["before"]), flags(s["after"]),
                                                      between))
    if not steps:
        out.write("no bridge with ACS between a GPU and a NIC\n")
    return 1 if unreadable and not steps else 0
