# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Does the installed (or about to be installed) NVIDIA DOCA/MLNX OFED fit this node?

Two decisions, pure functions over recorded tool outputs (unit-tested):
- a tarball's name (MLNX_OFED_LINUX-<ver>-<distro><release>-<arch>.tgz) against the node's
  distribution and architecture, before anything is installed;
- after installation, whether the NIC driver module that would load for the RUNNING kernel
  is OFED's (`modinfo -F filename/vermagic`) or the distribution's in-tree one, which means
  OFED was built for another kernel (a kernel update without the DKMS rebuild).
"""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_packages import os_release
except ImportError:  # unit tests import the files as plain modules
    from rocetune_packages import os_release  # pylint: disable=import-error

_TARBALL = re.compile(r"^MLNX_OFED_LINUX-(?P<version>\d[\w.]*-[\d.]+)-(?P<distro>[a-z]+)(?P<release>[\d.]+)"
                      r"-(?P<arch>x86_64|aarch64|ppc64le)\.(?:tgz|tar\.gz|iso)\Z")
_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "x86_64": "x86_64", "aarch64": "aarch64", "ppc64le": "ppc64le"}
# The distribution tag in the tarball name -> the node's distribution, as /etc/os-release's ID
# or Ansible's ansible_distribution names it.
_DISTRO = {"ubuntu": ("Ubuntu", "ubuntu"), "debian": ("Debian", "debian"),
           "rhel": ("RedHat", "Rocky", "AlmaLinux", "CentOS", "OracleLinux",
                    "rhel", "rocky", "almalinux", "centos", "ol"),
           "ol": ("OracleLinux", "ol"), "sles": ("SLES", "sles")}


def parse_os_release(text):
    """/etc/os-release -> (ID, VERSION_ID)."""
    values = os_release(text)
    return values.get("ID", ""), values.get("VERSION_ID", "")


class OfedMismatch(Exception):
    """The OFED build does not fit the node; the message says what to do."""


def parse_ofed_info(text):
    """`ofed_info -s` -> the version ("MLNX_OFED_LINUX-5.8-1.0.1.1", "OFED-internal-24.10-1.1.4"),
    or None when the output is not an OFED version line."""
    line = (text or "").strip().splitlines()[0:1]
    if not line:
        return None
    m = re.match(r"^((?:MLNX_OFED_LINUX|OFED-internal|OFED)-[\w.\-]+?):?\Z", line[0].strip())
    return m.group(1) if m else None


def parse_tarball(name):
    """{version, distro, release, arch} of an MLNX_OFED tarball name, or raise OfedMismatch."""
    m = _TARBALL.match(name.rsplit("/", 1)[-1])
    if not m:
        raise OfedMismatch("%s: not an MLNX_OFED tarball name "
                           "(MLNX_OFED_LINUX-<version>-<distro><release>-<arch>.tgz)" % name)
    return m.groupdict()


def check_tarball(name, distribution, distribution_version, architecture):
    """Raise OfedMismatch unless the tarball was built for this distribution, release and arch."""
    t = parse_tarball(name)
    problems = []
    if distribution not in _DISTRO.get(t["distro"], ()):
        problems.append("built for %s, the node runs %s" % (t["distro"], distribution))
    elif not (distribution_version == t["release"] or distribution_version.startswith(t["release"] + ".")
              or t["release"].startswith(distribution_version + ".")):
        problems.append("built for %s %s, the node runs %s" % (t["distro"], t["release"], distribution_version))
    if _ARCH.get(architecture, architecture) != t["arch"]:
        problems.append("built for %s, the node is %s" % (t["arch"], architecture))
    if problems:
        raise OfedMismatch("%s does not fit this node: %s. Download the tarball for this release "
                           "(or rebuild it with mlnx_add_kernel_support.sh)"
                           % (name.rsplit("/", 1)[-1], "; ".join(problems)))
    return t


def parse_modinfo(text):
    """`modinfo MODULE` -> {field: value} (first value of each field)."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def check_kernel(module, running_kernel, modinfo_text, ofed_version):
    """Raise OfedMismatch unless the NIC driver that loads for the running kernel is OFED's
    build for that kernel. Returns a one-line summary when it is."""
    info = parse_modinfo(modinfo_text)
    filename = info.get("filename", "")
    vermagic = info.get("vermagic", "").split(" ", 1)[0]
    if not filename:
        raise OfedMismatch("%s: modinfo found no %s for the running kernel %s; OFED %s has no build for it "
                           "(rerun its installer with --add-kernel-support, or rebuild the DKMS modules)"
                           % (module, module, running_kernel, ofed_version))
    # RHEL's kABI: a module built for another kernel of the same kABI is linked into the running
    # kernel's weak-updates/ by weak-modules, and loads there.
    weak = "/lib/modules/%s/weak-updates/" % running_kernel in filename
    if vermagic and vermagic != running_kernel and not weak:
        raise OfedMismatch("%s at %s is built for kernel %s, the node runs %s: rebuild OFED's modules for this kernel"
                           % (module, filename, vermagic, running_kernel))
    in_tree = info.get("intree") == "Y" or "/kernel/drivers/" in filename
    if in_tree:
        raise OfedMismatch("OFED %s is installed but the %s that loads for kernel %s is the distribution's own "
                           "(%s): OFED's modules were not built for this kernel (install its DKMS/kmod package for "
                           "%s, or use --add-kernel-support)"
                           % (ofed_version, module, running_kernel, filename, running_kernel))
    via = " through kABI weak-updates (built for %s)" % vermagic if weak and vermagic != running_kernel else ""
    return "%s %s for %s (%s)%s" % (ofed_version, module, running_kernel, filename, via)


def driver_restart(module, modinfo_text, loaded_srcversion):
    """A message when the loaded `module` is not the installed one (its srcversion differs from
    modinfo's: OFED was installed after the inbox driver loaded), else None. A module not
    loaded, or without a srcversion, needs nothing."""
    installed = parse_modinfo(modinfo_text).get("srcversion")
    loaded = (loaded_srcversion or "").strip()
    if not loaded or not installed or loaded == installed:
        return None
    return ("the loaded %s (srcversion %s) is not the installed one (%s): restart the driver "
            "(/etc/init.d/openibd restart, which takes the RDMA links down) or reboot before jobs run"
            % (module, loaded, installed))
