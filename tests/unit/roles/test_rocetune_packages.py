"""The roles' missing-package check (plugins/module_utils/rocetune_packages.py) on recorded dpkg/rpm output:
a rerun must find nothing missing (no package-manager run), a fresh node must name exactly what
to install."""

from __future__ import annotations

from tests.unit.roles import FIXTURES, load_module_utils

P = load_module_utils("", "rocetune_packages")


def test_dpkg_status_abbrev_counts_only_ii_as_installed():
    out = (FIXTURES / "dpkg-query-W-status-abbrev-debian12.txt").read_text()
    installed = P.dpkg_installed(out)
    assert installed == {"iproute2", "python3-yaml", "rdma-core"}
    # "un  ethtool": known to dpkg but not installed; perftest: unknown (only a line on stderr).
    wanted = ["rdma-core", "perftest", "ethtool", "iproute2"]
    assert [p for p in wanted if p not in installed] == ["perftest", "ethtool"]


def test_dpkg_removed_with_config_left_is_not_installed_and_arch_suffix_is_dropped():
    assert P.dpkg_installed("rc  perftest\nii  libibverbs1:amd64\niU  rdma-core\n") == {"libibverbs1"}


def test_rpm_query_skips_the_not_installed_lines():
    out = (FIXTURES / "rpm-q-qf-name.txt").read_text()
    assert P.rpm_installed(out) == set()
    assert P.rpm_installed("rdma-core\npackage perftest is not installed\nlibibverbs-utils\n") == {
        "rdma-core", "libibverbs-utils"}


def test_package_lists_per_os_family():
    lists = {"Debian": ["rdma-core", "ibverbs-utils"], "RedHat": ["rdma-core", "libibverbs-utils"]}
    assert P.packages_for(lists, "RedHat") == ["rdma-core", "libibverbs-utils"]
    assert P.packages_for(lists, "Suse") is None
    assert P.packages_for(["a", "b"], "Suse") == ["a", "b"]
