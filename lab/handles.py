"""What a lab's hosts share, namespace hosts and VMs alike: their names and addresses, the
controller's key and known_hosts in the lab's state directory, and an ssh argv for one of them."""

from __future__ import annotations

import contextlib
import ipaddress
import os
from pathlib import Path
from typing import Callable, List, Optional, Set, Tuple


class LabError(Exception):
    """Something the person running the lab can act on; the message is one line."""


def ssh_command(ip: str, state_dir: Path, connect_timeout: int = 10,
                known_hosts: Optional[Path] = None) -> List[str]:
    """ssh argv (no remote command) for root@ip: the lab key, strict host key checking.

    ``-F /dev/null`` keeps the caller's ~/.ssh/config out; ``known_hosts`` replaces the lab's
    generated file (tests use it to prove that host keys are checked).
    """
    return ["ssh", "-F", "/dev/null",
            "-i", str(state_dir / "id_ed25519"),
            "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={known_hosts or state_dir / 'known_hosts'}",
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={connect_timeout}",
            "-o", "LogLevel=ERROR",
            "-l", "root", ip]


class Hosts:
    """A lab's hosts, for a class that has `hosts` ([(name, ip)], first host first) and
    `state_dir`; `WHAT` names one of them in an error."""

    hosts: List[Tuple[str, str]]
    state_dir: Path
    WHAT = "host"

    @property
    def names(self) -> List[str]:
        return [name for name, _ in self.hosts]

    @property
    def key(self) -> Path:
        """The controller's SSH private key (root login on every host)."""
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    def ip(self, host: str) -> str:
        for name, ip in self.hosts:
            if host in (name, ip):
                return ip
        raise LabError(f"{host}: not a lab {self.WHAT} ({self.WHAT}s: {', '.join(self.names)})")

    def ssh_command(self, host: str) -> List[str]:
        """An ssh argv (without the remote command) that logs in as root with strict host keys."""
        return ssh_command(self.ip(host), self.state_dir)


def ssh_clients(to: Callable[[ipaddress.IPv4Address], bool]) -> Set[int]:
    """The machine's ssh client processes with a TCP connection to port 22 of an address `to`
    accepts (Ansible's ControlPersist masters, say): what a teardown ends first."""
    inodes = set()
    with contextlib.suppress(OSError), open("/proc/net/tcp") as fh:
        next(fh)
        for line in fh:
            fields = line.split()
            rem_ip_hex, rem_port_hex = fields[2].split(":")
            ip = ipaddress.IPv4Address(bytes(reversed(bytes.fromhex(rem_ip_hex))))
            if int(rem_port_hex, 16) == 22 and to(ip):
                inodes.add(fields[9])
    found: Set[int] = set()
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()) if inodes else ():
        try:
            with open(f"/proc/{pid}/comm") as fh:
                if fh.read().strip() != "ssh":
                    continue
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    found.add(pid)
                    break
        except OSError:
            continue
    return found
