"""site.yml end to end on the four-host lab: converge, idempotent rerun, check mode, the env
files equal what rocetune plans on each host, a Gloo job that sources them, a host playing an
8-GPU RoCE node from a fixture root, and bad inventory input that fails clearly and quickly.

The tests in this module run in order and share the converged lab."""

from __future__ import annotations

import json
import platform
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from lab import netns
from lab.playbooks import CONNECT_TIMEOUT, REPO, ansible_env, parse_env_file, parse_recap, run_playbook, tool

ENV_FILE = "/etc/rocetune/nccl.env"
NCCL_CONF = "/etc/nccl.conf"
FEATURES_DIR = REPO / "artifacts" / "features"
H100_FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"  # torch lives here; hosts see the machine's /


@pytest.fixture(scope="module")
def site_tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("site")


@pytest.fixture(scope="module")
def check_on_fresh_hosts(lab4, run_on, site_tmp):
    """`--check --diff` before anything was installed (the lab is rebuilt if it was used)."""
    if run_on("node01", "test -e /usr/local/bin/rocetune", check=False).returncode == 0:
        netns.up(len(lab4.names))  # same names, addresses, key and inventory paths; fresh roots
    return run_playbook(lab4.inventory, site_tmp, "--check", "--diff")


@pytest.fixture(scope="module")
def converged(lab4, run_on, site_tmp, check_on_fresh_hosts):
    """site.yml applied once to the four-host lab (fresh unless another module used it)."""
    fresh = run_on("node01", "test -e /usr/local/bin/rocetune", check=False).returncode != 0
    run = run_playbook(lab4.inventory, site_tmp)
    return fresh, run


def run(lab4, site_tmp, *args, **kw):
    return run_playbook(lab4.inventory, site_tmp, *args, **kw)


# ---------------------------------------------------------------------------------------------
# Converge, rerun, check mode


def test_check_mode_on_fresh_hosts_reports_the_install_and_changes_nothing(check_on_fresh_hosts, lab4, run_on):
    result = check_on_fresh_hosts
    assert result.rc == 0, result.explain()
    for host in lab4.names:
        assert result.recap[host]["changed"] >= 1 and result.recap[host]["failed"] == 0, result.explain()
        gone = run_on(host, "ls /etc/rocetune /usr/local/bin/rocetune", check=False)
        assert gone.returncode != 0 and "No such file" in gone.stderr, gone.stdout



def test_converge_installs_and_writes_the_env_on_every_host(converged, lab4):
    fresh, result = converged
    assert result.rc == 0, result.explain()
    assert sorted(result.recap) == lab4.names, result.explain()
    for host, stats in result.recap.items():
        assert stats["failed"] == 0 and stats["unreachable"] == 0, result.explain()
        if fresh:  # the converge step: every role that changes the node in one task
            assert stats["changed"] >= 1, f"{host}: {stats}\n{result.explain()}"
    if fresh:
        assert f"changed: [{lab4.names[0]}]" in result.output.split("(the converge step)", 1)[1], result.explain()


def test_rerun_reports_no_change(converged, lab4, site_tmp):
    result = run(lab4, site_tmp)
    assert result.rc == 0, result.explain()
    assert {h: s["changed"] for h, s in result.recap.items()} == {h: 0 for h in lab4.names}, result.explain()


def test_check_diff_reports_no_change(converged, lab4, site_tmp):
    result = run(lab4, site_tmp, "--check", "--diff")
    assert result.rc == 0, result.explain()
    assert result.total("changed") == 0, result.explain()
    assert "--- before" not in result.output, result.explain()


def test_check_diff_shows_what_a_changed_env_file_would_become(converged, lab4, run_on, site_tmp):
    run_on("node02", f"cp {ENV_FILE} /tmp/env.saved && echo 'export EDITED_BY_HAND=1' >> {ENV_FILE}")
    try:
        result = run(lab4, site_tmp, "--check", "--diff", "--limit", "node02")
        assert result.rc == 0, result.explain()
        assert result.recap["node02"]["changed"] == 1, result.explain()
        assert "-export EDITED_BY_HAND=1" in result.output, result.explain()
        # Check mode changed nothing.
        assert "EDITED_BY_HAND" in run_on("node02", f"cat {ENV_FILE}").stdout
    finally:
        run_on("node02", f"mv /tmp/env.saved {ENV_FILE}")


def test_the_collection_installed_into_another_project_finds_nothing_to_change(converged, lab4, site_tmp, tmp_path):
    """The built tarball, installed into a project that is not this repository, runs the same
    playbook against the converged lab: every module and role resolves by FQCN, nothing changes."""
    galaxy = tool("ansible-galaxy")
    env = {k: v for k, v in ansible_env().items() if k != "ANSIBLE_CONFIG"}
    subprocess.run([galaxy, "collection", "build", "--output-path", str(tmp_path), str(REPO)],
                   check=True, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, timeout=300)
    project = tmp_path / "site-project"
    subprocess.run([galaxy, "collection", "install", str(next(tmp_path.glob("rocetune-fabric-*.tar.gz"))),
                    "-p", str(project / "collections")], check=True, cwd=tmp_path, env=env,
                   stdout=subprocess.DEVNULL, timeout=300)
    cfg = (REPO / "ansible.cfg").read_text().replace("roles_path = roles\n", "")
    (project / "ansible.cfg").write_text(cfg)
    (project / "site.yml").write_text("- name: The fabric, from the installed collection\n"
                                      "  ansible.builtin.import_playbook: rocetune.fabric.site\n")
    proc = subprocess.run([tool("ansible-playbook"), "-i", str(lab4.inventory), "site.yml"],
                          cwd=project, env=dict(env, ANSIBLE_CONFIG=str(project / "ansible.cfg")),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    recap = parse_recap(proc.stdout)
    assert proc.returncode == 0 and sorted(recap) == lab4.names, proc.stdout[-6000:]
    # The nodes are as they were; only the controller packs the agent into this project's artifacts.
    on_nodes = [ln for ln in proc.stdout.splitlines() if ln.startswith("changed: [") and "-> localhost" not in ln]
    assert not on_nodes, proc.stdout[-6000:]
    # The collection's own plays and roles ran by FQCN; the preflight found nothing to do.
    assert "TASK [rocetune.fabric.rocetune_agent : Pack the agent on the controller]" in proc.stdout
    assert "Check every role's input and this node's state" in proc.stdout


# ---------------------------------------------------------------------------------------------
# What landed on the hosts


def test_env_files_equal_what_rocetune_plans_on_each_host(converged, lab4, run_on):
    for host in lab4.names:
        deployed = run_on(host, f"cat {ENV_FILE}").stdout
        planned = run_on(host, "rocetune probe --format sh").stdout
        assert deployed == planned, f"{host}: {ENV_FILE} differs from `rocetune probe --format sh`"
        conf = run_on(host, f"cat {NCCL_CONF}").stdout
        assert conf == run_on(host, "rocetune probe --format nccl-conf").stdout, host


def test_env_names_the_lab_interface_for_sockets(converged, lab4, run_on):
    """Lab hosts have one interface (rtl0) and no RDMA: NCCL and Gloo must use rtl0 sockets."""
    for host in lab4.names:
        env = parse_env_file(run_on(host, f"cat {ENV_FILE}").stdout)
        assert env.get("GLOO_SOCKET_IFNAME") == "rtl0", f"{host}: {env}"
        assert env.get("NCCL_SOCKET_IFNAME", "").lstrip("=") == "rtl0", f"{host}: {env}"
        assert env.get("NCCL_IB_DISABLE") == "1", f"{host}: {env}"


def test_env_file_is_valid_shell(converged, lab4, run_on):
    out = run_on("node01", f"set -eu; . {ENV_FILE}; echo \"$GLOO_SOCKET_IFNAME\"").stdout
    assert out.strip() == "rtl0"


def test_the_agent_runs_from_its_zips_bytecode_by_the_nodes_python_without_pip(converged, lab4, run_on):
    """/usr/local/bin/rocetune is a launcher: the node's python3, isolated, on the zip installed as
    it is (the nodes' python3 takes the bytecode the controller's Python packed)."""
    out = run_on("node03", "head -n 1 /usr/local/bin/rocetune; stat -c %a /usr/local/bin/rocetune; "
                           "ls /usr/local/lib/rocetune | grep -E '^[0-9]+[.][0-9]+[.][0-9]+-[0-9a-f]{12}'; "
                           "rocetune --version").stdout.splitlines()
    assert out[:2] == ["#!/usr/bin/python3 -IS", "755"], out
    assert len(out) == 4 and re.fullmatch(r"\d+\.\d+\.\d+-[0-9a-f]{12}\.pyz", out[2]), out  # one zip, no tree
    assert out[-1].startswith("rocetune "), out
    agent = f"/usr/local/lib/rocetune/{out[2]}"
    # rocetune and yaml come from the zip, and PYTHONPATH does not reach the agent.
    code = "import rocetune, yaml, sys; print(type(rocetune.__loader__).__name__, yaml.__file__, sys.flags.no_site)"
    where = run_on("node03", f"PYTHONPATH=/nonexistent /usr/bin/python3 -IS -c "
                             f"'import sys; sys.path.insert(0, \"{agent}\"); {code}'").stdout.split()
    assert where[0] == "zipimporter" and where[1].startswith(f"{agent}/yaml/") and where[2] == "1", where
    sha = run_on("node03", f"sha256sum {agent}").stdout.split()[0]
    assert out[2].endswith(f"-{sha[:12]}.pyz"), (out[2], sha)
    run_on("node03", "PYTHONPATH=/nonexistent rocetune --json probe > /dev/null || test $? = 1")
    assert run_on("node03", f"sha256sum {agent}").stdout.split()[0] == sha


def test_features_json_fetched_for_every_host(converged, lab4):
    for host in lab4.names:
        features = json.loads((FEATURES_DIR / f"{host}.json").read_text())
        assert features.get("schema_version"), host
        assert features["host"]["hostname"] == host


def test_rocetune_explain_reads_a_fetched_features_file(converged):
    rocetune = REPO / ".venv" / "bin" / "rocetune"
    proc = subprocess.run([str(rocetune), "explain", "GLOO_SOCKET_IFNAME", "--features",
                           str(FEATURES_DIR / "node01.json")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "rtl0" in proc.stdout


# ---------------------------------------------------------------------------------------------
# A real job that sources the env


def test_gloo_allreduce_job_passes_across_the_hosts(converged, lab4):
    ssh = shlex.join(lab4.ssh_command("node01")[:-3])  # without "-l root <ip>"; hosts are root@ip
    hosts = [f"root@{ip}" for _, ip in lab4.hosts]
    proc = subprocess.run([str(REPO / "examples" / "jobs" / "gloo_allreduce.sh"),
                           "--ssh", ssh, "--python", str(VENV_PYTHON), "--timeout", "180",
                           *hosts, "--", "--size-mb", "16", "--iters", "3"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:]
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("allreduce_check:")), "")
    assert " PASS " in line, proc.stdout[-6000:]
    assert "world=4" in line and "iface=rtl0" in line, line
    print(line)


# ---------------------------------------------------------------------------------------------
# One lab host plays an 8-GPU H100 RoCE node from a fixture root


def test_a_host_probes_a_fixture_root_and_gets_its_eight_rdma_ports(converged, lab4, run_on, site_tmp):
    assert (H100_FIXTURE / "sys").is_dir(), f"fixture {H100_FIXTURE} is missing"
    # Lab hosts see the controller's filesystem (read-only lower layer), so the fixture root is
    # at the same path there; a real node would read a `rocetune capture` unpacked on it.
    override = ("-e", f"rocetune_env_root={H100_FIXTURE}", "--limit", "node04")
    try:
        first = run(lab4, site_tmp, *override)
        assert first.rc == 0, first.explain()
        again = run(lab4, site_tmp, *override)
        assert again.rc == 0 and again.total("changed") == 0, again.explain()
        env = parse_env_file(run_on("node04", f"cat {ENV_FILE}").stdout)
        hcas = [h for h in env.get("NCCL_IB_HCA", "").lstrip("=^").split(",") if h]
        assert len(hcas) == 8, f"NCCL_IB_HCA={env.get('NCCL_IB_HCA')!r}: want the 8 compute ports"
        assert env.get("NCCL_IB_DISABLE", "0") != "1", env
        planned = run_on("node04", f"rocetune --root {H100_FIXTURE} env --format sh").stdout
        assert run_on("node04", f"cat {ENV_FILE}").stdout == planned
        features = json.loads((FEATURES_DIR / "node04.json").read_text())
        assert len(features.get("gpus", [])) == 8
    finally:
        # node04 is itself again: from eight RDMA ports back to none is a degraded env by design,
        # which rocetune_env refuses unless told (rocetune_env_no_degrade).
        back = run(lab4, site_tmp, "--limit", "node04", "-e", "rocetune_env_no_degrade=false")
        assert back.rc == 0, back.explain()


def test_warnings_fail_refuses_before_anything_is_written(converged, lab4, run_on, site_tmp):
    warns = REPO / "tests" / "fixtures" / "hosts" / "container-partial-gid"  # memlock, unreadable GIDs
    state = f"md5sum {ENV_FILE} {NCCL_CONF}; ls -l --time-style=+%s /etc/rocetune"
    before = run_on("node03", state).stdout
    result = run(lab4, site_tmp, "--limit", "node03", "-e", f"rocetune_env_root={warns}",
                 "-e", "rocetune_env_warnings=fail")
    assert result.rc != 0 and result.recap["node03"]["failed"] == 1, result.explain()
    assert "nothing was written" in result.output and "memlock-limited" in result.output, result.explain()
    assert run_on("node03", state).stdout == before


# ---------------------------------------------------------------------------------------------
# Bad inventory input: clear failures, quickly


@pytest.mark.parametrize("var, value, message", [
    ("rocetune_env_nccl_conf", "maybe", "rocetune_env_nccl_conf"),
    ("rocetune_env_warnings", "loud", "rocetune_env_warnings must be one of"),
    ("rocetune_env_timeout", "soon", "rocetune_env_timeout"),
])
def test_invalid_variable_value_is_rejected_by_the_argument_specs(lab4, site_tmp, var, value, message):
    result = run(lab4, site_tmp, "--limit", "node01", "-e", f"{var}={value}", timeout=120)
    assert result.rc != 0, result.explain()
    # The preflight checks every role's variables against its argument spec before any change.
    assert "preflight refused this node, nothing was changed" in result.output, result.explain()
    assert message in result.output, result.explain()
    assert result.recap["node01"]["failed"] == 1 and result.recap["node01"]["changed"] == 0


def test_a_doctor_interval_systemd_would_not_take_is_refused_before_anything_changes(converged, lab4, run_on, site_tmp):
    # The timer is new on node01, so rocetune_env would change it in the converge step: its
    # input is checked by the preflight play, before that step writes anything.
    result = run(lab4, site_tmp, "--limit", "node01", "-e",
                 json.dumps({"rocetune_env_doctor_timer": True, "rocetune_env_doctor_interval": "soon"}), timeout=120)
    assert result.rc != 0 and "must be a systemd time span" in result.output, result.explain()
    assert result.recap["node01"]["failed"] == 1 and result.recap["node01"]["changed"] == 0, result.explain()
    assert run_on("node01", "test -e /etc/systemd/system/rocetune-doctor.timer", check=False).returncode != 0


def test_misspelt_variable_is_rejected(lab4, site_tmp):
    result = run(lab4, site_tmp, "--limit", "node01", "-e", "rocetune_env_nccl_cnof=false", timeout=120)
    assert result.rc != 0, result.explain()
    assert "unknown variable(s) rocetune_env_nccl_cnof" in result.output, result.explain()


def test_a_host_that_is_down_fails_fast_and_the_others_converge(converged, lab4, site_tmp):
    down = site_tmp / "down.yml"
    # 198.18.0.250: in the lab's subnet, nobody there (hosts start at .11).
    down.write_text("all:\n  children:\n    lab:\n      hosts:\n        node99:\n"
                    "          ansible_host: 198.18.0.250\n")
    start = time.monotonic()
    result = run(lab4, site_tmp, "--limit", "node01,node99", extra_inventories=[down], timeout=180)
    elapsed = time.monotonic() - start
    assert result.rc == 4, result.explain()  # ansible-playbook: some hosts unreachable
    assert result.recap["node99"]["unreachable"] == 1, result.explain()
    assert result.recap["node01"]["failed"] == 0 and result.recap["node01"]["unreachable"] == 0
    assert "UNREACHABLE" in result.output and "198.18.0.250" in result.output
    assert elapsed < 60 + CONNECT_TIMEOUT, f"took {elapsed:.0f}s"


def test_a_wrong_host_key_is_refused(lab4, site_tmp):
    key = site_tmp / "impostor"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    known = site_tmp / "wrong_known_hosts"
    known.write_text(f"{lab4.ip('node01')} {(key.with_suffix('.pub')).read_text().split(' ', 2)[0]} "
                     f"{(key.with_suffix('.pub')).read_text().split(' ', 2)[1]}\n")
    inv = site_tmp / "badkey.yml"
    inv.write_text(
        "all:\n  children:\n    lab:\n      hosts:\n        node01-badkey:\n"
        f"          ansible_host: {lab4.ip('node01')}\n"
        f"          ansible_ssh_common_args: \"-o UserKnownHostsFile={known} -o GlobalKnownHostsFile=/dev/null"
        " -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes\"\n")
    # No connection sharing: a master connection to the same address must not skip the check.
    env = ansible_env(ANSIBLE_SSH_ARGS="-o ControlMaster=no -o ControlPath=none")
    start = time.monotonic()
    result = run(lab4, site_tmp, "--limit", "node01-badkey", extra_inventories=[inv], env=env, timeout=120)
    assert result.rc == 4, result.explain()
    assert result.recap["node01-badkey"]["unreachable"] == 1, result.explain()
    assert "Host key verification failed" in result.output or "HOST IDENTIFICATION HAS CHANGED" in result.output
    assert time.monotonic() - start < 60


# ---------------------------------------------------------------------------------------------
# A node whose Python differs from the controller's (EL9 nodes run 3.9), and a vendor nccl.conf


def _another_python():
    import glob
    mine = ".".join(platform.python_version_tuple()[:2])
    for pattern in ("/usr/bin/python3.*", "/usr/local/bin/python3.*", "/root/.pyenv/versions/3.*/bin/python3.*"):
        for path in sorted(glob.glob(pattern)):
            name = Path(path).name
            if re.fullmatch(r"python3\.(9|1[0-9])", name) and name != f"python{mine}":
                return path, name[len("python"):]
    return None, None


def test_the_same_agent_runs_on_a_node_with_another_python(converged, lab4, run_on, site_tmp):
    python, version = _another_python()
    if not python:
        pytest.skip("no second Python 3.9+ on this machine to play a node with another distribution")
    extra = {"rocetune_agent_python": python, "rocetune_agent_command": "/usr/local/bin/rocetune-other",
             "rocetune_env_command": "/usr/local/bin/rocetune-other", "rocetune_env_fetch_features": False}
    result = run(lab4, site_tmp, "--limit", "node03", "-e", json.dumps(extra))
    assert result.rc == 0, result.explain()
    out = run_on("node03", "rocetune-other --version; " + shlex.quote(python) + " --version")
    assert out.stdout.split()[:2] == ["rocetune", out.stdout.split()[1]] and version in out.stdout
    # The env that Python plans is byte for byte the one the controller's Python planned.
    assert run_on("node03", f"cat {ENV_FILE}").stdout == run_on("node03", "rocetune env --format sh").stdout
    back = run(lab4, site_tmp, "--limit", "node03")
    assert back.rc == 0, back.explain()


def test_a_vendor_nccl_conf_is_kept_once_and_the_written_one_carries_the_marker(converged, lab4, run_on, site_tmp):
    vendor = "NCCL_IB_TC=41\nNCCL_IB_SL=0\n"
    run_on("node02", f"rm -f {NCCL_CONF}.rocetune-orig; printf {shlex.quote(vendor)} > {NCCL_CONF}")
    first = run(lab4, site_tmp, "--limit", "node02")
    assert first.rc == 0 and first.recap["node02"]["changed"] >= 1, first.explain()
    assert run_on("node02", f"cat {NCCL_CONF}.rocetune-orig").stdout == vendor.replace("\\n", "\n")
    assert run_on("node02", f"head -c 11 {NCCL_CONF}").stdout == "# rocetune "
    # A second run keeps the first backup, whatever is in the managed file now.
    run_on("node02", f"echo NCCL_DEBUG=INFO >> {NCCL_CONF}")
    again = run(lab4, site_tmp, "--limit", "node02")
    assert again.rc == 0, again.explain()
    assert run_on("node02", f"cat {NCCL_CONF}.rocetune-orig").stdout == vendor.replace("\\n", "\n")
    run_on("node02", f"rm -f {NCCL_CONF}.rocetune-orig")
