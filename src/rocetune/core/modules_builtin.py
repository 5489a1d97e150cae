"""Which kernel modules are built into the running kernel, by the kernel's own record of them.

The sysfs ABI (Documentation/ABI/testing/sysfs-module): /sys/module/NAME exists for a loaded
module and for a built-in one that has parameters, a version or drivers; `initstate` and
`refcnt` exist for loadable modules only. /lib/modules/RELEASE/modules.builtin (installed with
the kernel) lists every built-in one, as a path to the .ko it would have been; modprobe treats
"-" and "_" in a name alike.

The probe (probe/sources/kernel.py, reading through its root) and the rdma_core role's module
(plugins/module_utils/rocetune_modules_builtin.py, this file's copy, reading the node) judge with
this code. Standard library only.
"""

from __future__ import annotations

from typing import Set


def parse_modules_builtin(text: str) -> Set[str]:
    """The module names modules.builtin lists ("kernel/drivers/infiniband/core/ib_core.ko" ->
    "ib_core"); lines that name no .ko are ignored."""
    names = set()
    for line in text.splitlines():
        name = line.strip().rsplit("/", 1)[-1]
        if name.endswith(".ko"):
            names.add(name[:-3].replace("-", "_"))
    return names


def sysfs_says_builtin(has_directory: bool, has_initstate: bool) -> bool:
    """Whether /sys/module/NAME shows a built-in module: a directory without `initstate`."""
    return has_directory and not has_initstate
