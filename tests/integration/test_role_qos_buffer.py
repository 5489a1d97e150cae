"""roce_qos with a plan that states lossless buffers, run by Ansible on this machine against an
`mlnx_qos` that replays a published ConnectX output (tests/fixtures/qos/PROVENANCE.md) and logs
its arguments: check mode shows the buffer change as a diff and sets nothing; what the NIC cannot
take is a warning, or a failure with nothing changed under roce_qos_required."""

from __future__ import annotations

import pytest

from tests.integration.test_ansible_static import REPO
from tests.integration.test_role_checks import play
from tests.integration.test_role_hostile_values import playbook

pytestmark = pytest.mark.slow  # runs ansible-playbook

QOS_FIXTURES = REPO / "tests" / "fixtures" / "qos"
PLAN = """\
version: 1
buffer:
  cable_length: 30
  prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]
  buffer_size: [32768, 229120, 0, 0, 0, 0, 0, 0]
"""


def fake_mlnx_qos(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "mlnx_qos"
    script.write_text("#!/bin/sh\necho \"$@\" >> %s\n[ \"$*\" = \"-i lo\" ] && cat %s\nexit 0\n"
                      % (tmp_path / "calls", QOS_FIXTURES / "mlnx_qos-i-eth2-buffers-mlnx-tools-commit.txt"))
    script.chmod(0o755)
    return bin_dir


def qos_vars(tmp_path, **extra):
    plan = tmp_path / "qos.yml"
    plan.write_text(PLAN)
    # `lo` stands for the fabric NIC: it exists on every machine, and nothing here changes it.
    return {"roce_qos_interfaces": ["lo"], "roce_qos_plan_file": str(plan), "roce_qos_backend": "mlnx_qos",
            "roce_qos_manage_packages": False, "roce_qos_global_pause_off": False, "roce_qos_rdma_cm": False,
            "roce_qos_allow_link_flap": True, "roce_qos_boot_unit": False,
            "__roce_qos_lib_dir": str(tmp_path / "lib"), "__roce_qos_settings_file": str(tmp_path / "roce_qos.json"),
            "__roce_qos_unit": "rocetune-qos-buffer-test.service", **extra}


def test_check_mode_shows_the_buffer_diff_and_sets_nothing(tmp_path):
    result = play(tmp_path, "roce_qos", qos_vars(tmp_path), "--check", "--diff", path_first=fake_mlnx_qos(tmp_path))
    assert result.returncode == 0, result.stdout
    out = result.stdout
    assert "lo: lossless buffers" in out, out
    assert "-prio_buffer: 1 1 1 1 1 1 1 1" in out and "+prio_buffer: 0 0 0 1 0 0 0 0" in out, out
    assert "-buffer_size: 0 187200 0 0 0 0 0 0" in out and "+buffer_size: 32768 229120 0 0 0 0 0 0" in out, out
    # `lo` has no NIC driver: the cable length is reported, not applied, and does not fail the play.
    assert "buffer.cable_length not applied: the PFC delay is a cable length in metres only on mlx5_core" in out, out
    assert (tmp_path / "calls").read_text().splitlines() == ["-i lo"]  # read, never set
    assert not (tmp_path / "lib").exists() and not (tmp_path / "roce_qos.json").exists()


def test_required_fails_on_what_the_nic_cannot_take_and_changes_nothing(tmp_path):
    result = play(tmp_path, "roce_qos", qos_vars(tmp_path, roce_qos_required=True), path_first=fake_mlnx_qos(tmp_path))
    assert result.returncode != 0
    out = result.stdout
    assert "buffer.cable_length not applied" in out and "(roce_qos_required: true)" in out, out
    assert "nothing was changed" in out, out
    assert (tmp_path / "calls").read_text().splitlines() == ["-i lo"]


def test_the_boot_unit_gets_the_libraries_the_module_ran_and_loses_them_when_turned_off(tmp_path):
    # Run by Ansible (the module from its payload zip): the libraries beside the boot script are
    # the module's own sources, byte for byte the collection's files; none travels as an argument.
    out = tmp_path / "out"
    boot = {"lib_dir": str(out / "lib"), "script": {"path": str(out / "lib" / "reapply.py"), "content": "x\n"},
            "settings": {"path": str(out / "qos.json"), "data": {}},
            "unit": {"path": str(out / "system" / "q.service"), "content": "[Unit]\n"}}
    tasks = [{"name": "QoS boot unit", "rocetune.fabric.roce_qos_apply": {
        "interfaces": [], "plan_file": str(out / "qos.yml"), "boot": boot}}]
    proc = playbook(tmp_path, tasks)
    assert proc.returncode == 0 and "changed=1" in proc.stdout, proc.stdout
    libs = sorted(p.name for p in (out / "lib").iterdir())
    assert libs == sorted(["reapply.py", "roce_qos_state.py", "rocetune_qos_plan.py", "roce_qos_buffer.py",
                           "rocetune_qos_tools.py", "rocetune_nic_facts.py"])
    for name in (n for n in libs if n != "reapply.py"):
        assert (out / "lib" / name).read_text() == (REPO / "plugins" / "module_utils" / name).read_text(), name
    again = playbook(tmp_path, tasks)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout
    tasks[0]["rocetune.fabric.roce_qos_apply"]["boot"] = dict(boot, state="absent")
    off = playbook(tmp_path, tasks)
    assert off.returncode == 0 and "changed=1" in off.stdout, off.stdout
    assert list((out / "lib").iterdir()) == [] and not (out / "system" / "q.service").exists()
