# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""PCIe peer-to-peer between GPUs and NICs: the ACS redirect bits of the bridges between them,
and the IOMMU mode on the kernel command line. The one reader of them: doctor's
doctor-acs-redirect (through the host root) and, through its copy
plugins/module_utils/rocetune_pcie_p2p.py, the pcie_p2p role's module and boot unit.

ACS (PCIe Access Control Services) P2P Request/Completion Redirect and Egress Control on a
switch or root port send every peer-to-peer request up to the root complex: GPUDirect RDMA
between a GPU and the NIC beside it then crosses the CPU (or fails). The kernel sets them when
an IOMMU is on. This file takes the GPU-NIC pairs that rocetune's topology reader places at PIX
or PXB on the plan's rails (pairs_from_probe: what NCCL uses GPUDirect RDMA for by default,
NCCL_NET_GDR_LEVEL=PXB), finds the bridges between the two of each pair from sysfs (up to the
PCIe switch they share), reads each one's ACS Control register from its PCI configuration space
(/sys/bus/pci/devices/BDF/config, extended capability 0x000D, control at +6) and clears the
redirect bits -- what NVIDIA's DeepOps `nvidia-acs-disable` does for every ACS-capable function
with `setpci ECAP_ACS+0x6.w=0`, here limited to the GPU-NIC paths by default.

Standard library only: the pcie_p2p_apply module uses the copy, the role installs it beside the
boot script the rocetune-pcie-p2p unit runs at every boot (roles/pcie_p2p/files/
rocetune_pcie_p2p_boot.py, which calls run()), and the unit tests run it on sysfs trees of
recorded topologies.
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
# The redirect bits: what doctor-acs-redirect holds clear and what the role clears by default.
# They are the bits Linux's `disable_acs_redir=` parameter clears (pci_disable_acs_redir() in
# drivers/pci/pci.c: PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC, Linux 5.0 and later); with any of them
# on, a switch port sends peer-to-peer requests up to the root complex, which NCCL's
# troubleshooting guide names as what slows or breaks GPUDirect ("PCI Access Control Services").
# The kernel sets ReqRedir and CmpltRedir itself when an IOMMU is on (pci_std_enable_acs()).
REDIRECT_BITS = ("ReqRedir", "CmpltRedir", "EgressCtrl")
DEFAULT_CLEAR = REDIRECT_BITS
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
GRUB_DROPIN = "/etc/default/grub.d/rocetune-pcie-p2p.cfg"


class P2PError(Exception):
    """A message the operator can act on."""


def is_bdf(text):
    """A PCI address as sysfs names it (dddd:bb:dd.f, lower case)."""
    return bool(_BDF.match(text))


def mask_of(names):
    """The ACS Control mask of bit names; P2PError for an unknown name, or a set that leaves one
    of the redirect bits on (doctor-acs-redirect would fail the node the role converged)."""
    unknown = [n for n in names if n not in BITS]
    if unknown:
        raise P2PError("unknown ACS bit(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(BITS))))
    kept = [n for n in REDIRECT_BITS if n not in names]
    if kept:
        raise P2PError("%s left on: the bits cleared include %s (the redirect bits)"
                       % (", ".join(kept), ", ".join(REDIRECT_BITS)))
    mask = 0
    for n in names:
        mask |= BITS[n]
    return mask


REDIRECT_MASK = sum(BITS[n] for n in REDIRECT_BITS)


def flags(value):
    return " ".join("%s%s" % (n, "+" if value & b else "-") for n, b in sorted(BITS.items(), key=lambda kv: kv[1]))


def redirect_on(control):
    """The redirect bits that are on in an ACS Control value, by name."""
    return [n for n in REDIRECT_BITS if control & BITS[n]]


def acs_offset(config):
    """Offset of the ACS extended capability in a config space (bytes), or None: none, or only
    the first 256 bytes readable (not root)."""
    offset, seen = EXT_CAP_START, set()
    while offset >= EXT_CAP_START and offset + 4 <= len(config) and offset not in seen:
        seen.add(offset)
        header = struct.unpack_from("<I", config, offset)[0]
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return offset
        offset = (header >> 20) & 0xFFC
    return None


NO_ACS = "no ACS"
UNREADABLE = "unreadable"


def read_control(config):
    """(offset, ACS Control value) of a configuration space, or NO_ACS, or UNREADABLE when only
    the first 256 bytes could be read (the extended space is root's)."""
    if config is None or len(config) <= EXT_CAP_START:
        return UNREADABLE
    offset = acs_offset(config)
    if offset is None:
        return NO_ACS
    return offset, struct.unpack_from("<H", config, offset + 6)[0]


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
        except OSError:
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


def pair_bridges(parents, pairs):
    """{bridge: [the GPU-NIC pairs whose peer-to-peer path crosses it]}: for each (gpu, nic) pair,
    every bridge from each of the two up to the PCIe switch they share, that one included.
    `parents(bdf)` gives the bridges above a device, nearest first (Sysfs.parents). A pair that
    shares no switch below a root port here (PHB or farther, where the traffic crosses the root
    complex whatever ACS says) is refused: the reader that placed it at PIX/PXB and sysfs
    disagree."""
    out = {}
    for gpu, nic in pairs:
        for bdf in (gpu, nic):
            if not _BDF.match(bdf):
                raise P2PError("pair %s-%s: %r is not a PCI address (dddd:bb:dd.f)" % (gpu, nic, bdf))
        up_gpu, up_nic = parents(gpu), parents(nic)
        shared = [b for b in up_gpu if b in up_nic]
        if not shared or not parents(shared[0]):
            raise P2PError("pair %s-%s: the two share no PCIe switch here (%s), not a PIX/PXB pair"
                           % (gpu, nic, "not in sysfs" if not (up_gpu and up_nic) else "only a root port or "
                              "the root complex"))
        for chain in (up_gpu, up_nic):
            for bridge in chain[:chain.index(shared[0]) + 1]:
                pair = "%s-%s" % (gpu, nic)
                if pair not in out.setdefault(bridge, []):
                    out[bridge].append(pair)
    return out


PAIR_PATHS = ("PIX", "PXB")  # where NCCL uses GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL=PXB)


def pairs_from_probe(doc):
    """The GPU-NIC pairs of `rocetune --json probe`'s document: [(gpu bdf, nic bdf)] where the
    topology reader places a GPU at PIX/PXB from one of the plan's rails (the ports NCCL_IB_HCA
    names). P2PError when it cannot tell: no document, GPUs and rails without their paths, or a
    pair the reader's two sources (sysfs, nvidia-smi topo -m) disagree on."""
    try:
        data = doc["data"]
        features, plan_doc = data["features"], data["plan"]
    except (KeyError, TypeError):
        raise P2PError("the rocetune probe document has no features and plan (a rocetune too old or broken)") \
            from None
    hca = [d for d in plan_doc.get("decisions") or [] if d.get("key") == "NCCL_IB_HCA"]
    chosen = ((hca[0].get("evidence") or {}).get("chosen") or []) if hca else []
    rails = {}
    for port in chosen:
        device = str(port.get("port") or "").partition(":")[0]
        if not device or not _BDF.match(str(port.get("pci") or "")):
            raise P2PError("rail %s: the plan gives no PCI address for it" % (port.get("port") or "?"))
        rails[device] = port["pci"]
    devices = ((features.get("rdma") or {}).get("devices")) or []
    if not rails and devices and features.get("gpus") and not hca:
        raise P2PError("the plan chose no rails (NCCL_IB_HCA) on a node with GPUs and RDMA devices")
    return gpu_nic_pairs(features, rails)


def gpu_nic_pairs(features, rails):
    """[(gpu bdf, nic bdf)] of the GPUs the topology reader (Features `topology.gpu_nic`) places
    at PIX/PXB from one of `rails` ({RDMA device: its PCI address}); P2PError when it cannot
    tell (see pairs_from_probe)."""
    gpus = dict((g.get("index"), g.get("bdf")) for g in features.get("gpus") or [])
    if not rails:
        return []
    paths = (features.get("topology") or {}).get("gpu_nic") or []
    if gpus and not paths:
        raise P2PError("the topology reader placed no GPU-NIC path (GPUs %s, rails %s)"
                       % (", ".join(str(i) for i in sorted(gpus)), ", ".join(sorted(rails))))
    out = []
    for entry in paths:
        if entry.get("nic") not in rails or entry.get("path") not in PAIR_PATHS:
            continue
        said = [entry.get(k) for k in ("sysfs", "nvidia_smi") if entry.get(k)]
        if len(set(said)) > 1:
            raise P2PError("GPU %s and %s: sysfs says %s, nvidia-smi topo -m %s: cannot tell the path"
                           % (entry.get("gpu"), entry["nic"], entry.get("sysfs"), entry.get("nvidia_smi")))
        gpu = gpus.get(entry.get("gpu"))
        if not gpu or not _BDF.match(str(gpu)):
            raise P2PError("GPU %s: the probe gives no PCI address for it" % entry.get("gpu"))
        pair = (str(gpu).lower(), str(rails[entry["nic"]]).lower())
        if pair not in out:
            out.append(pair)
    return sorted(out)


def targets(devices, parents, scope="gpu_nic", extra=(), pairs=()):
    """{bdf: [why]} of the functions whose ACS Control is held: with scope gpu_nic the bridges
    between the two of each (gpu, nic) pair, with `all` every function of `devices`, and the
    addresses in `extra` (pcie_p2p_acs_devices)."""
    if scope not in ("gpu_nic", "all", "none"):
        raise P2PError("scope %r: give gpu_nic, all or none" % (scope,))
    if scope == "all":
        out = dict((b, ["every ACS-capable function"]) for b in devices)
    elif scope == "gpu_nic":
        out = pair_bridges(parents, pairs)
    else:
        out = {}
    for bdf in extra:
        if not _BDF.match(bdf):
            raise P2PError("%r is not a PCI address (DDDD:BB:DD.F)" % (bdf,))
        out.setdefault(bdf, []).append("named in pcie_p2p_acs_devices")
    return out


def steps(held, controls, clear=DEFAULT_CLEAR):
    """What to clear: [{bdf, offset, before, after, why}] for every function of `held` (targets())
    that has ACS, from `controls` ({bdf: read_control()}); the second list names the ones whose
    extended config space could not be read (not root)."""
    mask = mask_of(clear)
    out, unreadable = [], []
    for bdf in sorted(held):
        control = controls.get(bdf, UNREADABLE)
        if control == UNREADABLE:
            unreadable.append(bdf)
        elif control != NO_ACS:
            offset, before = control
            out.append({"bdf": bdf, "offset": offset, "before": before, "after": before & ~mask & 0xFFFF,
                        "why": sorted(set(held[bdf]))})
    return out, unreadable


def plan(fs, scope="gpu_nic", clear=DEFAULT_CLEAR, extra=(), pairs=()):
    """steps() for the functions targets() names, read from the tree `fs` (Sysfs)."""
    mask_of(clear)
    held = targets(fs.devices() if scope == "all" else (), fs.parents, scope, extra, pairs)
    controls = {}
    for bdf in held:
        try:
            controls[bdf] = read_control(fs.config(bdf))
        except OSError:
            controls[bdf] = UNREADABLE
    return steps(held, controls, clear)


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


BOOT_OPTIONS = ("--scope", "--clear", "--device", "--pair")


def unit_arguments(argv):
    """What the boot unit is told to hold, from its script's arguments (the unit's ExecStart after
    the script): {"scope", "clear", "devices", "pairs"}; P2PError for anything else. doctor
    reads the unit with it; run() takes the same options."""
    got = {"scope": "gpu_nic", "clear": list(DEFAULT_CLEAR), "devices": [], "pairs": []}
    words = list(argv)
    while words:
        word = words.pop(0)
        name, sep, value = word.partition("=")
        if name not in BOOT_OPTIONS:
            raise P2PError("unexpected argument %r" % (word[:80],))
        if not sep:
            if not words:
                raise P2PError("%s without a value" % name)
            value = words.pop(0)
        if name == "--scope":
            got["scope"] = value
        elif name == "--clear":
            got["clear"] = [c for c in value.split(",") if c]
        elif name == "--device":
            got["devices"].append(value)
        else:
            gpu, dummy, nic = value.partition(",")
            got["pairs"].append((gpu, nic))
    return got


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
    ap.add_argument("--pair", action="append", default=[], metavar="GPU,NIC",
                    help="a GPU and a NIC (PCI addresses) whose path is cleared (scope gpu_nic)")
    ap.add_argument("--check", action="store_true", help="say what would change, change nothing")
    args = ap.parse_args(argv)
    fs = Sysfs(root)
    try:
        pairs = [tuple(p.split(",", 1)) if "," in p else (p, "") for p in args.pair]
        steps, unreadable = plan(fs, args.scope, [c for c in args.clear.split(",") if c], args.device, pairs)
        for bdf in unreadable:
            out.write("%s: extended config space not readable (run as root); ACS not checked\n" % bdf)
        if not args.check:
            apply(fs, steps)
    except (P2PError, OSError) as exc:
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
