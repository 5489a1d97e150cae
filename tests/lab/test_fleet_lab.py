"""The fleet on sixteen namespace hosts, gathered both ways: `rocetune fleet gather` (paramiko)
and the collection's `playbooks/fleet.yml`, then `rocetune fleet report` on each directory.

Each host runs rocetune against a host root of its own (a per-host wrapper in its private
/etc): most play the same 8-rail H100 RoCE node (tests/fixtures/hosts/dgx-h100-roce), and five
are odd: one down (sshd gone), one whose host key changed, one with a rail at MTU 1500, one
with other NICs (tests/fixtures/hosts/h100-converged-roce), one whose deployed env is older than
its plan. Both paths must name the same hosts for the same reasons.

Takes the lab over (``lab_exclusive``), like test_scale.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from lab import netns
from lab.playbooks import ansible_env, tool

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "hosts"
# Host roots must exist where the lab hosts see the repository (their /tmp is their own).
ROOTS = REPO / "artifacts" / "fleet-lab"
HOSTS = 16
DOWN, REKEYED, MTU, NICS, OLD_ENV = "node03", "node05", "node07", "node09", "node11"
AGENT = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m rocetune"


def make_roots() -> dict:
    """{host: its root}; the odd ones are copies of the common root with one thing changed."""
    shutil.rmtree(ROOTS, ignore_errors=True)
    ROOTS.mkdir(parents=True)
    common = ROOTS / "common"
    shutil.copytree(FIXTURES / "dgx-h100-roce", common, symlinks=True)
    mtu = ROOTS / "mtu"
    shutil.copytree(common, mtu, symlinks=True)
    (mtu / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")  # mlx5_3's netdev
    old = ROOTS / "old-env"
    shutil.copytree(common, old, symlinks=True)
    env_file = old / "etc" / "rocetune" / "nccl.env"
    subprocess.run([sys.executable, "-m", "rocetune", "env", "--root", str(old), "--mkdir", "-o", str(env_file)],
                   env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = env_file.read_text()
    assert "=bond0" in text
    env_file.write_text(text.replace("=bond0", "=eth0"))  # written by an older plan, another interface
    roots = {netns.host_name(i): common for i in range(1, HOSTS + 1)}
    roots.update({MTU: mtu, NICS: FIXTURES / "h100-converged-roce", OLD_ENV: old})
    return roots


def sshd_gone(host: str) -> None:
    """Stop the host's sshd: connections are refused from now on."""
    pids = subprocess.run(["ip", "netns", "pids", netns.NS_PREFIX + host], stdout=subprocess.PIPE,
                          text=True, check=True).stdout.split()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def rekeyed_known_hosts(info, tmp: Path) -> Path:
    """The lab's known_hosts with REKEYED's key replaced, as after a reinstall of that host."""
    key = tmp / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    new_pub = key.with_suffix(".pub").read_text().split()[:2]
    ip = info.ip(REKEYED)
    lines = []
    for line in info.known_hosts.read_text().splitlines():
        names = line.split()[0].split(",") if line.strip() else []
        lines.append(f"{line.split()[0]} {' '.join(new_pub)}" if ip in names or REKEYED in names else line)
    path = tmp / "known_hosts"
    path.write_text("\n".join(lines) + "\n")
    assert path.read_text() != info.known_hosts.read_text()
    return path


def report(directory: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "report", str(directory)],
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")), stdout=subprocess.PIPE, text=True)
    assert proc.returncode == 1, proc.stdout[-2000:]
    return json.loads(proc.stdout)["data"]


def test_both_gathering_paths_name_the_same_odd_hosts(lab_exclusive, tmp_path):
    roots = make_roots()
    info = lab_exclusive.up(HOSTS)
    for host, root in roots.items():
        netns.run_on(info.ip(host), f"mkdir -p /etc/rocetune-lab && printf '#!/bin/sh\\nexec {AGENT} --root {root} "
                                  f"\"$@\"\\n' > /etc/rocetune-lab/rocetune && chmod 0755 /etc/rocetune-lab/rocetune")
    known_hosts = rekeyed_known_hosts(info, tmp_path)
    sshd_gone(DOWN)

    paramiko_dir, play_dir = tmp_path / "gather", tmp_path / "play"
    gather = subprocess.run(
        [sys.executable, "-m", "rocetune", "--json", "fleet", "gather", *[ip for _, ip in info.hosts],
         "-o", str(paramiko_dir), "--identity", str(info.key), "--known-hosts", str(known_hosts), "--user", "root",
         "--timeout", "60", "--command", "/etc/rocetune-lab/rocetune"],
        env=dict(os.environ, PYTHONPATH=str(REPO / "src"), HOME=str(tmp_path)), capture_output=True,
        text=True, timeout=600)
    assert gather.returncode == 1 and "Traceback" not in gather.stderr, gather.stderr
    common = (f"-o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes")
    play = subprocess.run(
        [tool("ansible-playbook"), "-i", str(info.inventory), "playbooks/fleet.yml", "-e", json.dumps(
            {"rocetune_fleet_dir": str(play_dir), "rocetune_fleet_command": ["/etc/rocetune-lab/rocetune"],
             "ansible_ssh_common_args": common})],
        cwd=REPO, env=ansible_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=900)
    assert "fleet_results" in play.stdout or play.returncode in (0, 2, 4), play.stdout[-3000:]

    ips = {ip: name for name, ip in info.hosts}
    for directory, by_ip in ((paramiko_dir, True), (play_dir, False)):
        data = report(directory)
        hosts = {(ips.get(h["host"], h["host"]) if by_ip else h["host"]): h for h in data["hosts"]}
        assert len(hosts) == HOSTS, sorted(hosts)
        failed = {h for h, r in hosts.items() if r["status"] == "failed"}
        assert failed == {DOWN, REKEYED}, (directory.name, {h: hosts[h].get("error") for h in failed})
        down_why, key_why = hosts[DOWN]["error"], hosts[REKEYED]["error"]
        if by_ip:
            assert "Connection refused" in down_why and "host key CHANGED" in key_why, (down_why, key_why)
        else:
            assert re.search(r"refused|unreachable", down_why, re.I), down_why
            assert re.search(r"host key|REMOTE HOST IDENTIFICATION", key_why, re.I), key_why
        differs = {h: set(r.get("differs") or []) for h, r in hosts.items() if r.get("differs")}
        assert set(differs) == {MTU, NICS, OLD_ENV}, (directory.name, differs)
        # doctor calls the mismatch an error too, and the rail's RoCE MTU a warning
        assert {"mtu", "doctor.errors", "warning.roce-mtu-low"} <= differs[MTU], differs[MTU]
        assert {"hca.names", "hca.count"} <= differs[NICS]
        # what its jobs get is judged: a socket interface the node lacks fails it (doctor-env-ifname-missing)
        assert differs[OLD_ENV] == {"envfile.stale", "env.NCCL_SOCKET_IFNAME", "doctor.errors"}, differs[OLD_ENV]
        print(f"{directory.name}: failed {sorted(failed)}, differ {({h: sorted(d) for h, d in differs.items()})}")
