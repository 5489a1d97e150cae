"""The roles' own checks refuse bad inventories before touching a node: run on localhost with a
local connection, the play must stop at the check with a message that names the fix."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.integration.test_ansible_static import REPO, env, tool

pytestmark = pytest.mark.slow  # runs ansible-playbook

PLAY = """\
- name: One role, nothing else
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: {role}
"""


def play(tmp_path, role: str, extra: dict, *args: str, path_first=None) -> subprocess.CompletedProcess:
    book = tmp_path / "play.yml"
    book.write_text(PLAY.format(role=role))
    e = env()
    if path_first:
        e["PATH"] = "%s:%s" % (path_first, e.get("PATH", ""))
    e["ANSIBLE_ROLES_PATH"] = str(REPO / "roles")
    # The test's own interpreter runs the modules (interpreter discovery may find a shim).
    extra = dict(extra, ansible_python_interpreter=sys.executable)
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", str(book), "-e", json.dumps(extra), *args],
                          cwd=tmp_path, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)


def test_an_mtu_too_small_for_roce_is_refused_before_any_change(tmp_path):
    result = play(tmp_path, "roce_net", {"roce_net_mtu": 1500, "roce_net_interfaces": ["definitely-absent0"]})
    assert result.returncode != 0
    assert "roce_net_mtu=1500 is too small" in result.stdout and "at least 4200" in result.stdout, result.stdout
    assert "no interface definitely-absent0" not in result.stdout  # refused before reading the interfaces


def test_a_misspelt_variable_is_named(tmp_path):
    result = play(tmp_path, "roce_net", {"roce_net_mtus": 9000})
    assert result.returncode != 0
    assert "unknown variable(s) roce_net_mtus" in result.stdout, result.stdout


# ---------------------------------------------------------------------------------------------
# rocetune_agent on this machine: check mode, install, rerun, upgrade


def _agent_vars(tmp_path, **extra) -> dict:
    return {"rocetune_agent_artifacts_dir": str(tmp_path / "artifacts"),
            "rocetune_agent_command": str(tmp_path / "bin" / "rocetune"),
            "rocetune_agent_lib_dir": str(tmp_path / "lib"),
            "rocetune_agent_python": "/usr/bin/python3", **extra}


def _recap_changed(output: str) -> int:
    import re
    m = re.search(r"localhost\s*: ok=\d+\s+changed=(\d+)", output)
    assert m, output
    return int(m.group(1))


def test_the_agent_installs_compiled_once_and_a_rerun_changes_nothing(tmp_path):
    (tmp_path / "bin").mkdir()
    agent = _agent_vars(tmp_path)
    command = tmp_path / "bin" / "rocetune"

    check = play(tmp_path, "rocetune_agent", agent, "--check", "--diff")
    assert check.returncode == 0, check.stdout
    # The pack (a controller-side artifact, made in check mode too) and the install it would do.
    assert _recap_changed(check.stdout) == 2 and "installed in" in check.stdout
    assert not command.exists() and not (tmp_path / "lib").exists()

    first = play(tmp_path, "rocetune_agent", agent)
    assert first.returncode == 0 and _recap_changed(first.stdout) == 1, first.stdout
    installed = sorted((tmp_path / "lib").iterdir())
    assert len(installed) == 1 and installed[0].suffix == ".pyz", installed  # the zip, run as it is
    assert command.read_text().startswith("#!/usr/bin/python3 -IS\n")
    out = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("rocetune "), out.stderr

    again = play(tmp_path, "rocetune_agent", agent, "--check", "--diff")
    assert again.returncode == 0 and _recap_changed(again.stdout) == 0, again.stdout
    rerun = play(tmp_path, "rocetune_agent", agent)
    assert rerun.returncode == 0 and _recap_changed(rerun.stdout) == 0, rerun.stdout


def test_a_new_agent_replaces_the_old_tree_and_an_edited_launcher_is_restored(tmp_path):
    from rocetune import agentpack
    (tmp_path / "bin").mkdir()
    packages = []
    for name, python in (("a.pyz", "/usr/bin/python3"), ("b.pyz", "/usr/bin/env")):
        packages.append(tmp_path / name)
        packages[-1].write_bytes(agentpack.build(python=python))  # two agents, two sha256s
    command = tmp_path / "bin" / "rocetune"
    first = play(tmp_path, "rocetune_agent", _agent_vars(tmp_path, rocetune_agent_package=str(packages[0])))
    assert first.returncode == 0, first.stdout
    old = sorted((tmp_path / "lib").iterdir())
    command.write_text(command.read_text().replace("-IS", "-S"))
    second = play(tmp_path, "rocetune_agent", _agent_vars(tmp_path, rocetune_agent_package=str(packages[1])),
                  "--diff")
    assert second.returncode == 0 and _recap_changed(second.stdout) == 1, second.stdout
    new = sorted((tmp_path / "lib").iterdir())
    assert len(old) == len(new) == 1 and old != new, (old, new)  # the old tree is gone
    assert command.read_text().startswith("#!/usr/bin/python3 -IS\n")
    assert str(new[0]) in command.read_text()


# ---------------------------------------------------------------------------------------------
# nic_firmware on this machine, with an mlxconfig that replays recorded real outputs


NIC_FIXTURES = REPO / "tests" / "unit" / "roles" / "fixtures"


def fake_mlxconfig(tmp_path, fixture: str):
    """An `mlxconfig` that replays a recorded query output and logs its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "mlxconfig"
    script.write_text("#!/bin/sh\necho \"$@\" >> %s\ncat %s\n" % (tmp_path / "calls", NIC_FIXTURES / fixture))
    script.chmod(0o755)
    return bin_dir


def test_nic_firmware_without_settings_does_nothing(tmp_path):
    bin_dir = fake_mlxconfig(tmp_path, "mlxconfig-q-connectx5-shs-docs.txt")
    result = play(tmp_path, "nic_firmware", {"nic_firmware_devices": ["0000:3b:00.0"]}, "-v",
                  path_first=bin_dir)
    assert result.returncode == 0, result.stdout
    assert "nic_firmware_reboot_required: false" in result.stdout, result.stdout
    assert "changed=0" in result.stdout and not (tmp_path / "calls").exists(), result.stdout


def test_nic_firmware_refuses_bad_settings_naming_them(tmp_path):
    result = play(tmp_path, "nic_firmware", {"nic_firmware_settings": {"pci_wr_ordering": 1},
                                             "nic_firmware_interfaces": ["definitely-absent0"]})
    assert result.returncode != 0
    assert "'pci_wr_ordering' is not an NVCONFIG parameter name" in result.stdout, result.stdout
    assert "nothing was changed" in result.stdout


def test_nic_firmware_names_an_interface_without_a_pci_device(tmp_path):
    result = play(tmp_path, "nic_firmware", {"nic_firmware_settings": {"PCI_WR_ORDERING": "per_mkey"},
                                             "nic_firmware_interfaces": ["definitely-absent0"]})
    assert result.returncode != 0
    assert "definitely-absent0: no PCI device" in result.stdout, result.stdout


def test_nic_firmware_refuses_force_relax_naming_the_risk_and_the_opt_in(tmp_path):
    bin_dir = fake_mlxconfig(tmp_path, "mlxconfig-e-q-egrep-connectx6-shs-docs.txt")
    result = play(tmp_path, "nic_firmware", {"nic_firmware_devices": ["0000:86:00.0"],
                                             "nic_firmware_settings": {"PCI_WR_ORDERING": "force_relax"}},
                  path_first=bin_dir)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "refusing PCI_WR_ORDERING=force_relax" in out and "NVIDIA/nccl#531" in out, result.stdout
    assert "nic_firmware_allow_forced_write_reordering: true" in out and "nothing was changed" in out
    assert not (tmp_path / "calls").exists()  # refused before any device was read


def test_nic_firmware_check_mode_shows_the_diff_and_sets_nothing(tmp_path):
    bin_dir = fake_mlxconfig(tmp_path, "mlxconfig-q-connectx5-shs-docs.txt")
    result = play(tmp_path, "nic_firmware", {"nic_firmware_devices": ["0000:3b:00.1"], "nic_firmware_tool": "mlxconfig",
                                             "nic_firmware_settings": {"SAFE_MODE_ENABLE": False,
                                                                       "ADVANCED_PCI_SETTINGS": True}},
                  "--check", "--diff", path_first=bin_dir)
    assert result.returncode == 0, result.stdout
    assert "-0000:3b:00.0 SAFE_MODE_ENABLE: True(1)" in result.stdout, result.stdout
    assert "+0000:3b:00.0 SAFE_MODE_ENABLE: 0" in result.stdout, result.stdout
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["-d 0000:3b:00.0 -e q ADVANCED_PCI_SETTINGS SAFE_MODE_ENABLE"]  # queried, never set


def test_nic_firmware_reports_a_pending_reset_and_sets_nothing_again(tmp_path):
    bin_dir = fake_mlxconfig(tmp_path, "mlxconfig-e-q-egrep-connectx6-shs-docs.txt")
    marker = tmp_path / "reboot-required"
    result = play(tmp_path, "nic_firmware", {"nic_firmware_devices": ["0000:86:00.0"],
                                             "nic_firmware_settings": {"PCI_WR_ORDERING": "force_relax"},
                                             "nic_firmware_allow_forced_write_reordering": True,
                                             "__nic_firmware_reboot_marker": str(marker)},
                  "-v", path_first=bin_dir)
    assert result.returncode == 0, result.stdout
    assert "firmware reset (mlxfwreset) or a cold reboot on 0000:86:00.0 (PCI_WR_ORDERING)" in result.stdout
    assert "nic_firmware_reboot_required: true" in result.stdout, result.stdout
    assert marker.read_text() == "*** System restart required ***\n"
    assert "changed=1" in result.stdout  # the marker, nothing else
    rerun = play(tmp_path, "nic_firmware", {"nic_firmware_devices": ["0000:86:00.0"],
                                            "nic_firmware_settings": {"PCI_WR_ORDERING": "force_relax"},
                                            "nic_firmware_allow_forced_write_reordering": True,
                                            "__nic_firmware_reboot_marker": str(marker)},
                 path_first=bin_dir)
    assert rerun.returncode == 0 and "changed=0" in rerun.stdout, rerun.stdout
    assert len((tmp_path / "calls").read_text().splitlines()) == 2  # one query per run; never a set
