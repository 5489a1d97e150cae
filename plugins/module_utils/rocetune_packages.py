# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Which of a role's packages are missing on a node, read from dpkg or rpm in one command, so
a role calls the package manager only when something is missing (an idempotent rerun then
costs no package-manager run). The parsers are pure Python and unit-tested on recorded output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


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


def os_family(module):
    """The OS family as Ansible's own facts name it (no setup call needed)."""
    from ansible.module_utils.facts.system.distribution import DistributionFactCollector
    return DistributionFactCollector().collect(module=module).get("os_family", "")


def missing_packages(module, packages, what):
    """(os family, the wanted packages that are not installed). Fails the module when the
    family has no list or the node has neither dpkg nor rpm. ``what`` names the role's variable."""
    if isinstance(packages, (list, tuple)) and not packages:
        return "", []  # nothing to check: no need to read the distribution either
    family = os_family(module)
    wanted = packages_for(packages, family)
    if wanted is None:
        module.fail_json(msg="no package list for OS family %s: set %s" % (family, what))
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
