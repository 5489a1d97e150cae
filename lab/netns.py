"""The rocetune multi-host lab: real SSH hosts in network namespaces on one Linux machine.

Each lab host ``nodeNN`` is a network namespace plus its own mount, UTS, IPC and PID
namespaces, a private copy-on-write root (overlayfs: the machine's ``/`` below, a per-host
upper directory above) and its own OpenSSH daemon. Hosts sit on a bridge that lives in a
separate "fabric" namespace; the machine itself (the Ansible controller) joins that bridge
through one more veth. Addresses come from 198.18.0.0/24 and there is no route out.

With ``systemd=True`` every host instead boots a minimal Debian bookworm (debootstrapped once
into a cache) under ``systemd-nspawn``, so roles that manage systemd units can be tested.

Command line::

    python3 -m lab up 4 [--systemd]
    python3 -m lab status [--json]
    python3 -m lab ssh node01 [command ...]
    python3 -m lab down

As a module::

    from lab import netns
    info = netns.up(4)
    try:
        netns.run_on("node01", "hostname")
    finally:
        netns.down()

See docs/lab.md. Everything here needs root except ``status``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import fcntl
import hashlib
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from lab import handles, vm_tier
from lab.handles import LabError

# ---------------------------------------------------------------------------------------------
# Names and numbers. Every kernel object the lab creates starts with "rtl" (links) or "rtlab-"
# (network namespaces, mount sources, machine names), so nothing touches the machine's own.

REPO = Path(__file__).resolve().parents[1]
STATE_DIR = Path(os.environ.get("ROCETUNE_LAB_DIR", "/run/rocetune-lab"))
ROOTFS_DIR = Path(os.environ.get("ROCETUNE_LAB_ROOTFS", "/var/cache/rocetune-lab/rootfs"))
INVENTORY = REPO / "inventories" / "lab" / "hosts.yml"
VM_INVENTORY = REPO / "inventories" / "lab" / "vm.yml"  # the VM tier only (lab/vm.py)

NETNS_DIR = Path("/run/netns")
NSPAWN_RUN_DIR = Path("/run/systemd/nspawn")
NS_PREFIX = "rtlab-"
FABRIC_NS = NS_PREFIX + "fabric"
BRIDGE = "rtlbr0"
CONTROLLER_IF = "rtlctl0"  # controller end, in the machine's own namespace
CONTROLLER_PEER = "rtl-ctl"  # its peer, a bridge port in the fabric namespace
HOST_IF = "rtl0"  # the interface inside every host
FABRIC_MTU = 9216  # the "switch" takes jumbo frames; hosts start at 1500
HOST_MTU = 1500

LAB_NET = ipaddress.ip_network("198.18.0.0/24")
ALLOWED_NET = ipaddress.ip_network("198.18.0.0/15")
CONTROLLER_IP = "198.18.0.1"
CONTROLLER_NAME = "rtlab-controller"
FIRST_HOST_OCTET = 11

MAX_HOSTS = 64
MAX_SYSTEMD_HOSTS = 16
READY_TIMEOUT = 30.0
READY_TIMEOUT_SYSTEMD = 120.0

DEBIAN_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
ROOTFS_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "python3",
    "python3-apt",
    "iproute2",
    "iputils-ping",
    "procps",
    "kmod",
    "ethtool",
)
INOTIFY_BASE = 256  # headroom for the machine itself
INOTIFY_PER_HOST = 8  # a booted systemd host uses about 7 inotify instances

# What the lab needs on the machine: program -> Debian package.
BASE_PROGRAMS = {
    "sshd": "openssh-server",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "ip": "iproute2",
    "ping": "iputils-ping",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "setsid": "util-linux",
    "pivot_root": "util-linux",
    "mount": "mount",
    "umount": "mount",
}
SYSTEMD_PROGRAMS = {
    "debootstrap": "debootstrap",
    "systemd-nspawn": "systemd-container",
}
SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

SSHD_CONFIG = """\
# Written by lab/netns.py for a lab host. Key login only.
Port 22
ListenAddress 0.0.0.0
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 128:30:256
# Lab hosts only: the classic curve25519 key exchange. The post-quantum default costs ~0.1 s of
# CPU per connection, which adds up on a two-core runner opening hundreds of connections.
KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
MaxSessions 64
ClientAliveInterval 30
Subsystem sftp /usr/lib/openssh/sftp-server
"""

# PID 1 of an overlay-mode host, run by `unshare` inside the host's namespaces.
# Arguments: $1 host name, $2 upper dir, $3 work dir, $4 mount point, $5 the repo.
HOST_INIT = r"""
set -eu
name=$1 upper=$2 work=$3 m=$4 repo=$5
mount -t overlay "rtlab-$name" -o "lowerdir=/,upperdir=$upper,workdir=$work" "$m"
mount -t proc -o nosuid,nodev,noexec proc "$m/proc"
mount --bind "$m/proc/sys" "$m/proc/sys"
mount --bind "$m/proc/sys/net" "$m/proc/sys/net"
mount -o remount,bind,ro "$m/proc/sys"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$m/sys"
mount -t tmpfs -o mode=0755,nosuid,size=16m tmpfs "$m/dev"
for d in null zero full random urandom tty; do
    : > "$m/dev/$d"
    mount --bind "/dev/$d" "$m/dev/$d"
done
mkdir -p "$m/dev/pts" "$m/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$m/dev/pts"
ln -s pts/ptmx "$m/dev/ptmx"
ln -s /proc/self/fd "$m/dev/fd"
ln -s /proc/self/fd/0 "$m/dev/stdin"
ln -s /proc/self/fd/1 "$m/dev/stdout"
ln -s /proc/self/fd/2 "$m/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$m/dev/shm"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$m/run"
mkdir -p "$m/run/sshd" "$m/run/lock"
chmod 1777 "$m/run/lock"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$m/tmp"
# A checkout under /tmp or /run would now be hidden by the fresh tmpfs: hosts run the repo's
# job scripts and its .venv at the same path, so bring it back, read-only.
case "$repo" in
    /tmp/*|/run/*|/dev/shm/*)
        mkdir -p "$m$repo"
        mount --bind "$repo" "$m$repo"
        mount -o remount,bind,ro "$m$repo" ;;
esac
hostname "$name"
cd "$m"
pivot_root . .
umount -l .
cd /
exec /usr/sbin/sshd -D -e
"""

# A systemd-mode host: overlay the cached rootfs in a private mount namespace, then boot it.
# Arguments: $1 host name, $2 rootfs, $3 upper, $4 work, $5 mount point, $6 netns path, $7 repo.
SYSTEMD_INIT = r"""
set -eu
name=$1 rootfs=$2 upper=$3 work=$4 m=$5 netns=$6 repo=$7
mount -t overlay "rtlab-$name" -o "lowerdir=$rootfs,upperdir=$upper,workdir=$work" "$m"
export SYSTEMD_NSPAWN_LOCK=0
exec systemd-nspawn --quiet --boot --register=no --keep-unit --console=passive \
    --machine="rtlab-$name" --hostname="$name" --directory="$m" \
    --network-namespace-path="$netns" \
    --resolv-conf=off --timezone=off --link-journal=no \
    --bind-ro="$repo"
"""


@dataclasses.dataclass(frozen=True)
class LabInfo(handles.Hosts):
    """What `up` built. Paths are absolute."""

    hosts: List[Tuple[str, str]]  # [(name, ip)], node01 first
    inventory: Path
    state_dir: Path
    controller_ip: str
    systemd: bool = False

    def upper(self, host: str) -> Path:
        """The host's overlay upper directory: exactly what changed on that host."""
        self.ip(host)
        return self.state_dir / "hosts" / host / "upper"


# ---------------------------------------------------------------------------------------------
# Small helpers


def _log(message: str) -> None:
    print(f"lab: {message}", file=sys.stderr, flush=True)


def _which(program: str) -> Optional[str]:
    path = os.pathsep.join([os.environ.get("PATH", "")] + list(SYSTEM_DIRS))
    return shutil.which(program, path=path)


def _run(argv: Sequence[str], what: Optional[str] = None, **kw) -> subprocess.CompletedProcess:
    """Run a command; on failure raise LabError with its last line of output."""
    proc = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)
    if proc.returncode != 0:
        tail = _last_line(proc.stdout) or f"exit {proc.returncode}"
        raise LabError(f"{what or shlex.join(argv)}: {tail}")
    return proc


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _ip(*args: str, netns: Optional[str] = None) -> None:
    argv = ["ip"] + (["-n", netns] if netns else []) + list(args)
    _run(argv)


def host_name(index: int) -> str:
    return f"node{index:02d}"


def host_ip(index: int) -> str:
    return str(LAB_NET.network_address + FIRST_HOST_OCTET + index - 1)


def _host_mac(ip: str) -> str:
    last = int(ip.rsplit(".", 1)[1])
    return f"02:c6:12:00:00:{last:02x}"


def _require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, overlay mounts, sshd per host)")


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise up/down between processes (flock on the state dir's parent directory)."""
    parent = STATE_DIR.parent
    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(parent), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, text: Union[str, bytes], mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _mkdirs_like(upper: Path, rel: str, lower: Path) -> Path:
    """Create upper/rel with each component's mode and owner copied from lower/rel.

    An upper directory's metadata wins in the merged view, so it must match the lower one
    (``/root`` stays 0700, ``/etc`` 0755).
    """
    cur_upper, cur_lower = upper, lower
    for part in Path(rel).parts:
        cur_upper, cur_lower = cur_upper / part, cur_lower / part
        if not cur_upper.exists():
            cur_upper.mkdir()
            try:
                st = os.stat(cur_lower)
                os.chmod(cur_upper, stat.S_IMODE(st.st_mode))
                os.chown(cur_upper, st.st_uid, st.st_gid)
            except FileNotFoundError:
                os.chmod(cur_upper, 0o755)
    return cur_upper


def _mountpoints() -> List[str]:
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            point = line.split()[4]
            points.append(point.encode().decode("unicode_escape"))
    return points


def _is_under(path: str, root: Path) -> bool:
    root_s = str(root).rstrip("/")
    return path == root_s or path.startswith(root_s + "/")


def _safe_rmtree(root: Path) -> None:
    """Remove a directory tree without ever crossing into another filesystem."""
    if not root.exists() and not root.is_symlink():
        return
    if root.is_symlink() or not root.is_dir():
        root.unlink()
        return
    for point in _mountpoints():
        if _is_under(point, root):
            raise LabError(f"refusing to delete {root}: {point} is still mounted")
    dev = os.lstat(root).st_dev
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                os.unlink(path)
            elif st.st_dev == dev:
                os.rmdir(path)
    os.rmdir(root)


# ---------------------------------------------------------------------------------------------
# Dependencies

_apt_updated = False


def _apt_install(packages: Sequence[str]) -> None:
    global _apt_updated
    if not packages:
        return
    if _which("apt-get") is None:
        raise LabError(f"missing packages {', '.join(packages)} and no apt-get to install them")
    _require_root()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        _log("apt-get update")
        _run(["apt-get", "update", "-q"], what="apt-get update", env=env)
        _apt_updated = True
    _log(f"installing {' '.join(packages)}")
    # Keep Debian's postinst scripts from starting daemons (openssh-server would otherwise try
    # to start sshd on the machine itself); the lab starts its own sshd per host.
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = False
    if not policy.exists():
        _write(policy, "#!/bin/sh\n# temporary, from lab/netns.py ensure_deps\nexit 101\n",
               0o755)
        made_policy = True
    try:
        _run(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + list(packages),
             what=f"apt-get install {' '.join(packages)}", env=env)
    finally:
        if made_policy:
            policy.unlink()


def ensure_deps(systemd: bool = False) -> None:
    """Install the Debian packages the lab needs and check the kernel has overlayfs."""
    wanted = dict(BASE_PROGRAMS)
    if systemd:
        wanted.update(SYSTEMD_PROGRAMS)
    missing = sorted({pkg for prog, pkg in wanted.items() if _which(prog) is None})
    _apt_install(missing)
    still = sorted(prog for prog in wanted if _which(prog) is None)
    if still:
        raise LabError(f"still missing after install: {', '.join(still)}")
    if not _has_overlayfs():
        subprocess.run(["modprobe", "overlay"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if not _has_overlayfs():
            raise LabError("the kernel has no overlayfs (modprobe overlay failed)")


def _has_overlayfs() -> bool:
    with open("/proc/filesystems") as fh:
        return any(line.split()[-1] == "overlay" for line in fh if line.strip())


# ---------------------------------------------------------------------------------------------
# The systemd rootfs (built once, cached)


def _apt_mirror() -> str:
    """The Debian mirror apt already uses for bookworm main, or deb.debian.org."""
    entries: List[Tuple[List[str], List[str], List[str]]] = []  # (uris, suites, components)
    sources = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            for stanza in text.split("\n\n"):
                fields: Dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[:1].isspace():
                        continue
                    key, _, value = line.partition(":")
                    fields[key.strip().lower()] = value.strip()
                if "deb" in fields.get("types", "").split():
                    entries.append((fields.get("uris", "").split(),
                                    fields.get("suites", "").split(),
                                    fields.get("components", "").split()))
        elif path.name == "sources.list" or path.suffix == ".list":
            for line in text.splitlines():
                words = line.split("#", 1)[0].split()
                if not words or words[0] != "deb":
                    continue
                words = words[1:]
                if words and words[0].startswith("["):
                    while words and not words[0].endswith("]"):
                        words.pop(0)
                    words = words[1:]
                if len(words) >= 3:
                    entries.append(([words[0]], [words[1]], words[2:]))
    for uris, suites, components in entries:
        if DEBIAN_SUITE in suites and "main" in components:
            for uri in uris:
                if uri.startswith(("http://", "https://")) and "security" not in uri:
                    return uri
    return DEFAULT_MIRROR


def _rootfs_stamp() -> str:
    return f"suite={DEBIAN_SUITE}\npackages={','.join(ROOTFS_PACKAGES)}\n"


def ensure_rootfs() -> Path:
    """Debootstrap a minimal Debian bookworm into ROOTFS_DIR once; reuse it afterwards."""
    stamp = ROOTFS_DIR / ".rocetune-lab-stamp"
    if stamp.exists() and stamp.read_text() == _rootfs_stamp():
        return ROOTFS_DIR
    build = ROOTFS_DIR.with_name(ROOTFS_DIR.name + ".build")
    log = ROOTFS_DIR.with_name("debootstrap.log")
    _unmount_under(build)
    _safe_rmtree(build)
    build.parent.mkdir(parents=True, exist_ok=True)
    mirror = _apt_mirror()
    argv = ["debootstrap", "--variant=minbase", "--components=main",
            "--include=" + ",".join(ROOTFS_PACKAGES)]
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    if keyring.exists():
        argv.append(f"--keyring={keyring}")
    argv += [DEBIAN_SUITE, str(build), mirror]
    _log(f"building the systemd-mode rootfs once: debootstrap {DEBIAN_SUITE} from {mirror} "
         f"into {ROOTFS_DIR} (about a minute)")
    started = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        _unmount_under(build)
        with contextlib.suppress(OSError, LabError):
            _safe_rmtree(build)
        tail = _last_line(log.read_text(errors="replace"))
        raise LabError(f"debootstrap {DEBIAN_SUITE} from {mirror} failed (exit {proc.returncode}): "
                       f"{tail} (full log: {log})")
    _unmount_under(build)
    # No shared host keys: every lab host gets its own at bring-up.
    for key in (build / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()
    wants = build / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    if not (wants / "ssh.service").is_symlink():
        (wants / "ssh.service").symlink_to("/lib/systemd/system/ssh.service")
    _write(build / "etc" / "machine-id", "")
    for deb in (build / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()
    _write(build / stamp.name, _rootfs_stamp())
    if ROOTFS_DIR.exists():
        _safe_rmtree(ROOTFS_DIR)
    os.rename(build, ROOTFS_DIR)
    _log(f"rootfs ready in {time.monotonic() - started:.0f}s")
    return ROOTFS_DIR


def _unmount_under(root: Path) -> None:
    for point in sorted((p for p in _mountpoints() if _is_under(p, root)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def _ensure_inotify(n: int) -> None:
    path = Path("/proc/sys/fs/inotify/max_user_instances")
    current = int(path.read_text())
    needed = INOTIFY_BASE + INOTIFY_PER_HOST * n
    if current < needed:
        path.write_text(f"{needed}\n")
        _log(f"raised fs.inotify.max_user_instances from {current} to {needed} "
             f"(machine-wide; each systemd host uses ~{INOTIFY_PER_HOST})")


# ---------------------------------------------------------------------------------------------
# Discovering what is up (by name, so a crashed or partial `up` is found too)


def _lab_netns() -> List[str]:
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.startswith(NS_PREFIX))


def _root_links() -> List[str]:
    try:
        return sorted(os.listdir("/sys/class/net"))
    except OSError:
        return []


def _is_lab_link(name: str) -> bool:
    return name == CONTROLLER_IF or name.startswith(("rtl-", "rtlbr", "rtlctl"))


def _pids() -> List[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _lab_pids(netns: Iterable[str], launchers: bool = True) -> Set[int]:
    """Processes inside a lab network namespace, plus (with `launchers`) every lab launcher found
    by its arguments: those of all hosts, whose end (unshare --kill-child) ends its host."""
    inodes = set()
    for name in netns:
        with contextlib.suppress(OSError):
            st = os.stat(NETNS_DIR / name)
            inodes.add((st.st_dev, st.st_ino))
    me = os.getpid()
    marker = str(STATE_DIR).rstrip("/") + "/"
    found: Set[int] = set()
    for pid in _pids():
        if pid == me:
            continue
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
            if (st.st_dev, st.st_ino) in inodes:
                found.add(pid)
                continue
            with open(f"/proc/{pid}/comm") as fh:
                comm = fh.read().strip()
            if launchers and comm in ("unshare", "nsenter", "setsid", "sh", "dash", "systemd-nspawn"):
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    args = fh.read().decode(errors="replace").split("\0")
                if any(a.startswith(marker) for a in args) or \
                        any(a.startswith(f"--machine={NS_PREFIX}") for a in args):
                    found.add(pid)
        except OSError:
            continue
    return found


def _ssh_clients_to_lab() -> Set[int]:
    """ssh clients on the machine connected to a lab host (e.g. Ansible ControlPersist masters)."""
    return handles.ssh_clients(lambda ip: ip in LAB_NET)


def _alive(pid: int) -> bool:
    """True unless the process is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _anything_up() -> bool:
    return bool(_lab_netns()) or CONTROLLER_IF in _root_links() or STATE_DIR.exists()


# ---------------------------------------------------------------------------------------------
# down


def down() -> None:
    """Tear the lab down completely. Idempotent; safe when nothing (or half of it) is up."""
    if os.geteuid() != 0:
        if _anything_up():
            raise LabError("the lab is up and only root can take it down")
        return
    with _locked():
        _down_locked()


def _down_locked() -> None:
    # 1. Controller-side ssh masters first, while their peers still answer.
    clients = _ssh_clients_to_lab()
    for pid in clients:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)

    # 2. Every process in a lab namespace, and the launchers. Killing a host's PID 1 ends its
    #    PID namespace and then its mount namespace, which takes the overlay with it.
    netns = _lab_netns()
    killed: Set[int] = set()
    deadline = time.monotonic() + 10
    while True:
        pids = _lab_pids(netns)
        live = {p for p in pids if _alive(p)}
        if not live:
            break
        if time.monotonic() > deadline:
            raise LabError(f"lab processes survive SIGKILL: {sorted(live)[:10]}")
        for pid in live:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        killed |= live
        time.sleep(0.05)
    for pid in clients:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    killed |= clients
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in killed) and time.monotonic() < deadline:
        time.sleep(0.02)

    # 3. Links in the machine's namespace (deleting one end of a veth deletes both).
    for name in _root_links():
        if _is_lab_link(name):
            subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    # 4. Network namespaces (their bridge and veths go with them).
    for name in netns:
        proc = subprocess.run(["ip", "netns", "del", name], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        path = NETNS_DIR / name
        if path.exists():
            subprocess.run(["umount", "-l", str(path)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            with contextlib.suppress(OSError):
                path.unlink()
        if path.exists():
            raise LabError(f"cannot delete network namespace {name}: {_last_line(proc.stdout)}")

    # 5. Stray mounts in the machine's namespace (none in normal operation).
    _unmount_under(STATE_DIR)
    for point in _mountpoints():
        if point.startswith(str(NETNS_DIR / NS_PREFIX)):
            subprocess.run(["umount", "-l", point], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    # 6. Files systemd-nspawn leaves on the machine: per-machine directories, and the parent
    #    directories too when the lab was the one that made them.
    subdirs = [NSPAWN_RUN_DIR / sub for sub in ("propagate", "unix-export", "locks")]
    for base in subdirs:
        for entry in base.glob(NS_PREFIX + "*") if base.exists() else []:
            with contextlib.suppress(OSError, LabError):
                _safe_rmtree(entry)
    if (STATE_DIR / "created-nspawn-dir").exists():
        for path in subdirs + [NSPAWN_RUN_DIR]:
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty

    # 7. /run/netns itself, if the lab created it and nothing else uses it now.
    created = (STATE_DIR / "created-run-netns").exists()
    if created and NETNS_DIR.exists() and not os.listdir(NETNS_DIR):
        if str(NETNS_DIR) in _mountpoints():
            subprocess.run(["umount", str(NETNS_DIR)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if (STATE_DIR / "created-run-netns").read_text().strip() == "dir":
            with contextlib.suppress(OSError):
                NETNS_DIR.rmdir()

    # 8. State and the generated inventory (which keeps the VMs' group if they are up).
    _safe_rmtree(STATE_DIR)
    write_inventory()


# ---------------------------------------------------------------------------------------------
# up


def up(n: int, systemd: bool = False, timeout: Optional[float] = None) -> LabInfo:
    """Bring up n hosts (node01..nodeNN) and wait until each answers ssh.

    A lab that is already up is taken down first. ``timeout`` (seconds) bounds the wait for
    all hosts (default 30, or 120 with ``systemd``). Raises LabError with a one-line reason
    naming the host; a failed ``up`` removes what it built before raising.
    """
    limit = MAX_SYSTEMD_HOSTS if systemd else MAX_HOSTS
    if not isinstance(n, int) or not 1 <= n <= limit:
        mode = " in systemd mode" if systemd else ""
        raise LabError(f"host count must be 1..{limit}{mode}, got {n}")
    _require_root()
    with _locked():
        if _anything_up():
            _log("a lab is already up: taking it down first")
            _down_locked()
        ensure_deps(systemd)
        rootfs = ensure_rootfs() if systemd else None
        if systemd:
            _ensure_inotify(n)
        _check_addresses_free()
        info = LabInfo(hosts=[(host_name(i), host_ip(i)) for i in range(1, n + 1)],
                       inventory=INVENTORY, state_dir=STATE_DIR, controller_ip=CONTROLLER_IP,
                       systemd=systemd)
        try:
            _bring_up(info, rootfs)
            _wait_ready(info, timeout or (READY_TIMEOUT_SYSTEMD if systemd else READY_TIMEOUT))
            _write_inventory(info)
            _write_state(info, "up")
        except BaseException:
            with contextlib.suppress(Exception):
                _down_locked()
            raise
    return info


def _check_addresses_free() -> None:
    proc = subprocess.run(["ip", "-o", "-4", "addr", "show"], stdout=subprocess.PIPE, text=True)
    for line in proc.stdout.splitlines():
        words = line.split()
        if "inet" in words:
            iface = words[1]
            addr = ipaddress.ip_interface(words[words.index("inet") + 1])
            if addr.network.overlaps(LAB_NET) and iface != CONTROLLER_IF:
                raise LabError(f"{iface} already uses {addr} inside the lab network {LAB_NET}")


def _write_state(info: LabInfo, phase: str) -> None:
    data = {
        "phase": phase,
        "systemd": info.systemd,
        "controller_ip": info.controller_ip,
        "hosts": [{"name": n, "ip": ip} for n, ip in info.hosts],
        "inventory": str(info.inventory),
    }
    _write(STATE_DIR / "lab.json", json.dumps(data, indent=2, sort_keys=True) + "\n")


def _keygen(path: Path, comment: str) -> subprocess.Popen:
    return subprocess.Popen(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                             "-f", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _bring_up(info: LabInfo, rootfs: Optional[Path]) -> None:
    # State dir first, so a failure from here on is cleaned up by down().
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STATE_DIR, 0o700)
    if not NETNS_DIR.exists():
        _write(STATE_DIR / "created-run-netns", "dir\n")
    elif str(NETNS_DIR) not in _mountpoints():
        _write(STATE_DIR / "created-run-netns", "mount\n")
    if info.systemd and not NSPAWN_RUN_DIR.exists():
        _write(STATE_DIR / "created-nspawn-dir", "dir\n")
    _write_state(info, "starting")

    # Keys: the controller's client key and one ed25519 host key per host, made in parallel.
    keydir = STATE_DIR / "keys"
    keydir.mkdir()
    client = STATE_DIR / "id_ed25519"
    jobs = [(client, _keygen(client, "rocetune-lab-controller"))]
    for name, _ in info.hosts:
        path = keydir / f"{name}_host_ed25519"
        jobs.append((path, _keygen(path, f"root@{name}")))
    for path, job in jobs:
        out, _ = job.communicate()
        if job.returncode != 0:
            raise LabError(f"ssh-keygen {path.name}: {_last_line(out.decode(errors='replace'))}")
    known = []
    for name, ip in info.hosts:
        algo, blob = (keydir / f"{name}_host_ed25519.pub").read_text().split()[:2]
        known.append(f"{name},{ip} {algo} {blob}\n")
    _write(info.known_hosts, "".join(known))

    lower = rootfs if rootfs is not None else Path("/")
    for name, _ in info.hosts:
        hdir = STATE_DIR / "hosts" / name
        for sub in ("upper", "work", "merged"):
            (hdir / sub).mkdir(parents=True)
        _prepare_upper(info, name, hdir / "upper", lower, keydir)

    _build_network(info)
    for name, _ in info.hosts:
        _start_host(info, name, rootfs)


def _prepare_upper(info: LabInfo, name: str, upper: Path, lower: Path, keydir: Path) -> None:
    """Write the host's own files into its overlay upper layer before it starts."""
    etc = _mkdirs_like(upper, "etc", lower)
    _write(etc / "hostname", name + "\n")
    machine_id = hashlib.md5(f"rocetune-lab {name}".encode()).hexdigest()  # stable per name
    _write(etc / "machine-id", machine_id + "\n", 0o444)
    hosts = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
             "ff02::1\tip6-allnodes", "ff02::2\tip6-allrouters",
             f"{info.controller_ip}\t{CONTROLLER_NAME}"]
    hosts += [f"{hip}\t{hname}" for hname, hip in info.hosts]
    _write(etc / "hosts",
           "# rocetune lab hosts (written by lab/netns.py)\n" + "\n".join(hosts) + "\n")

    ssh_etc = _mkdirs_like(upper, "etc/ssh", lower)
    # Hide any host keys the lower layer has (the machine's own, for one): whiteouts.
    ours = ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub")
    for old in (lower / "etc" / "ssh").glob("ssh_host_*"):
        target = ssh_etc / old.name
        if old.name not in ours and not target.exists():
            os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))
    shutil.copyfile(keydir / f"{name}_host_ed25519", ssh_etc / "ssh_host_ed25519_key")
    os.chmod(ssh_etc / "ssh_host_ed25519_key", 0o600)
    shutil.copyfile(keydir / f"{name}_host_ed25519.pub", ssh_etc / "ssh_host_ed25519_key.pub")
    _write(ssh_etc / "sshd_config", SSHD_CONFIG)
    _write(ssh_etc / "ssh_known_hosts", info.known_hosts.read_text())

    root = _mkdirs_like(upper, "root", lower)
    if not info.systemd:
        # Stock dotfiles, not the machine's own /root/.bashrc (pyenv init costs ~0.6 s per task).
        for dot in Path("/etc/skel").iterdir():
            if dot.is_file():
                shutil.copyfile(dot, root / dot.name)
    dot_ssh = root / ".ssh"
    dot_ssh.mkdir(mode=0o700)
    os.setxattr(str(dot_ssh), "trusted.overlay.opaque", b"y")  # hide the machine's ~/.ssh
    pub = (STATE_DIR / "id_ed25519.pub").read_text()
    _write(dot_ssh / "authorized_keys", pub, 0o600)
    # The same key on every host, so hosts can ssh to each other (multi-node launchers).
    shutil.copyfile(STATE_DIR / "id_ed25519", dot_ssh / "id_ed25519")
    os.chmod(dot_ssh / "id_ed25519", 0o600)
    _write(dot_ssh / "id_ed25519.pub", pub)


def _build_network(info: LabInfo) -> None:
    _ip("netns", "add", FABRIC_NS)
    _ip("link", "set", "lo", "up", netns=FABRIC_NS)
    _ip("link", "add", BRIDGE, "mtu", str(FABRIC_MTU), "type", "bridge", "stp_state", "0",
        "forward_delay", "0", "group_fwd_mask", "0x4000", netns=FABRIC_NS)
    _ip("link", "set", BRIDGE, "up", netns=FABRIC_NS)

    _ip("link", "add", CONTROLLER_IF, "address", _host_mac(CONTROLLER_IP), "mtu", str(HOST_MTU),
        "type", "veth", "peer", "name", CONTROLLER_PEER, "netns", FABRIC_NS)
    _ip("link", "set", CONTROLLER_PEER, "mtu", str(FABRIC_MTU), "master", BRIDGE, "up",
        netns=FABRIC_NS)
    _ip("addr", "add", f"{info.controller_ip}/{LAB_NET.prefixlen}", "dev", CONTROLLER_IF)
    _ip("link", "set", CONTROLLER_IF, "up")
    # Packets from the lab are never forwarded by the machine, even where IPv4 forwarding is on
    # (per-interface flag: "forward what arrives on this interface").
    Path(f"/proc/sys/net/ipv4/conf/{CONTROLLER_IF}/forwarding").write_text("0\n")

    for name, ip in info.hosts:
        ns = NS_PREFIX + name
        port = f"rtl-{name}"
        _ip("netns", "add", ns)
        _ip("link", "add", port, "mtu", str(FABRIC_MTU), "type", "veth", "peer", "name", HOST_IF,
            "netns", ns, netns=FABRIC_NS)
        _ip("link", "set", port, "master", BRIDGE, "up", netns=FABRIC_NS)
        _ip("link", "set", "lo", "up", netns=ns)
        _ip("link", "set", HOST_IF, "address", _host_mac(ip), "mtu", str(HOST_MTU), "up", netns=ns)
        _ip("addr", "add", f"{ip}/{LAB_NET.prefixlen}", "dev", HOST_IF, netns=ns)


def _start_host(info: LabInfo, name: str, rootfs: Optional[Path]) -> None:
    hdir = STATE_DIR / "hosts" / name
    netns_path = NETNS_DIR / (NS_PREFIX + name)
    if rootfs is None:
        argv = ["setsid", "-f", "nsenter", f"--net={netns_path}", "--",
                "unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child",
                "--propagation", "private", "--",
                "/bin/sh", "-c", HOST_INIT, "rtlab-init", name,
                str(hdir / "upper"), str(hdir / "work"), str(hdir / "merged"), str(REPO)]
    else:
        argv = ["setsid", "-f", "unshare", "--mount", "--propagation", "private", "--",
                "/bin/sh", "-c", SYSTEMD_INIT, "rtlab-init", name, str(rootfs),
                str(hdir / "upper"), str(hdir / "work"), str(hdir / "merged"), str(netns_path),
                str(REPO)]
    with open(hdir / "console.log", "wb") as log:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    if proc.returncode != 0:
        raise LabError(f"{name}: could not start (see {hdir / 'console.log'})")


# ---------------------------------------------------------------------------------------------
# Readiness, ssh, status


def ssh_command(ip: str, state_dir: Path = STATE_DIR, connect_timeout: int = 10,
                known_hosts: Optional[Path] = None) -> List[str]:
    """handles.ssh_command, the namespace hosts' state directory by default."""
    return handles.ssh_command(ip, state_dir, connect_timeout, known_hosts)


def _resolve(host: str) -> str:
    """A host name (node01) or a lab IP -> IP."""
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host) in LAB_NET:
            return host
    if host.startswith("node") and host[4:].isdigit():
        return host_ip(int(host[4:]))
    raise LabError(f"{host}: not a lab host name (nodeNN) or lab address")


def run_on(host: str, cmd: Union[str, Sequence[str]], check: bool = True,
           timeout: float = 120, input: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run a command on a lab host over ssh (strict host keys); return the CompletedProcess.

    ``cmd`` is a shell string, or an argv that is quoted for the remote shell.
    With ``check`` a non-zero exit raises LabError with the command's last line of output.
    """
    remote = cmd if isinstance(cmd, str) else shlex.join(cmd)
    argv = ssh_command(_resolve(host)) + ["--", remote]
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        tail = _last_line(proc.stderr) or _last_line(proc.stdout)
        raise LabError(f"{host}: `{remote}` exited {proc.returncode}: {tail}")
    return proc


def _tcp_open(ip: str, port: int = 22, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def _ssh_ok(ip: str, timeout: int = 5) -> Tuple[bool, str]:
    try:
        proc = subprocess.run(ssh_command(ip, connect_timeout=timeout) + ["--", "true"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        return False, "ssh timed out"
    return proc.returncode == 0, _last_line(proc.stdout)


def _wait_one(name: str, ip: str, deadline: float, timeout: float) -> Optional[str]:
    """None when the host answers ssh, else a one-line reason."""
    console = STATE_DIR / "hosts" / name / "console.log"
    polls = 0
    while not _tcp_open(ip):
        polls += 1
        if time.monotonic() > deadline:
            return f"sshd did not accept connections on {ip}:22 within {timeout:.0f}s"
        if polls % 10 == 0 and not _lab_pids([NS_PREFIX + name]) \
                and not _systemd_launcher_alive(name):
            time.sleep(0.2)  # let the log settle
            tail = _last_line(console.read_text(errors="replace")) if console.exists() else ""
            return f"host exited before sshd came up ({tail or 'no output'})"
        time.sleep(0.05)
    while True:
        ok, why = _ssh_ok(ip)
        if ok:
            return None
        if time.monotonic() > deadline:
            return f"`ssh root@{ip} true` still failing after {timeout:.0f}s: {why}"
        time.sleep(0.2)


def _systemd_launcher_alive(name: str) -> bool:
    marker = f"--machine={NS_PREFIX}{name}"
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read().split(b"\0"):
                    return True
        except OSError:
            continue
    return False


def _wait_ready(info: LabInfo, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    workers = min(16, len(info.hosts))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_wait_one, name, ip, deadline, timeout): name
                   for name, ip in info.hosts}
        problems = {}
        for fut in concurrent.futures.as_completed(futures):
            why = fut.result()
            if why:
                problems[futures[fut]] = why
    if problems:
        # The state dir (and the consoles) go away with the failed lab: show them now.
        for name in sorted(problems)[:3]:
            console = STATE_DIR / "hosts" / name / "console.log"
            lines = console.read_text(errors="replace").splitlines() if console.exists() else []
            for line in lines[-5:]:
                _log(f"{name} console: {line}")
        first = sorted(problems)[0]
        more = f" (and {len(problems) - 1} more hosts)" if len(problems) > 1 else ""
        raise LabError(f"{first}: {problems[first]}{more}")


def host_pid(host: str) -> Optional[int]:
    """The machine's PID of a host's PID 1 (for ``nsenter --all --target``), or None."""
    try:
        want = os.stat(NETNS_DIR / (NS_PREFIX + host))
    except OSError:
        return None
    for pid in sorted(_pids()):
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
            if (st.st_dev, st.st_ino) != (want.st_dev, want.st_ino):
                continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("NSpid:"):
                        ids = line.split()[1:]
                        if len(ids) > 1 and ids[-1] == "1":
                            return pid
                        break
        except OSError:
            continue
    return None


def _read_state() -> Optional[dict]:
    try:
        return json.loads((STATE_DIR / "lab.json").read_text())
    except (OSError, ValueError):
        return None


def current() -> Optional[LabInfo]:
    """The LabInfo of the lab that is up now (e.g. one brought up from the command line)."""
    state = _read_state()
    if not state or state.get("phase") != "up":
        return None
    return LabInfo(hosts=[(h["name"], h["ip"]) for h in state["hosts"]],
                   inventory=Path(state["inventory"]), state_dir=STATE_DIR,
                   controller_ip=state["controller_ip"], systemd=bool(state["systemd"]))


def status() -> dict:
    """What is up: {'up', 'phase', 'systemd', 'state_dir', 'inventory', 'controller_ip', 'hosts'}.

    ``hosts`` is a list of {'name', 'ip', 'netns', 'ssh'}; 'ssh' is True when
    ``ssh root@ip true`` works with the lab's key and strict host key checking.
    """
    state = _read_state() or {}
    netns = set(_lab_netns())
    hosts = state.get("hosts") or [{"name": n[len(NS_PREFIX):], "ip": None}
                                   for n in sorted(netns) if n != FABRIC_NS]
    readable = os.access(STATE_DIR / "id_ed25519", os.R_OK)

    def check(h: dict) -> dict:
        ok = bool(h["ip"]) and readable and NS_PREFIX + h["name"] in netns and _ssh_ok(h["ip"])[0]
        return {"name": h["name"], "ip": h["ip"], "netns": NS_PREFIX + h["name"] in netns,
                "ssh": ok}

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        checked = list(pool.map(check, hosts)) if hosts else []
    return {
        "up": bool(checked) and all(h["ssh"] for h in checked),
        "phase": state.get("phase", "partial") if state else ("partial" if netns else "down"),
        "systemd": bool(state.get("systemd", False)),
        "state_dir": str(STATE_DIR),
        "inventory": str(INVENTORY) if INVENTORY.exists() else None,
        "controller_ip": state.get("controller_ip"),
        "hosts": checked,
    }


# ---------------------------------------------------------------------------------------------
# Inventory


def _write_inventory(info: LabInfo) -> None:
    write_inventory(info)


def write_inventory(info: Optional[LabInfo] = None) -> None:
    """Write the inventories for what is up; delete them when nothing is.

    ``inventories/lab/hosts.yml`` (ansible.cfg's default) lists the namespace hosts (group
    ``lab``, which is also ``gpu_nodes``) and the VMs (group ``vm``, see vm.py).
    ``inventories/lab/vm.yml`` lists only the VMs, as ``gpu_nodes``: ``ansible-playbook -i
    inventories/lab/vm.yml site.yml`` runs site.yml on the VMs, and a playbook run on the
    default inventory never reaches them by accident.
    """
    info = info or current()
    vms = vm_tier.current()
    header = [
        "# Generated by `python3 -m lab up` for the lab that is up now; `down` deletes it.",
        "# Do not edit: the next `up` overwrites it. See docs/lab.md.",
        "all:",
        "  children:",
    ]
    if vms is None:
        with contextlib.suppress(FileNotFoundError):
            VM_INVENTORY.unlink()
    else:
        _write(VM_INVENTORY, "\n".join(header + vm_tier.inventory_lines(vms) + [
            "    gpu_nodes:", "      children:", "        vm:"]) + "\n")
    if info is None and vms is None:
        with contextlib.suppress(FileNotFoundError):
            INVENTORY.unlink()
        return
    lines = list(header)
    if info is not None:
        lines += ["    lab:", "      hosts:"]
        for name, ip in info.hosts:
            lines += [f"        {name}:", f"          ansible_host: {ip}"]
        lines += info.inventory_vars(HOST_IF)
        lines += [f"        rocetune_lab_systemd: {'true' if info.systemd else 'false'}"]
        # site.yml targets gpu_nodes: every namespace host plays a GPU node.
        lines += ["    gpu_nodes:", "      children:", "        lab:"]
    if vms is not None:
        lines += vm_tier.inventory_lines(vms)
    _write(INVENTORY, "\n".join(lines) + "\n")
