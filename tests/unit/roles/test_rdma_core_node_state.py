"""rdma_core's one-call node state: which modules to load (nvidia_peermem only with the NVIDIA
driver under auto), which are missing, and the files that persist modules and memlock."""

from __future__ import annotations

from tests.unit.roles import load_module_utils

S = load_module_utils("rdma_core", "rdma_core_node_state")


def _sys_module(tmp_path, *loaded):
    for name in loaded:
        (tmp_path / name).mkdir()
    return str(tmp_path)


def test_peermem_follows_the_nvidia_driver_under_auto(tmp_path):
    base = ["ib_uverbs", "rdma_ucm"]
    assert S.wanted_modules(base, "mlx5_ib", "auto", _sys_module(tmp_path)) == ["ib_uverbs", "rdma_ucm", "mlx5_ib"]
    (tmp_path / "nvidia").mkdir()
    assert S.wanted_modules(base, "mlx5_ib", "auto", str(tmp_path))[-1] == "nvidia_peermem"
    assert "nvidia_peermem" not in S.wanted_modules(base, "mlx5_ib", "false", str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert S.wanted_modules(base, "rdma-rxe", "true", str(empty))[-2:] == ["rdma_rxe", "nvidia_peermem"]


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
