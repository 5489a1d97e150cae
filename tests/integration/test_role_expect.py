"""The rocetune_env role writes the node's expectations and check configuration, passes them and
--no-degrade to the boot unit, installs the opt-in doctor timer, and fails a node that falls
short of its expectations before writing anything. Run on localhost in check mode (nothing
written), over the dgx-h100-rails-dmabuf fixture root."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixtures.roots import root_of
from tests.integration.test_ansible_static import REPO, env, tool
from tests.integration.test_role_checks import PLAY

pytestmark = pytest.mark.slow  # runs ansible-playbook

EXPECT = {"gpus": {"count": 8}, "rails": {"count": 8, "per_gpu": True, "speed_gbps": 400, "mtu": 9000},
          "env": {"NCCL_IB_TC": "106"}}


def converge_check(tmp_path, extra: dict) -> subprocess.CompletedProcess:
    agent = tmp_path / "rocetune"
    agent.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune \"$@\"\n")
    agent.chmod(0o755)
    book = tmp_path / "play.yml"
    book.write_text(PLAY.format(role="rocetune_env"))
    e = env()
    e["ANSIBLE_ROLES_PATH"] = str(REPO / "roles")
    extra = dict({"ansible_python_interpreter": sys.executable, "rocetune_env_command": str(agent),
                  "rocetune_env_root": root_of("dgx-h100-rails-dmabuf"),
                  "rocetune_env_file": str(tmp_path / "nccl.env"), "rocetune_env_nccl_conf": False,
                  "rocetune_env_fetch_features": False}, **extra)
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--check", "--diff", str(book),
                           "-e", json.dumps(extra)], cwd=tmp_path, env=e, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def test_expectations_check_configuration_and_the_doctor_timer_are_planned(tmp_path):
    proc = converge_check(tmp_path, {
        "rocetune_env_expect": EXPECT, "rocetune_env_doctor_timer": True, "rocetune_env_doctor_interval": "10min",
        "rocetune_env_doctor_config": {"skip": [{"id": "doctor-acs-redirect", "reason": "no lspci on the image"}]},
        "rocetune_env_doctor_metrics_file": str(tmp_path / "textfile" / "rocetune.prom")})
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "+++ after: /etc/rocetune/expect.yml" in out
    assert "+# Written by rocetune's rocetune_env role: change the inventory, not this file." in out
    assert "+  per_gpu: true" in out and "+  NCCL_IB_TC: '106'" in out
    assert "+++ after: /etc/rocetune/doctor.yml" in out and "+  reason: no lspci on the image" in out
    # the boot unit keeps a degraded env out, with the same files the role planned with
    assert " env --env-dir " in out and " --no-degrade --expect /etc/rocetune/expect.yml --doctor-config " \
        "/etc/rocetune/doctor.yml --format sh -o " in out, out
    # the timer, enabled by its timers.target link, runs doctor for node_exporter
    assert "+++ after: /etc/systemd/system/rocetune-doctor.timer" in out and "+OnUnitActiveSec=10min" in out
    assert "+++ after: /etc/systemd/system/timers.target.wants/rocetune-doctor.timer" in out
    # ... and keeps the NIC counters' window current (--save-baseline), as the gate does
    assert f" -q doctor --metrics {tmp_path / 'textfile' / 'rocetune.prom'} --save-baseline --expect " \
        "/etc/rocetune/expect.yml" in out
    assert "+SuccessExitStatus=1 5" in out
    # the textfile collector's directory would be made (check mode: it is not)
    assert f"path: {tmp_path / 'textfile'}\n" in out and "+    state: directory" in out, out
    assert not (tmp_path / "nccl.env").exists() and not (tmp_path / "textfile").exists()


def test_without_them_nothing_is_written_and_the_timer_is_not_installed(tmp_path):
    proc = converge_check(tmp_path, {"rocetune_env_no_degrade": False})
    out = proc.stdout
    assert proc.returncode == 0, out
    assert "expect.yml" not in out and "doctor.yml" not in out and "rocetune-doctor" not in out
    (execstart,) = [ln for ln in out.splitlines() if ln.startswith("+ExecStart=")]
    assert " env --env-dir " in execstart and "--no-degrade" not in execstart


def test_a_node_short_of_its_expectations_fails_before_anything_is_written(tmp_path):
    proc = converge_check(tmp_path, {"rocetune_env_expect": dict(EXPECT, gpus={"count": 16})})
    assert proc.returncode != 0
    assert "would refuse to replace" in proc.stdout and "8 GPU(s), expected 16" in proc.stdout, proc.stdout
    assert "+++ after: /etc/rocetune/expect.yml" not in proc.stdout


def test_a_wrong_field_is_named_as_the_variable_it_came_from(tmp_path):
    proc = converge_check(tmp_path, {"rocetune_env_expect": {"rails": {"cuont": 8}}})
    assert proc.returncode != 0
    assert "expect (the role's rocetune_env_expect): rails.cuont: not a known key (did you mean count?)" \
        in proc.stdout, proc.stdout
    proc = converge_check(tmp_path, {"rocetune_env_doctor_config": {"skip": [{"id": "doctor-ecn-of", "reason": "x"}]}})
    assert proc.returncode != 0
    assert "no check 'doctor-ecn-of' (did you mean doctor-ecn-off?)" in proc.stdout, proc.stdout


def test_a_timer_interval_systemd_would_not_take_is_refused(tmp_path):
    proc = converge_check(tmp_path, {"rocetune_env_doctor_timer": True,
                                     "rocetune_env_doctor_interval": "5min\nExecStartPre=/bin/sh"})
    assert proc.returncode != 0 and "must be a systemd time span" in proc.stdout, proc.stdout


MODULE_PLAY = """\
- name: The env module alone, writing for real under a temporary directory
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Plan and write
      rocetune.fabric.rocetune_env:
        command: {agent}
        root: {root}
        env_file: {tmp}/nccl.env
        expect_path: {tmp}/expect.yml
        doctor_config_path: {tmp}/doctor.yml
{extra}
"""
HEADER = "# Written by rocetune's rocetune_env role: change the inventory, not this file.\n"


def module_run(tmp_path, extra: str = "") -> subprocess.CompletedProcess:
    agent = tmp_path / "rocetune"
    agent.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune \"$@\"\n")
    agent.chmod(0o755)
    book = tmp_path / "play.yml"
    book.write_text(MODULE_PLAY.format(agent=agent, root=root_of("dgx-h100-rails-dmabuf"), tmp=tmp_path,
                                       extra=extra))
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", str(book),
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable})],
                          cwd=tmp_path, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)


def test_the_module_writes_its_files_once_and_removes_only_its_own(tmp_path):
    content = HEADER + "rails:\n  count: 8\n"
    extra = "        expect: |\n" + "".join(f"          {ln}\n" for ln in content.splitlines())
    first = module_run(tmp_path, extra)
    assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout
    assert (tmp_path / "expect.yml").read_text() == content and (tmp_path / "nccl.env").exists()
    again = module_run(tmp_path, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout
    removed = module_run(tmp_path)
    assert removed.returncode == 0 and "changed=1" in removed.stdout, removed.stdout
    assert not (tmp_path / "expect.yml").exists()
    (tmp_path / "expect.yml").write_text("# the site's own\nrails: {count: 8}\n")
    kept = module_run(tmp_path)
    assert kept.returncode == 0 and "changed=0" in kept.stdout, kept.stdout
    assert (tmp_path / "expect.yml").read_text() == "# the site's own\nrails: {count: 8}\n"


def test_the_module_makes_a_missing_directory_and_leaves_an_existing_one_as_it_is(tmp_path):
    extra = f"        dirs: [{tmp_path}/textfile/collector, {tmp_path}/kept]\n"
    (tmp_path / "kept").mkdir(mode=0o700)
    (tmp_path / "kept").chmod(0o700)
    first = module_run(tmp_path, extra)
    assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout
    for made in (tmp_path / "textfile", tmp_path / "textfile" / "collector"):
        assert made.is_dir() and made.stat().st_mode & 0o777 == 0o755, made
    assert (tmp_path / "kept").stat().st_mode & 0o777 == 0o700  # its package's mode stays
    again = module_run(tmp_path, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout


def test_a_directory_through_a_file_fails_before_anything_is_written(tmp_path):
    (tmp_path / "afile").write_text("")
    proc = module_run(tmp_path, f"        dirs: [{tmp_path}/afile/textfile]\n")
    assert proc.returncode != 0
    assert f"dirs: cannot make {tmp_path}/afile/textfile: {tmp_path}/afile is not a directory" in proc.stdout, \
        proc.stdout
    assert not (tmp_path / "nccl.env").exists()
