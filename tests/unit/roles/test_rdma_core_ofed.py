"""rdma_core's OFED decisions: a tarball against the node, and the loaded driver against the
running kernel (real modinfo output: fixtures/PROVENANCE.md)."""

from __future__ import annotations

import pytest

from tests.unit.roles import FIXTURES, load_module_utils

OFED = load_module_utils("rdma_core", "rdma_core_ofed")
TARBALL = "MLNX_OFED_LINUX-4.9-5.1.0.0-ubuntu18.04-x86_64.tgz"


def test_ofed_info_versions():
    assert OFED.parse_ofed_info("MLNX_OFED_LINUX-5.4-3.1.0.0:\n") == "MLNX_OFED_LINUX-5.4-3.1.0.0"
    assert OFED.parse_ofed_info("OFED-internal-24.10-1.1.4:\n") == "OFED-internal-24.10-1.1.4"
    assert OFED.parse_ofed_info("bash: ofed_info: command not found") is None
    assert OFED.parse_ofed_info("") is None


def test_a_tarball_for_this_release_and_arch_fits():
    t = OFED.check_tarball(TARBALL, "Ubuntu", "18.04", "x86_64")
    assert t == {"version": "4.9-5.1.0.0", "distro": "ubuntu", "release": "18.04", "arch": "x86_64"}
    assert OFED.check_tarball("MLNX_OFED_LINUX-23.10-0.5.5.0-rhel9.2-x86_64.tgz", "Rocky", "9.2", "x86_64")


@pytest.mark.parametrize("distro, version, arch, message", [
    ("Ubuntu", "22.04", "x86_64", "built for ubuntu 18.04, the node runs 22.04"),
    ("Debian", "12", "x86_64", "built for ubuntu, the node runs Debian"),
    ("Ubuntu", "18.04", "aarch64", "built for x86_64, the node is aarch64"),
])
def test_a_tarball_for_another_node_is_refused_saying_why(distro, version, arch, message):
    with pytest.raises(OFED.OfedMismatch, match=message):
        OFED.check_tarball("/srv/" + TARBALL, distro, version, arch)


def test_a_file_that_is_not_an_ofed_tarball_is_refused():
    with pytest.raises(OFED.OfedMismatch, match="not an MLNX_OFED tarball name"):
        OFED.check_tarball("doca-host.deb", "Ubuntu", "22.04", "x86_64")


def test_ofed_installed_but_the_in_tree_driver_loads_is_a_clear_failure():
    text = (FIXTURES / "modinfo-mlx5_ib-inbox-el7-ucx6906.txt").read_text()
    with pytest.raises(OFED.OfedMismatch) as exc:
        OFED.check_kernel("mlx5_ib", "3.10.0-1160.62.1.el7.x86_64", text, "MLNX_OFED_LINUX-5.4-3.1.0.0")
    msg = str(exc.value)
    assert "distribution's own" in msg and "3.10.0-1160.62.1.el7.x86_64" in msg
    assert "/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko.xz" in msg


def test_an_ofed_module_built_for_another_kernel_names_both_kernels():
    text = ("filename:       /lib/modules/5.15.0-91-generic/updates/dkms/mlx5_ib.ko\n"
            "vermagic:       5.15.0-91-generic SMP mod_unload modversions\n")
    with pytest.raises(OFED.OfedMismatch, match="built for kernel 5.15.0-91-generic, the node runs 5.15.0-94-generic"):
        OFED.check_kernel("mlx5_ib", "5.15.0-94-generic", text, "MLNX_OFED_LINUX-5.8-1.0.1.1")


def test_no_module_for_the_running_kernel():
    with pytest.raises(OFED.OfedMismatch, match="no build for it"):
        OFED.check_kernel("mlx5_ib", "6.8.0-58-generic", "", "MLNX_OFED_LINUX-24.10-1.1.4.0")


def test_ofeds_own_build_for_the_running_kernel_passes():
    text = ("filename:       /lib/modules/6.8.0-58-generic/updates/dkms/mlx5_ib.ko.zst\n"
            "vermagic:       6.8.0-58-generic SMP preempt mod_unload modversions\n")
    assert "updates/dkms" in OFED.check_kernel("mlx5_ib", "6.8.0-58-generic", text, "MLNX_OFED_LINUX-24.10-1.1.4.0")


def test_os_release_gives_the_distribution_the_tarball_is_checked_against():
    distro, version = OFED.parse_os_release('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\nVERSION_ID="22.04"\n')
    assert (distro, version) == ("ubuntu", "22.04")
    with pytest.raises(OFED.OfedMismatch, match="18.04, the node runs 22.04"):
        OFED.check_tarball(TARBALL, distro, version, "x86_64")


def test_a_kabi_weak_updates_module_built_for_another_kernel_loads_and_passes():
    text = ("filename:       /lib/modules/5.14.0-427.22.1.el9_4.x86_64/weak-updates/mlnx-ofa_kernel/drivers/"
            "infiniband/hw/mlx5/mlx5_ib.ko\n"
            "vermagic:       5.14.0-427.13.1.el9_4.x86_64 SMP preempt mod_unload modversions\n")
    summary = OFED.check_kernel("mlx5_ib", "5.14.0-427.22.1.el9_4.x86_64", text, "OFED-internal-24.10-1.1.4")
    assert "kABI weak-updates (built for 5.14.0-427.13.1.el9_4.x86_64)" in summary
    # The same build outside weak-updates is still refused.
    with pytest.raises(OFED.OfedMismatch, match="built for kernel 5.14.0-427.13.1"):
        OFED.check_kernel("mlx5_ib", "5.14.0-427.22.1.el9_4.x86_64", text.replace("weak-updates", "extra"),
                       "OFED-internal-24.10-1.1.4")


def test_the_inbox_driver_still_loaded_after_the_install_asks_for_a_restart():
    installed = "filename: /lib/modules/6.8.0-58-generic/updates/dkms/mlx5_ib.ko.zst\nsrcversion:     A1B2C3D4E5F60718293A4B5\n"
    message = OFED.driver_restart("mlx5_ib", installed, "0F1E2D3C4B5A69788796A5B\n")
    assert "loaded mlx5_ib (srcversion 0F1E2D3C4B5A69788796A5B) is not the installed one (A1B2C3D4E5F60718293A4B5)" in message
    assert "reboot" in message
    assert OFED.driver_restart("mlx5_ib", installed, "A1B2C3D4E5F60718293A4B5\n") is None
    assert OFED.driver_restart("mlx5_ib", installed, None) is None  # not loaded: it loads the new one
