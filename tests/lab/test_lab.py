"""The lab itself: real hosts, strict SSH, a closed network, private filesystems, clean teardown."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from lab import netns

ALLOWED = ipaddress.ip_network("198.18.0.0/15")

# Run on each host with its /usr/bin/python3 (the interpreter Ansible uses there).
FACTS_SCRIPT = r"""
import json, os, socket, subprocess
def run(*argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
print(json.dumps({
    "hostname": socket.gethostname(),
    "addr": json.loads(run("ip", "-j", "addr")),
    "route4": json.loads(run("ip", "-j", "-4", "route")),
    "route6": json.loads(run("ip", "-j", "-6", "route")),
    "route_out": run("ip", "route", "get", "192.0.2.1"),
    "links": sorted(os.listdir("/sys/class/net")),
    "bashrc": open("/root/.bashrc").read(),
    "hosts": open("/etc/hosts").read(),
    "pid1": open("/proc/1/comm").read().strip(),
}))
"""


@pytest.fixture(scope="module")
def facts(lab4):
    """One ssh round trip per host, parsed once for the whole module."""
    return {name: json.loads(netns.run_on(name, "/usr/bin/python3 -", input=FACTS_SCRIPT).stdout)
            for name in lab4.names}


def _lab_leftovers() -> list:
    """Everything with the lab's names that is still on the machine (should be empty)."""
    left = []
    spaces = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    left += [f"netns {ln.split()[0]}" for ln in spaces.splitlines() if ln.startswith("rtlab-")]
    links = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE, text=True).stdout
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith("rtl"):
            left.append(f"link {name}")
    with open("/proc/mounts") as fh:
        left += [f"mount {ln.split()[1]}" for ln in fh
                 if "rtlab" in ln or str(netns.STATE_DIR) in ln or "/run/netns/rtlab" in ln]
    ps = subprocess.run(["ps", "-eo", "pid=,stat=,args="], stdout=subprocess.PIPE, text=True).stdout
    for line in ps.splitlines():
        pid, st, args = line.split(None, 2)
        if int(pid) == os.getpid() or st.startswith("Z"):
            continue
        # The state directory as a path, not a prefix: /run/rocetune-lab.lock is the lock that
        # another run waits on (tests/conftest.py), not a leftover.
        if "rtlab" in args or re.search(re.escape(str(netns.STATE_DIR)) + r"(/|\s|$)", args):
            left.append(f"process {pid} {args[:80]}")
    for path in (netns.STATE_DIR, netns.INVENTORY):
        if path.exists():
            left.append(f"file {path}")
    for base in (Path("/run/systemd/nspawn/propagate"), Path("/run/systemd/nspawn/unix-export")):
        if base.exists():
            left += [f"file {p}" for p in base.glob("rtlab-*")]
    return left


def _live(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# A lab of four


def test_every_host_answers_ssh_with_strict_host_keys(lab4, run_on):
    assert lab4.names == ["node01", "node02", "node03", "node04"]
    assert [ip for _, ip in lab4.hosts] == ["198.18.0.11", "198.18.0.12", "198.18.0.13",
                                            "198.18.0.14"]
    for name in lab4.names:
        argv = lab4.ssh_command(name)
        assert "StrictHostKeyChecking=yes" in argv
        assert run_on(name, "id -un").stdout.strip() == "root"


def test_hostnames_and_names_of_each_other(facts, lab4):
    for name in lab4.names:
        f = facts[name]
        assert f["hostname"] == name
        for other, other_ip in lab4.hosts:
            assert f"{other_ip}\t{other}" in f["hosts"].splitlines()


def test_hosts_ping_each_other_by_name(lab4, run_on):
    for name in lab4.names:
        others = " ".join(n for n in lab4.names if n != name)
        script = f"for h in {others}; do ping -c1 -W2 -q $h >/dev/null || echo unreachable $h; done"
        assert run_on(name, script).stdout == "", f"from {name}"


def test_controller_reaches_every_host(lab4):
    for name, ip in lab4.hosts:
        ping = subprocess.run(["ping", "-c1", "-W2", "-q", ip], stdout=subprocess.PIPE, text=True)
        assert ping.returncode == 0, f"{name}: {ping.stdout}"
        with socket.create_connection((ip, 22), timeout=2) as sock:
            assert sock.recv(64).startswith(b"SSH-2.0-")


def test_no_route_out_of_the_lab(facts):
    for name, f in facts.items():
        assert [r for r in f["route4"] if r.get("dst") == "default"] == [], name
        assert [r for r in f["route6"] if r.get("dst") == "default"] == [], name
        assert [r["dst"] for r in f["route4"]] == ["198.18.0.0/24"], name
        assert "unreachable" in f["route_out"].lower(), f"{name}: {f['route_out']}"


def test_addresses_stay_in_the_benchmarking_range(facts, lab4):
    assert ipaddress.ip_address(lab4.controller_ip) in ALLOWED
    for name, f in facts.items():
        assert f["links"] == ["lo", "rtl0"], name  # sysfs shows the host's own links only
        for link in f["addr"]:
            if link["ifname"] == "rtl0":
                assert link["mtu"] == 1500
            for a in link.get("addr_info", []):
                if a["family"] == "inet" and link["ifname"] != "lo":
                    assert ipaddress.ip_address(a["local"]) in ALLOWED, f"{name}: {a['local']}"
                    assert a["local"] == lab4.ip(name)
    inventory = lab4.inventory.read_text()
    for _, ip in lab4.hosts:
        assert f"ansible_host: {ip}" in inventory


def test_hosts_have_stock_dotfiles_and_own_init(facts):
    for name, f in facts.items():
        assert "pyenv" not in f["bashrc"], name
        assert f["pid1"] == "sshd", name


def test_wrong_known_hosts_entry_is_refused(lab4, tmp_path):
    """Host key checking is really on: a wrong or missing key stops the login."""
    keys = {}
    for line in lab4.known_hosts.read_text().splitlines():
        names, algo, blob = line.split()
        keys[names.split(",")[0]] = (names, algo, blob)
    wrong = tmp_path / "wrong_known_hosts"
    names, _, _ = keys["node01"]
    _, algo, blob = keys["node02"]
    wrong.write_text(f"{names} {algo} {blob}\n")
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    for known in (wrong, empty):
        argv = netns.ssh_command(lab4.ip("node01"), known_hosts=known) + ["--", "true"]
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=30)
        assert proc.returncode == 255, proc.stdout
        assert "Host key verification failed" in proc.stdout
    # ... and the lab's own file lets the same command in.
    argv = netns.ssh_command(lab4.ip("node01")) + ["--", "true"]
    assert subprocess.run(argv, timeout=30).returncode == 0


def test_each_host_has_a_private_filesystem(lab4, run_on):
    name = f"rtlab-private-{uuid.uuid4().hex[:12]}"
    path = f"/root/{name}"
    try:
        run_on("node01", f"echo only-on-node01 > {path}")
        assert run_on("node01", f"cat {path}").stdout == "only-on-node01\n"
        assert run_on("node02", f"test ! -e {path}", check=False).returncode == 0
        assert not Path(path).exists(), "a host's write reached the machine"
        upper = lab4.upper("node01") / "root" / name
        assert upper.read_text() == "only-on-node01\n"  # the upper layer is what changed
    finally:
        run_on("node01", f"rm -f {path}", check=False)


def test_sysctls_net_per_host_rest_read_only(lab4, run_on):
    key = "/proc/sys/net/ipv4/tcp_mtu_probing"
    before = {n: run_on(n, f"cat {key}").stdout.strip() for n in ("node01", "node02")}
    machine = Path(key).read_text().strip()
    new = "2" if before["node01"] != "2" else "1"
    try:
        run_on("node01", f"echo {new} > {key}")
        assert run_on("node01", f"cat {key}").stdout.strip() == new
        assert run_on("node02", f"cat {key}").stdout.strip() == before["node02"]
        assert Path(key).read_text().strip() == machine
    finally:
        run_on("node01", f"echo {before['node01']} > {key}", check=False)
    # vm.* is global to the kernel: hosts must not write it (the same value is written back,
    # so even a broken lab changes nothing).
    proc = run_on("node01", "v=$(cat /proc/sys/vm/swappiness) && echo $v > /proc/sys/vm/swappiness",
                  check=False)
    assert proc.returncode != 0
    assert "Read-only file system" in proc.stderr


def test_status_reports_every_host(lab4):
    st = netns.status()
    assert st["up"] is True
    assert st["systemd"] is False
    assert [(h["name"], h["ip"], h["ssh"]) for h in st["hosts"]] == \
        [(n, ip, True) for n, ip in lab4.hosts]


def _ansible() -> str:
    here = str(Path(sys.executable).parent)
    found = shutil.which("ansible", path=os.pathsep.join([here, os.environ.get("PATH", "")]))
    assert found, "ansible-core is not installed (run scripts/bootstrap.sh)"
    return found


def test_ansible_ping_with_generated_inventory(lab4):
    ansible = _ansible()
    env = dict(os.environ, ANSIBLE_CONFIG=str(netns.REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([ansible, "-i", str(lab4.inventory), "lab", "-m", "ansible.builtin.ping"],
                          cwd=netns.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count("SUCCESS") == 4
    assert "ping: pong" in proc.stdout  # callback_result_format = yaml from ansible.cfg


# ---------------------------------------------------------------------------------------------
# Bringing labs up and down (these take the lab over; the session's lab4 comes back after)


def test_down_leaves_nothing_behind(lab_exclusive):
    info = lab_exclusive.up(2)  # replaces the session's lab: up on an up lab starts over
    assert lab_exclusive.status()["hosts"][-1]["name"] == "node02"
    # Things down() has to find on its own: a process started into a host's namespace from
    # outside, and an ssh ControlPersist master like the ones Ansible leaves.
    stray = subprocess.Popen(["ip", "netns", "exec", "rtlab-node01", "sleep", "600"])
    cpdir = tempfile.mkdtemp(prefix="rtcp", dir="/tmp")  # short: unix socket paths are limited
    control = f"{cpdir}/%C"
    subprocess.run(netns.ssh_command(info.ip("node02")) + [
        "-o", "ControlMaster=auto", "-o", f"ControlPath={control}", "-o", "ControlPersist=60",
        "--", "true"], check=True, timeout=30)
    pids = set()
    for ns in ["rtlab-fabric"] + [f"rtlab-{n}" for n in info.names]:
        out = subprocess.run(["ip", "netns", "pids", ns], stdout=subprocess.PIPE, text=True).stdout
        pids |= {int(p) for p in out.split()}
    assert stray.pid in pids
    assert len(pids) >= 3  # two sshd and the stray sleep

    lab_exclusive.down()
    stray.wait(timeout=10)
    assert _lab_leftovers() == []
    assert [p for p in pids if _live(p)] == []
    check = subprocess.run(["ssh", "-o", f"ControlPath={control}", "-O", "check", "x"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert check.returncode != 0, "the ControlPersist master survived down()"
    lab_exclusive.down()  # idempotent
    assert _lab_leftovers() == []
    shutil.rmtree(cpdir, ignore_errors=True)


def test_failed_up_cleans_up_after_itself(lab_exclusive, monkeypatch):
    started = []
    real_start = lab_exclusive._start_host

    def start_then_fail(info, name, rootfs):
        if started:
            raise lab_exclusive.LabError(f"{name}: simulated failure")
        started.append(name)
        real_start(info, name, rootfs)

    monkeypatch.setattr(lab_exclusive, "_start_host", start_then_fail)
    with pytest.raises(lab_exclusive.LabError, match="node02: simulated failure"):
        lab_exclusive.up(3)
    assert started == ["node01"]
    assert _lab_leftovers() == []


def test_host_that_fails_to_start_is_named(lab_exclusive, monkeypatch):
    broken = lab_exclusive.SSHD_CONFIG + "NoSuchOption 1\n"
    monkeypatch.setattr(lab_exclusive, "SSHD_CONFIG", broken)
    with pytest.raises(lab_exclusive.LabError) as err:
        lab_exclusive.up(2)
    message = str(err.value)
    assert message.startswith("node01: host exited before sshd came up"), message
    assert "bad configuration option" in message.lower(), message
    assert "\n" not in message
    assert _lab_leftovers() == []


def test_down_after_an_up_that_died_half_way(lab_exclusive, monkeypatch):
    """An `up` killed mid-way (no cleanup of its own) leaves state that down() still removes."""
    def die(info, timeout):
        raise KeyboardInterrupt

    lab_exclusive.down()  # so that up() has nothing to take down first
    monkeypatch.setattr(lab_exclusive, "_wait_ready", die)
    monkeypatch.setattr(lab_exclusive, "_down_locked", lambda: None)
    with pytest.raises(KeyboardInterrupt):
        lab_exclusive.up(3)
    monkeypatch.undo()
    assert _lab_leftovers() != []  # hosts, netns, links and state are all still there
    lab_exclusive.down()
    assert _lab_leftovers() == []


def test_down_when_nothing_is_up(lab_exclusive):
    lab_exclusive.down()
    lab_exclusive.down()
    assert _lab_leftovers() == []
    assert lab_exclusive.status()["phase"] == "down"


@pytest.mark.systemd
def test_systemd_mode_boots_systemd_with_sshd(lab_exclusive):
    """Real systemd per host. Fails (never skips) when the Debian rootfs cannot be built."""
    info = lab_exclusive.up(2, systemd=True)
    assert lab_exclusive.status()["systemd"] is True
    for name in info.names:
        state = lab_exclusive.run_on(name, "timeout 90 systemctl is-system-running --wait",
                                     check=False).stdout.strip()
        assert state in ("running", "degraded"), f"{name}: {state}"
        assert lab_exclusive.run_on(name, "systemctl is-active ssh").stdout.strip() == "active"
        assert lab_exclusive.run_on(name, "hostname").stdout.strip() == name
        assert lab_exclusive.run_on(name, "/usr/bin/python3 -c 'print(6*7)'").stdout == "42\n"
        assert "198.18.0." in lab_exclusive.run_on(name, "ip -4 -br addr show rtl0").stdout
    lab_exclusive.down()
    assert _lab_leftovers() == []


def test_slurm_stops_without_the_hosts_and_a_second_cluster_runs_its_prologs(lab4, run_on):
    """Stopping the lab's Slurm ends only its daemons; a cluster started after it numbers jobs from 1
    again and its slurmd still runs the prolog for them (the spool starts empty)."""
    from lab import slurm

    marker = "/var/tmp/rtlab-prolog-ran"
    slurm.write_file("node01", "/etc/rtlab-test/prolog", f"#!/bin/sh\necho $SLURM_JOB_ID >> {marker}\n", 0o755)
    run_on("node01", f"rm -f {marker}")
    try:
        for _ in range(2):
            with slurm.cluster(lab4, prolog="/etc/rtlab-test/prolog") as c:
                c.srun(["-N1", "-w", "node01", "true"])
            assert [run_on(name, "hostname").stdout.strip() for name in lab4.names] == list(lab4.names)
        assert run_on("node01", f"cat {marker}").stdout.split() == ["1", "1"]
    finally:
        run_on("node01", f"rm -rf {marker} /etc/rtlab-test")
