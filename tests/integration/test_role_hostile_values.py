"""Inventory values that try to inject into what the roles write: the boot units carry them as
data (systemd reads back exactly the value: no specifier, variable or extra line), and the
modules refuse interface names and sysctls that are no such thing, naming the variable and
changing nothing. Run on localhost: the units rendered by Ansible from the roles' vars, the modules run for real
against files in the test directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.integration.test_ansible_static import REPO, env, tool
from tests.unit.roles.systemd_reader import exec_argv, setting

pytestmark = pytest.mark.slow  # runs ansible-playbook

ENV_UNIT = "__rocetune_env_unit_text"  # the boot units' text, in the roles' vars
QOS_UNIT = "__roce_qos_unit_text"
ROLE_VARS = [str(REPO / "roles" / r / d / "main.yml") for r in ("rocetune_env", "roce_qos") for d in ("defaults", "vars")]


def playbook(tmp_path, tasks: list, extra: dict | None = None) -> subprocess.CompletedProcess:
    book = tmp_path / "play.yml"
    book.write_text(yaml.safe_dump([{"name": "Hostile values", "hosts": "localhost", "connection": "local",
                                     "gather_facts": False, "vars_files": ROLE_VARS, "tasks": tasks}]))
    extra = dict({"ansible_python_interpreter": sys.executable}, **(extra or {}))
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", str(book), "-e", json.dumps(extra)],
                          cwd=tmp_path, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)


def render_task(unit, dest, **task_vars):
    task = {"name": f"Render {dest}", "ansible.builtin.copy": {
        "content": "{{ %s }}" % unit, "dest": str(dest), "mode": "0644"}}
    if task_vars:
        task["vars"] = task_vars
    return task


HOSTILE_ENV = {
    "rocetune_env_command": "/opt/rocetune/bin/rocetune",
    "rocetune_env_file": "/etc/rocetune/%H/nccl$USER.env",
    "rocetune_env_nccl_conf_file": "/etc/nccl;conf",
    "rocetune_env_args": ["--set", "NCCL_DEBUG_FILE=/tmp/nccl.%h.%p", "--set", "NCCL_SOCKET_IFNAME=$HOME",
                          "--set", "X=${HOME} it's \"q\" \\", "--config", "/etc/x\nExecStartPre=/bin/sh -c id", ";"],
}


def test_the_boot_units_run_exactly_the_inventory_values(tmp_path):
    extra = dict(HOSTILE_ENV, roce_qos_interfaces=["ens1f0-np0", "eth0.100", "x\nExecStartPre=/bin/sh"])
    proc = playbook(tmp_path, [render_task(ENV_UNIT, tmp_path / "env.service"),
                               render_task(QOS_UNIT, tmp_path / "qos.service")], extra)
    assert proc.returncode == 0, proc.stdout

    unit = (tmp_path / "env.service").read_text()
    execs = setting(unit, "ExecStart")
    assert len(execs) == 1 and not any(ln.startswith("ExecStartPre") for ln in unit.splitlines()), unit
    assert exec_argv(execs[0]) == [
        "/opt/rocetune/bin/rocetune", "--root", "/", "-q", "env", "--env-dir", "/etc/rocetune/%H",
        *HOSTILE_ENV["rocetune_env_args"], "--no-degrade",
        "--format", "sh", "-o", "/etc/rocetune/%H/nccl$USER.env", "--format", "nccl-conf", "-o", "/etc/nccl;conf"]
    assert "NCCL_DEBUG_FILE=/tmp/nccl.%%h.%%p" in execs[0] and '"NCCL_SOCKET_IFNAME=$$HOME"' in execs[0]
    assert setting(unit, "After") == ["network-online.target systemd-modules-load.service rdma-hw.target "
                                      "rocetune-qos.service"]

    qos = (tmp_path / "qos.service").read_text()
    assert not any(ln.startswith("ExecStartPre") for ln in qos.splitlines()), qos
    devices = ("sys-subsystem-net-devices-ens1f0\\x2dnp0.device sys-subsystem-net-devices-eth0.100.device "
               "sys-subsystem-net-devices-x\\x0aExecStartPre\\x3d-bin-sh.device")
    assert setting(qos, "Wants") == ["network-online.target " + devices + " "]
    assert setting(qos, "After") == ["network-online.target systemd-modules-load.service rdma-hw.target " + devices + " "]
    assert [exec_argv(v) for v in setting(qos, "ExecStart")] == [
        ["/usr/bin/python3", "/usr/local/lib/rocetune/rocetune_qos_reapply.py", "/etc/rocetune/roce_qos.json"]]


def test_a_unit_name_or_program_that_would_inject_fails_the_render_naming_the_variable(tmp_path):
    bad_after = ["network-online.target\nExecStartPre=/bin/sh -c id"]
    tasks = [dict(render_task(ENV_UNIT, tmp_path / "a.service", rocetune_env_boot_after=bad_after), ignore_errors=True),
             dict(render_task(QOS_UNIT, tmp_path / "b.service", roce_qos_boot_after=["%h.service"]), ignore_errors=True),
             dict(render_task(ENV_UNIT, tmp_path / "c.service", rocetune_env_command="-/bin/sh"), ignore_errors=True)]
    proc = playbook(tmp_path, tasks)
    assert "failed=0" in proc.stdout and "ignored=3" in proc.stdout, proc.stdout
    assert "rocetune_env_boot_after: 'network-online.target\\nExecStartPre=/bin/sh -c id' is not a systemd unit name" \
        in proc.stdout, proc.stdout
    assert "roce_qos_boot_after: '%h.service' is not a systemd unit name" in proc.stdout, proc.stdout
    assert "rocetune_env: '-/bin/sh': the program of a systemd command line must be an absolute path" in proc.stdout
    assert not list(tmp_path.glob("*.service"))


def test_the_modules_refuse_hostile_names_and_values_before_writing_anything(tmp_path):
    proc_sys = tmp_path / "proc-sys"
    (proc_sys / "net" / "core").mkdir(parents=True)
    (proc_sys / "net" / "core" / "rmem_max").write_text("212992\n")
    out = tmp_path / "out"
    tasks = [
        {"name": "MTU with a udev rule", "ignore_errors": True, "register": "net",
         "rocetune.fabric.roce_net_links": {"interfaces": ["lo", 'lo", RUN+="/bin/sh'], "mtu": 9000,
                                            "udev_rule_file": str(out / "70-mtu.rules"),
                                            "sysctl_file": str(out / "arp.conf")}},
        {"name": "QoS with its boot unit", "ignore_errors": True, "register": "qos",
         "rocetune.fabric.roce_qos_apply": {
             "interfaces": ["lo", "../../../etc"], "plan_file": str(out / "qos.yml"), "plan_content": "{}\n",
             "boot": {"script": {"path": str(out / "s.py"), "content": "x\n"}, "lib_dir": str(out),
                      "settings": {"path": str(out / "s.json"), "data": {}},
                      "unit": {"path": str(out / "q.service"), "content": "[Unit]\n"}}}},
        {"name": "Sysctls with their file", "ignore_errors": True, "register": "sysctl",
         "rocetune.fabric.host_tuning_sysctl": {
             "sysctls": {"net.core.rmem_max": 4194304, "net.core.wmem_max\nkernel.core_pattern": "|/tmp/x"},
             "file": str(out / "90-rocetune.conf"), "proc_sys": str(proc_sys)}},
        {"name": "Keep the messages", "ansible.builtin.copy": {
            "content": "{{ {'net': net.msg, 'qos': qos.msg, 'sysctl': sysctl.msg} | to_json }}",
            "dest": str(tmp_path / "msgs.json"), "mode": "0644"}},
    ]
    proc = playbook(tmp_path, tasks)
    assert "ignored=3" in proc.stdout, proc.stdout
    msgs = json.loads((tmp_path / "msgs.json").read_text())
    assert msgs["net"] == ("roce_net_interfaces: 'lo\", RUN+=\"/bin/sh' is not an interface name "
                           "(1 to 15 of A-Z a-z 0-9 _ . -); nothing was changed")
    assert msgs["qos"] == ("roce_qos_interfaces: '../../../etc' is not an interface name "
                           "(1 to 15 of A-Z a-z 0-9 _ . -); nothing was changed")
    assert msgs["sysctl"].startswith("host_tuning_sysctls: 'net.core.wmem_max\\nkernel.core_pattern' is not a "
                                     "sysctl name; nothing was changed"), msgs["sysctl"]
    assert not out.exists()
    assert (proc_sys / "net" / "core" / "rmem_max").read_text() == "212992\n"
    assert not os.path.exists("/etc/systemd/system/q.service")


def test_an_ofed_repository_url_that_would_add_an_apt_line_fails_naming_it(tmp_path):
    url = "http://mirror.example/ofed ./\ndeb [trusted=yes] http://elsewhere.example/x"
    tasks = [{"name": "The OFED repository tasks", "ansible.builtin.include_tasks": str(REPO / "roles" / "rdma_core" / "tasks" / "ofed_repo.yml"),
              "vars": {"ansible_facts": {"os_family": "Debian"}, "rdma_core_ofed_repo_key": "",
                       "rdma_core_ofed_repo_trusted": True, "rdma_core_ofed_repo_url": url}}]
    proc = playbook(tmp_path, tasks)
    assert proc.returncode != 0, proc.stdout
    assert 'rdma_core_ofed_repo_url: "http://mirror.example/ofed ./\\ndeb [trusted=yes] http://elsewhere.example/x" ' \
           "is not one http(s), ftp or file URL" in proc.stdout, proc.stdout
    assert "Add the local OFED apt repository" not in proc.stdout


def test_a_refused_file_target_fails_before_modules_load_or_the_agent_runs(tmp_path):
    """A symlink where a unit or a modules-load file goes is refused before anything else is
    done: no modprobe of a module that is not loaded, no agent run writing env files."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not ours\n")
    links = tmp_path / "links"
    links.mkdir()
    (links / "rdma.conf").symlink_to(elsewhere)
    (links / "rocetune-env.service").symlink_to(elsewhere)
    ran = tmp_path / "agent-ran"
    agent = tmp_path / "agent"
    agent.write_text(f"#!/bin/sh\ntouch {ran}\necho '{{}}'\n")
    agent.chmod(0o755)
    tasks = [
        {"name": "Modules and their boot file", "ignore_errors": True, "register": "node",
         "rocetune.fabric.rdma_core_node": {"modules": ["rocetune_no_such_module"],
                                            "modules_load_file": str(links / "rdma.conf")}},
        {"name": "Env and its boot unit", "ignore_errors": True, "register": "envrun",
         "rocetune.fabric.rocetune_env": {"command": str(agent), "env_file": str(tmp_path / "env" / "nccl.env"),
                                          "unit_path": str(links / "rocetune-env.service"),
                                          "unit_content": "[Unit]\n"}},
        {"name": "Keep the messages", "ansible.builtin.copy": {
            "content": "{{ {'node': node.msg, 'env': envrun.msg} | to_json }}",
            "dest": str(tmp_path / "msgs.json"), "mode": "0644"}},
    ]
    proc = playbook(tmp_path, tasks)
    assert "ignored=2" in proc.stdout, proc.stdout
    msgs = json.loads((tmp_path / "msgs.json").read_text())
    assert str(links / "rdma.conf") in msgs["node"] and "modprobe" not in msgs["node"], msgs["node"]
    assert str(links / "rocetune-env.service") in msgs["env"], msgs["env"]
    assert not ran.exists() and not (tmp_path / "env").exists()
    assert elsewhere.read_text() == "not ours\n"
