# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Which of a role's packages are missing on a node, read from dpkg or rpm in one command, so
a role calls the package manager only when something is missing (an idempotent rerun then
costs no package-manager run). The parsers are pure Python and unit-tested on recorded output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex


def dpkg_installed(output):
    """Installed names from `dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n' NAME...`:
    "ii" is installed; "un" (unknown), "rc" (removed, config left) and the rest are not."""
    out = set()
    for line in output.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "ii":
            out.add(words[1].split(":")[0])
    return out


def rpm_installed(output):
    """Installed names from `rpm -q --qf '%{NAME}\\n' NAME...`; a missing one prints
    "package NAME is not installed" instead."""
    return {line.strip() for line in output.splitlines()
            if line.strip() and not line.startswith("package ") and " " not in line.strip()}


def packages_for(packages, os_family):
    """A list applies to any OS family; a dict maps the family (Debian, RedHat) to its list.
    None when the dict has no entry for this family."""
    if isinstance(packages, (list, tuple)):
        return list(packages)
    return packages.get(os_family)


# The OS families of Ansible's distribution facts (ansible_os_family; OS_FAMILY_MAP in
# ansible/module_utils/facts/system/distribution.py), by the distributions' os-release IDs. The
# facts themselves are not collected here: their code is half of every module's payload.
FAMILY_OF_ID = {}
for _family, _ids in (
        ("RedHat", "rhel centos fedora scientific cloudlinux ol amzn virtuozzo xenserver alinux euleros "
                   "openeuler almalinux rocky tencentos eurolinux kylin miraclelinux"),
        ("Debian", "debian ubuntu raspbian neon linuxmint steamos devuan kali cumulus-linux pop parrot pardus "
                   "uos deepin osmc"),
        ("Suse", "suse sles sled sles_sap opensuse opensuse-leap opensuse-tumbleweed opensuse-microos sl-micro "
                 "alp-dolomite"),
        ("Archlinux", "arch antergos manjaro"),
        ("Gentoo", "gentoo funtoo"),
        ("Alpine", "alpine"),
        ("ClearLinux", "clear-linux-os"),
        ("Slackware", "slackware"),
        ("Altlinux", "altlinux"),
        ("Mandrake", "mandriva")):
    FAMILY_OF_ID.update((_id, _family) for _id in _ids.split())
OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")  # os-release(5): the first that exists


def os_release(text):
    """os-release(5) text -> {KEY: value}: shell-style assignments, quotes and escapes undone;
    a line that is not one is skipped."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or not key or key.startswith("#"):
            continue
        try:
            words = shlex.split(value, posix=True)
        except ValueError:  # an unbalanced quote
            continue
        values[key] = " ".join(words)
    return values


def family_of(values):
    """The OS family of an os-release mapping: its ID's, else the first of ID_LIKE's known
    ones; "" when none is known."""
    ids = [values.get("ID", "")] + values.get("ID_LIKE", "").split()
    for distro_id in ids:
        if distro_id.lower() in FAMILY_OF_ID:
            return FAMILY_OF_ID[distro_id.lower()]
    return ""


def os_family(paths=OS_RELEASE_FILES):
    """(family, ID) of this node, from its os-release file."""
    for path in paths:
        try:
            with open(path) as fh:
                values = os_release(fh.read())
        except (OSError, UnicodeDecodeError):
            continue
        return family_of(values), values.get("ID", "")
    return "", ""


def missing_packages(module, packages, what):
    """(os family, the wanted packages that are not installed). Fails the module when the
    family has no list or the node has neither dpkg nor rpm. ``what`` names the role's variable."""
    if isinstance(packages, (list, tuple)) and not packages:
        return "", []  # nothing to check: no need to read the distribution either
    family, distro_id = os_family()
    wanted = packages_for(packages, family)
    if wanted is None:
        module.fail_json(msg="no package list for OS family %s (os-release ID %s): set %s"
                             % (family or "unknown", distro_id or "unknown", what))
    if not wanted:
        return family, []
    dpkg = module.get_bin_path("dpkg-query")
    if dpkg:
        dummy, out, dummy = module.run_command([dpkg, "-W", "-f", "${db:Status-Abbrev} ${Package}\n"] + wanted)
        installed = dpkg_installed(out)
    else:
        rpm = module.get_bin_path("rpm")
        if not rpm:
            module.fail_json(msg="cannot tell which packages are installed: neither dpkg-query nor rpm "
                                 "is here (set %s: [] or turn package management off)" % what)
        dummy, out, dummy = module.run_command([rpm, "-q", "--qf", "%{NAME}\n"] + wanted)
        installed = rpm_installed(out)
    return family, [p for p in wanted if p not in installed]
