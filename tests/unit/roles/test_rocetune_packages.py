"""The roles' missing-package check (plugins/module_utils/rocetune_packages.py) on recorded dpkg/rpm output:
a rerun must find nothing missing (no package-manager run), a fresh node must name exactly what
to install."""

from __future__ import annotations

import pytest

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


# The lines that matter of the os-release files these distributions ship (os-release(5)).
OS_RELEASES = [
    ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n', "Debian"),
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n', "Debian"),
    ('NAME="Red Hat Enterprise Linux"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="9.4"\n', "RedHat"),
    ('NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n', "RedHat"),
    ('NAME="Oracle Linux Server"\nID="ol"\nID_LIKE="fedora"\nVERSION_ID="8.10"\n', "RedHat"),
    ('NAME="Amazon Linux"\nID="amzn"\nID_LIKE="fedora"\nVERSION_ID="2023"\n', "RedHat"),
    ('NAME="SLES"\nID="sles"\nID_LIKE="suse"\nVERSION_ID="15.5"\n', "Suse"),
    ("NAME='a derivative'\nID=mydistro\nID_LIKE='ubuntu debian'\n", "Debian"),
    ('NAME="Unheard of"\nID=unheard\n', ""),
]


@pytest.mark.parametrize("text,family", OS_RELEASES)
def test_the_os_family_is_ansibles_name_for_the_os_release_id_or_id_like(text, family):
    assert P.family_of(P.os_release(text)) == family


def test_os_release_quotes_comments_and_broken_lines(tmp_path):
    values = P.os_release('# a comment\nNAME="Foo \\"Bar\\" Linux"\nID=\'foo\'\nBROKEN="unclosed\nnot a line\nID_LIKE=\n')
    assert values == {"NAME": 'Foo "Bar" Linux', "ID": "foo", "ID_LIKE": ""}
    first, second = tmp_path / "etc-os-release", tmp_path / "usr-lib-os-release"
    second.write_text("ID=rocky\n")
    assert P.os_family((str(first), str(second))) == ("RedHat", "rocky")  # the first that exists
    first.write_text("ID=ubuntu\n")
    assert P.os_family((str(first), str(second))) == ("Debian", "ubuntu")
    assert P.os_family((str(tmp_path / "none"),)) == ("", "")


# The OS family of each shipped os-release file (tests/unit/roles/fixtures/os-release, PROVENANCE.md):
# Ansible's family for the distributions its facts map; for the others, the family of the first
# ID_LIKE entry that maps (mageia: "mandriva fedora"; kvmibm: "rhel fedora"); unknown otherwise.
SHIPPED = {
    "ubuntu24": "Debian", "ubuntu2604": "Debian", "debian13": "Debian", "kali": "Debian", "linuxmint17": "Debian",
    "raspbian8": "Debian", "rhel9": "RedHat", "rhel10": "RedHat", "rocky9": "RedHat", "almalinux10": "RedHat",
    "centosstream9": "RedHat", "amazon2023": "RedHat", "oracle7": "RedHat", "fedora42": "RedHat",
    "scientific7": "RedHat", "cloudlinux7": "RedHat", "kvmibm1": "RedHat", "sles12": "Suse", "opensuse15": "Suse",
    "arch": "Archlinux", "manjaro1512": "Archlinux", "gentoo": "Gentoo", "alpine": "Alpine",
    "slackware14": "Slackware", "altlinux10": "Altlinux", "mageia5": "Mandrake", "coreos": "", "guix": "",
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_os_family_of_os_release_files_as_distributions_ship_them(name):
    path = FIXTURES / "os-release" / name
    assert P.os_family((str(path),))[0] == SHIPPED[name], path.read_text()


def test_every_shipped_os_release_file_is_read():
    assert sorted(p.name for p in (FIXTURES / "os-release").iterdir()) == sorted(SHIPPED)
