"""rdma_core's one-call node state: which modules to load (nvidia_peermem under auto where it is
installed), which are missing, and the files that persist modules and memlock."""

from __future__ import annotations

from tests.unit.roles import load_module_utils

S = load_module_utils("rdma_core", "rdma_core_node_state")


def _sys_module(tmp_path, *loaded):
    for name in loaded:
        (tmp_path / name).mkdir()
    return str(tmp_path)


def test_peermem_under_auto_follows_whether_it_is_installed_not_whether_the_driver_is_loaded():
    base = ["ib_uverbs", "rdma_ucm"]
    assert S.wanted_modules(base, "mlx5_ib", "auto") == ["ib_uverbs", "rdma_ucm", "mlx5_ib"]
    assert S.wanted_modules(base, "mlx5_ib", "auto", peermem_installed=True)[-1] == "nvidia_peermem"
    assert "nvidia_peermem" not in S.wanted_modules(base, "mlx5_ib", "false", peermem_installed=True)
    assert S.wanted_modules(base, "rdma-rxe", "true")[-2:] == ["rdma_rxe", "nvidia_peermem"]
    message = S.PEERMEM_UNUSABLE % "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument"
    assert "Invalid argument" in message and "DMA-BUF" in message and "rdma_core_nvidia_peermem: true" in message


def test_names_are_normalised_and_not_repeated():
    assert S.wanted_modules(["ib-uverbs", "ib_uverbs"], "ib_uverbs", "false") == ["ib_uverbs"]


def test_only_modules_without_sys_module_entry_are_loaded(tmp_path):
    root = _sys_module(tmp_path, "ib_uverbs")
    assert S.missing_modules(["ib_uverbs", "rdma_ucm", "rdma_rxe"], root) == ["rdma_ucm", "rdma_rxe"]


def test_files_for_the_parts_that_are_on():
    files = S.wanted_files("/etc/modules-load.d/r.conf", ["ib_uverbs", "rdma_rxe"], "/etc/security/limits.d/m.conf",
                           "/etc/systemd/system.conf.d/m.conf")
    assert [f["path"] for f in files] == ["/etc/modules-load.d/r.conf", "/etc/security/limits.d/m.conf",
                                          "/etc/systemd/system.conf.d/m.conf"]
    assert files[0]["content"].splitlines()[1:] == ["ib_uverbs", "rdma_rxe"]
    assert "*    hard    memlock    unlimited" in files[1]["content"]
    assert "DefaultLimitMEMLOCK=infinity" in files[2]["content"]
    assert S.wanted_files("", [], "", "") == []


def _h100_kernel(tmp_path):
    """The H100 host's kernel: mlx5_core, mlx5_ib and ib_core built in (directories without
    initstate), ib_uverbs loadable and loaded, rdma_ucm neither."""
    sysmod = tmp_path / "sys_module"
    for name, files in {"mlx5_core": ["parameters/prof_sel"], "mlx5_ib": [], "ib_core": ["parameters/netns_mode"],
                        "ib_uverbs": ["initstate", "refcnt"], "nvidia": ["initstate", "refcnt"]}.items():
        (sysmod / name).mkdir(parents=True)
        for f in files:
            (sysmod / name / f).parent.mkdir(parents=True, exist_ok=True)
            (sysmod / name / f).write_text("live\n" if f == "initstate" else "1\n")
    listing = tmp_path / "modules.builtin"
    listing.write_text("kernel/drivers/infiniband/core/ib_core.ko\nkernel/drivers/infiniband/core/rdma-ucm.ko\n")
    return str(sysmod), str(listing)


def test_built_in_modules_are_present_not_loaded_and_not_persisted(tmp_path):
    sysmod, listing = _h100_kernel(tmp_path)
    wanted = S.wanted_modules(["ib_uverbs", "rdma_ucm"], "mlx5_ib", "auto", sysmod)
    assert wanted == ["ib_uverbs", "rdma_ucm", "mlx5_ib", "nvidia_peermem"]
    builtin = S.builtin_modules(wanted, sysmod, listing)
    assert builtin == ["rdma_ucm", "mlx5_ib"]  # rdma_ucm from modules.builtin, mlx5_ib from /sys/module
    assert S.missing_modules(wanted, sysmod, builtin) == ["nvidia_peermem"]  # never modprobe a built-in
    boot = S.boot_modules(wanted, builtin)
    assert boot == ["ib_uverbs", "nvidia_peermem"]
    content = S.wanted_files("/etc/modules-load.d/r.conf", boot, "", "")[0]["content"]
    assert content.splitlines()[1:] == ["ib_uverbs", "nvidia_peermem"]


def test_a_kernel_with_every_wanted_module_built_in_gets_no_modules_load_file(tmp_path):
    sysmod, listing = _h100_kernel(tmp_path)
    wanted = ["ib_core", "mlx5_core", "mlx5_ib"]
    builtin = S.builtin_modules(wanted, sysmod, listing)
    assert builtin == wanted and S.missing_modules(wanted, sysmod, builtin) == []
    assert S.wanted_files("/etc/modules-load.d/r.conf", S.boot_modules(wanted, builtin), "", "") == []


def test_the_rerun_sees_the_same_state(tmp_path):
    """After the first run loaded nvidia_peermem (now a directory with initstate), nothing is
    left to load and the file's content is the same: changed=0."""
    sysmod, listing = _h100_kernel(tmp_path)
    wanted = S.wanted_modules(["ib_uverbs", "rdma_ucm"], "mlx5_ib", "auto", sysmod)
    first = S.wanted_files("/f", S.boot_modules(wanted, S.builtin_modules(wanted, sysmod, listing)), "", "")
    peermem = tmp_path / "sys_module" / "nvidia_peermem"
    peermem.mkdir()
    (peermem / "initstate").write_text("live\n")
    builtin = S.builtin_modules(wanted, sysmod, listing)
    assert S.missing_modules(wanted, sysmod, builtin) == []
    assert S.wanted_files("/f", S.boot_modules(wanted, builtin), "", "") == first


def test_a_missing_modules_builtin_file_is_no_error(tmp_path):
    sysmod, _ = _h100_kernel(tmp_path)
    assert S.builtin_modules(["rdma_ucm", "mlx5_core"], sysmod, str(tmp_path / "absent")) == ["mlx5_core"]
