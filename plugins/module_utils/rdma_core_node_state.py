# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""What rdma_core wants on a node: the files (modules-load.d, memlock limits), the kernel
modules, and which packages are missing. Pure Python (no Ansible imports): unit-tested on a
temporary tree that plays /sys/module."""

from __future__ import absolute_import, division, print_function

import os
import re

try:  # as the collection's module_utils
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_modules_builtin import (
        parse_modules_builtin,
        sysfs_says_builtin,
    )
except ImportError:  # loaded alone, beside its siblings (unit tests)
    from rocetune_modules_builtin import parse_modules_builtin, sysfs_says_builtin  # pylint: disable=import-error

__metaclass__ = type

# A kernel module name as modprobe takes it: at most MODULE_NAME_LEN - 1 = 55 bytes (include/linux/
# module.h: 64 - sizeof(unsigned long)) of letters, digits, "_" and "-" (modprobe treats them
# alike). It is also a line of the modules-load.d file: nothing that could end a line.
_MODULE_RE = re.compile(r"^[A-Za-z0-9_-]{1,55}\Z")

HEADER = "# Written by rocetune's rdma_core role: %s\n"


def module_name_problems(modules, nic_driver):
    """One message per name that is no kernel module name, naming its variable; [] when all are."""
    problems = ["rdma_core_modules: %r is not a kernel module name (1 to 55 of A-Z a-z 0-9 _ -)" % (name,)
                for name in modules if not isinstance(name, str) or not _MODULE_RE.match(name)]
    if nic_driver and (not isinstance(nic_driver, str) or not _MODULE_RE.match(nic_driver)):
        problems.append("rdma_core_nic_driver: %r is not a kernel module name (1 to 55 of A-Z a-z 0-9 _ -)"
                        % (nic_driver,))
    return problems


def wanted_modules(modules, nic_driver, nvidia_peermem, peermem_installed=False):
    """The modules to load, in order, without repeats. nvidia_peermem: 'true', 'false' or 'auto'
    (load it where the module is installed for the running kernel: a fact of the node, not of
    whether the NVIDIA driver happened to be loaded during this run)."""
    names = list(modules) + ([nic_driver] if nic_driver else [])
    if nvidia_peermem == "true" or (nvidia_peermem == "auto" and peermem_installed):
        names.append("nvidia_peermem")
    out = []
    for name in names:
        name = name.replace("-", "_")
        if name not in out:
            out.append(name)
    return out


PEERMEM_UNUSABLE = ("nvidia_peermem is installed but does not load (%s): the kernel's RDMA stack has no "
                    "peer-memory API (it comes with MLNX OFED / DOCA); it is left out of modules-load.d. "
                    "GPUDirect RDMA can use DMA-BUF instead (the open GPU kernel module, kernel >= 5.12, "
                    "rdma-core >= 34), or set rdma_core_nvidia_peermem: true to make this a failure")


def builtin_modules(names, sys_module="/sys/module", modules_builtin=None):
    """The modules among names built into the running kernel: a /sys/module/NAME directory
    without initstate (the kernel's sysfs ABI gives initstate and refcnt to loadable modules
    only), or a line of modules.builtin (built-ins without parameters have no directory).
    modules_builtin: that file's path; None reads /lib/modules/<release>/modules.builtin."""
    if modules_builtin is None:
        modules_builtin = "/lib/modules/%s/modules.builtin" % os.uname()[2]
    try:
        with open(modules_builtin) as fh:
            listed = parse_modules_builtin(fh.read())
    except OSError:
        listed = set()
    out = []
    for n in names:
        base = os.path.join(sys_module, n)
        if n in listed or sysfs_says_builtin(os.path.isdir(base), os.path.exists(os.path.join(base, "initstate"))):
            out.append(n)
    return out


def missing_modules(names, sys_module="/sys/module", builtin=()):
    """Modules to load: neither loaded (/sys/module/NAME) nor built in."""
    return [n for n in names if n not in builtin and not os.path.isdir(os.path.join(sys_module, n))]


def modules_load_content(names):
    return HEADER % "RDMA modules loaded at boot." + "".join(n + "\n" for n in names)


def boot_modules(names, builtin):
    """The modules systemd-modules-load loads at boot: built-in ones are there already."""
    return [n for n in names if n not in builtin]


LIMITS_CONTENT = (HEADER % "RDMA registers (pins) memory."
                  + "*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n")

# systemd services do not go through PAM; the manager default covers them (from the next boot
# or `systemctl daemon-reexec`).
SYSTEMD_CONTENT = HEADER % "RDMA registers (pins) memory." + "[Manager]\nDefaultLimitMEMLOCK=infinity\n"


def memlock_pending(manager_limit):
    """Whether systemd's manager still runs with another DefaultLimitMEMLOCK than the drop-in's
    (`systemctl show -p DefaultLimitMEMLOCK --value` printed `manager_limit`; None: no systemd
    runs here, nothing to re-execute)."""
    return manager_limit is not None and manager_limit.strip() != "infinity"


def wanted_files(modules_load_file, modules, limits_file, systemd_dropin):
    """[{path, content, mode}] for the parts that are on (an empty path is off); no
    modules-load.d file when every wanted module is built in."""
    files = []
    if modules_load_file and modules:
        files.append({"path": modules_load_file, "content": modules_load_content(modules), "mode": "0644"})
    if limits_file:
        files.append({"path": limits_file, "content": LIMITS_CONTENT, "mode": "0644"})
    if systemd_dropin:
        files.append({"path": systemd_dropin, "content": SYSTEMD_CONTENT, "mode": "0644"})
    return files
