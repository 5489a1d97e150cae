"""rocetune_env_nccl_version reaches the agent's run and the node settings file, which the boot
unit, the gate, the timer and the fleet play read. Run on localhost in check mode (nothing
written), over a fixture root."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.fixtures.roots import root_of
from tests.integration.test_ansible_static import REPO, env, tool
from tests.integration.test_role_checks import PLAY

pytestmark = pytest.mark.slow  # runs ansible-playbook


def converge_check(tmp_path, extra: dict) -> str:
    agent = tmp_path / "rocetune"
    agent.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune \"$@\"\n")
    agent.chmod(0o755)
    book = tmp_path / "play.yml"
    book.write_text(PLAY.format(role="rocetune_env"))
    e = env()
    e["ANSIBLE_ROLES_PATH"] = str(REPO / "roles")
    extra = dict({"ansible_python_interpreter": sys.executable, "rocetune_env_command": str(agent),
                  "rocetune_env_root": root_of("dgx-h100-roce"), "rocetune_env_file": str(tmp_path / "nccl.env"),
                  "rocetune_env_nccl_conf": False, "rocetune_env_fetch_features": False}, **extra)
    proc = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--check", "--diff", str(book),
                           "-e", json.dumps(extra)], cwd=tmp_path, env=e, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert not os.path.exists(tmp_path / "nccl.env"), "check mode writes nothing"
    return proc.stdout


def test_declared_nccl_version_reaches_the_agent_and_the_boot_unit(tmp_path):
    out = converge_check(tmp_path, {"rocetune_env_nccl_version": "2.19.3"})
    # dgx-h100-roce has NCCL 2.21.5, which finds the RoCE v2 GID itself: the pin is planned only
    # for the declared 2.19.3
    assert "+export NCCL_IB_GID_INDEX='3'" in out, out
    assert "+nccl_version: 2.19.3\n" in out, out
    assert "env --env-dir " in out and " --no-degrade --doctor-config /etc/rocetune/doctor.yml --format sh -o " in out
    assert "--nccl-version" not in next(line for line in out.splitlines() if line.startswith("+ExecStart="))


def test_without_it_the_agent_plans_for_the_nccl_it_finds(tmp_path):
    out = converge_check(tmp_path, {})
    assert "NCCL_IB_GID_INDEX" not in out and "--nccl-version" not in out, out


def test_a_malformed_version_fails_before_the_agent_runs(tmp_path):
    book = tmp_path / "x"
    book.mkdir()
    try:
        converge_check(book, {"rocetune_env_nccl_version": "2.19"})
    except AssertionError as exc:
        assert "expected an NCCL release like 2.21.5" in str(exc)
    else:
        raise AssertionError("a malformed rocetune_env_nccl_version was accepted")


MODULE_PLAY = """\
- name: The env module alone
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Plan the env
      rocetune.fabric.rocetune_env:
        command: {agent}
        root: {root}
        env_file: {env_file}
      register: planned
    - name: Show the findings
      ansible.builtin.debug:
        msg: "FINDINGS {{{{ planned.findings | map(attribute='id') | list | to_json }}}} FEATURES-HAVE-FINDINGS {{{{ 'findings' in planned.features }}}}"
"""


def test_the_module_returns_the_findings_the_features_no_longer_carry(tmp_path):
    agent = tmp_path / "rocetune"
    agent.write_text(f"#!/bin/sh\nPYTHONPATH={REPO / 'src'} exec {sys.executable} -m rocetune \"$@\"\n")
    agent.chmod(0o755)
    book = tmp_path / "play.yml"
    book.write_text(MODULE_PLAY.format(agent=agent, root=root_of("container-partial-gid"),
                                       env_file=tmp_path / "nccl.env"))
    proc = subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "--check", str(book),
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable})],
                          cwd=tmp_path, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    listed = re.search(r'FINDINGS \[([^\]]*)\]', proc.stdout)
    assert listed, proc.stdout
    # 2.23.4 on RoCE: also the ECE finding of the release table (nccl-known-issues)
    assert set(re.findall(r'[a-z][a-z0-9-]+', listed.group(1))) == {"memlock-limited", "nccl-wheel-not-seen",
                                                                       "nccl-ece-roce"}, proc.stdout
    assert re.search(r"FEATURES-HAVE-FINDINGS\s+False", proc.stdout), proc.stdout  # a long line wraps


def test_the_release_and_the_overrides_go_to_the_node_settings_file(tmp_path):
    """Written where every rocetune run on the node reads them (the Slurm gate, the fleet play and
    the doctor timer pass no option), so none of them plans another env than the boot unit's."""
    out = converge_check(tmp_path, {"rocetune_env_nccl_version": "2.19.3",
                                    "rocetune_env_overrides": {"NCCL_IB_QPS_PER_CONNECTION": 4}})
    assert "+++ after: /etc/rocetune/doctor.yml" in out, out
    assert "+env:\n+  set:\n+    NCCL_IB_QPS_PER_CONNECTION: 4\n+nccl_version: 2.19.3\n" in out, out
    assert "+export NCCL_IB_QPS_PER_CONNECTION='4'" in out
    assert "--doctor-config /etc/rocetune/doctor.yml" in out
