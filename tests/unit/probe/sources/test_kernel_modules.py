"""Kernel modules: loaded ones from /proc/modules, built-in ones from /sys/module (a directory
without initstate) or modules.builtin; both are present, only loaded ones are in /proc/modules."""

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import kernel
from tests.unit.treekit import Dir, make

# The H100 host's kernel (6.18.44-fc): mlx5 and ib_core built in, the NVIDIA driver loadable.
H100_LIKE = {
    "proc/modules": "nvidia_uvm 1830912 - - Live 0xffffffffc080c000 (O)\n"
                    "nvidia 14299136 - - Live 0xffffffffc0400000 (O)\n",
    "proc/sys/kernel/osrelease": "6.18.44-fc\n",
    "sys/module/nvidia/initstate": "live\n",
    "sys/module/nvidia/refcnt": "1\n",
    "sys/module/mlx5_core/parameters/prof_sel": "2\n",
    "sys/module/mlx5_ib/drivers": Dir("d"),
    "sys/module/ib_core/parameters/netns_mode": "Y\n",
}


def _kernel(tmp_path, tree):
    return kernel.probe(ProbeContext(HostRoot(make(tmp_path, tree))))


def test_built_in_drivers_are_present_and_said_to_be_built_in(tmp_path):
    k = _kernel(tmp_path, H100_LIKE)
    assert k["builtin_modules"] == ["ib_core", "mlx5_core", "mlx5_ib"]
    assert k["modules"]["mlx5_core"] and k["modules"]["mlx5_ib"] and k["modules"]["ib_core"]
    assert k["modules"]["nvidia"] and "nvidia" not in k["builtin_modules"]
    assert not k["modules"]["ib_uverbs"] and not k["modules"]["nvidia_peermem"]


def test_modules_builtin_names_built_ins_without_a_sys_module_directory(tmp_path):
    tree = dict(H100_LIKE)
    tree["lib/modules/6.18.44-fc/modules.builtin"] = (
        "kernel/drivers/infiniband/core/ib_uverbs.ko\nkernel/drivers/infiniband/core/rdma-ucm.ko\n"
        "kernel/fs/ext4/ext4.ko\n")
    k = _kernel(tmp_path, tree)
    assert k["builtin_modules"] == ["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "rdma_ucm"]
    assert k["modules"]["ib_uverbs"] and k["modules"]["rdma_ucm"]


def test_a_loadable_module_is_never_taken_for_built_in(tmp_path):
    tree = {"proc/modules": "mlx5_ib 1 0 - Live 0x0\n", "sys/module/mlx5_ib/initstate": "live\n",
            "sys/module/mlx5_core/initstate": "coming\n"}  # loading while the probe ran
    k = _kernel(tmp_path, tree)
    assert k["builtin_modules"] == []
    assert k["modules"]["mlx5_ib"] and not k["modules"]["mlx5_core"]
