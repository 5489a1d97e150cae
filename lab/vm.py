"""The lab's VM tier: Debian VMs under QEMU with Soft-RoCE, shaped like GPU nodes.

Each VM ``vmNN`` boots the cached image (``vm_image.py``) and has three virtio NICs:

- ``ens3``  management: 198.18.1.(10+NN)/24, SSH, default route via the controller (which does
  not forward, so nothing leaves the lab); VM vm01 also gets a Soft-RoCE device here (``rxe2``),
  the kind of port NCCL must not use;
- ``ens4``, ``ens5`` fabric rails 0 and 1, one subnet 198.18.2.0/24 (.10+NN and .110+NN),
  MTU 9000, Soft-RoCE devices ``rxe0`` and ``rxe1``.

All taps and both bridges (``rtvbr-mgmt``, ``rtvbr-fab``) live in the network namespace
``rtvlab-net``; the controller joins the management bridge through ``rtvctl0`` (198.18.1.1), the
same way it reaches namespace hosts. The controller also serves the image's package repository
on http://198.18.1.1:8088/ for apt inside the VMs. KVM is used where it boots a guest, TCG
otherwise (probed once per machine boot; ``ROCETUNE_LAB_VM_ACCEL=kvm|tcg`` forces one).

Command line: ``python3 -m lab up 2 --vm``, ``python3 -m lab down`` (both tiers), ``python3 -m lab ssh vm01``. See
docs/lab.md.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import io
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

from lab import handles, netns, vm_image
from lab.vm_tier import CONTROLLER_IP, FABRIC_IFS, MGMT_IF, STATE_DIR, VMInfo, current

NETNS = "rtvlab-net"
MGMT_BRIDGE = "rtvbr-mgmt"
FABRIC_BRIDGE = "rtvbr-fab"
CONTROLLER_IF = "rtvctl0"
CONTROLLER_PEER = "rtv-ctl"
MGMT_NET = ipaddress.ip_network("198.18.1.0/24")
FABRIC_NET = ipaddress.ip_network("198.18.2.0/24")
REPO_PORT = vm_image.VM_REPO_PORT
FABRIC_MTU = 9000  # in the VMs; the fabric bridge and taps take 9216 like a jumbo switch
SWITCH_MTU = 9216
MGMT_RXE_HOST = "vm01"  # gets a Soft-RoCE device on its management NIC too
MGMT_RXE = "rxe2"
MAX_VMS = 8
MEMORY_MIB = 1024
READY_TIMEOUT_TCG = 300.0
READY_TIMEOUT_KVM = 90.0
ACCEL_PROBE_TIMEOUT = 30.0
CONSOLE_TAIL = 25  # console lines quoted when a VM does not come up
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# The console line that usually says why a boot failed, quoted first in the error.
NOTABLE = re.compile(r"Kernel panic|ALERT!|emergency mode|Failed to start|FAILED|not found")


def vm_name(i: int) -> str:
    return f"vm{i:02d}"


def mgmt_ip(i: int) -> str:
    return str(MGMT_NET.network_address + 10 + i)


def fabric_ip(i: int, rail: int) -> str:
    return str(FABRIC_NET.network_address + 10 + i + 100 * rail)


def _mac(net: int, rail: int, i: int) -> str:
    return f"02:c6:12:{net:02x}:{rail:02x}:{i:02x}"


def softroce_links(name: str) -> List[Tuple[str, str]]:
    """[(rxe device, netdev)] that the VM's rocetune-softroce unit creates."""
    links = [(f"rxe{r}", nic) for r, nic in enumerate(FABRIC_IFS)]
    if name == MGMT_RXE_HOST:
        links.append((MGMT_RXE, MGMT_IF))
    return links


# ---------------------------------------------------------------------------------------------
# Discovery (by name, so a failed or killed `up` is found too)


def _netns_exists() -> bool:
    return (netns.NETNS_DIR / NETNS).exists()


def _cmdline(pid: int) -> List[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def _vm_pids() -> Set[int]:
    """QEMU processes of the VM lab and the repository server (found by their arguments)."""
    marker = str(STATE_DIR).rstrip("/") + "/"
    cache = str(vm_image.CACHE_DIR).rstrip("/") + "/"
    found = set()
    me = os.getpid()
    for pid in netns._pids():
        if pid == me:
            continue
        args = _cmdline(pid)
        if any(a.startswith("rtvlab-vm") or marker in a for a in args) or "http.server" in args and any(a.startswith(cache) for a in args):
            found.add(pid)
    return found


def _ssh_clients(only: Optional[str] = None) -> Set[int]:
    """ssh clients on the machine connected to a VM (Ansible ControlPersist masters, say);
    ``only``: to that management address."""
    return handles.ssh_clients(lambda ip: ip in MGMT_NET and only in (None, str(ip)))


def anything_up() -> bool:
    return _netns_exists() or CONTROLLER_IF in netns._root_links() or STATE_DIR.exists() \
        or bool(_vm_pids())


# ---------------------------------------------------------------------------------------------
# down


def down() -> None:
    """Remove every VM, tap, bridge, server and file of the VM tier. Idempotent."""
    if os.geteuid() != 0:
        if anything_up():
            raise netns.LabError("the VM lab is up and only root can take it down")
        return
    with netns._locked():
        _down_locked()


def _down_locked() -> None:
    clients = _ssh_clients()
    for pid in clients:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    # QEMU first (SIGTERM lets it close its taps), then SIGKILL whatever is left.
    pids = _vm_pids()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while any(netns._alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    deadline = time.monotonic() + 10
    while True:
        live = {p for p in _vm_pids() | clients if netns._alive(p)}
        if not live:
            break
        if time.monotonic() > deadline:
            raise netns.LabError(f"VM lab processes survive SIGKILL: {sorted(live)[:10]}")
        for pid in live:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)

    if CONTROLLER_IF in netns._root_links():
        subprocess.run(["ip", "link", "del", CONTROLLER_IF], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if _netns_exists():
        # Taps are persistent devices: delete them by name before the namespace.
        links = subprocess.run(["ip", "-n", NETNS, "-o", "link", "show"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True).stdout
        for line in links.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name.startswith("rtv"):
                subprocess.run(["ip", "-n", NETNS, "link", "del", name],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = subprocess.run(["ip", "netns", "del", NETNS], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        path = netns.NETNS_DIR / NETNS
        if path.exists():
            subprocess.run(["umount", "-l", str(path)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            with contextlib.suppress(OSError):
                path.unlink()
        if path.exists():
            raise netns.LabError(f"cannot delete network namespace {NETNS}: "
                               f"{netns._last_line(proc.stdout)}")
    netns._unmount_under(STATE_DIR)
    created = STATE_DIR / "created-run-netns"
    if created.exists() and netns.NETNS_DIR.exists() and not os.listdir(netns.NETNS_DIR) \
            and not netns._lab_netns():
        if str(netns.NETNS_DIR) in netns._mountpoints():
            subprocess.run(["umount", str(netns.NETNS_DIR)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if created.read_text().strip() == "dir":
            with contextlib.suppress(OSError):
                netns.NETNS_DIR.rmdir()
    netns._safe_rmtree(STATE_DIR)
    netns.write_inventory()


# ---------------------------------------------------------------------------------------------
# Accelerator: KVM where it boots a guest kernel, TCG otherwise


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def choose_accel(img: vm_image.Image) -> Tuple[str, str]:
    """('kvm'|'tcg', why). KVM is tried by booting the image's kernel to its first init."""
    forced = os.environ.get("ROCETUNE_LAB_VM_ACCEL", "").strip().lower()
    if forced in ("kvm", "tcg"):
        return forced, f"forced by ROCETUNE_LAB_VM_ACCEL={forced}"
    if forced:
        raise netns.LabError(f"ROCETUNE_LAB_VM_ACCEL={forced}: expected kvm or tcg")
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
    except OSError as exc:
        return "tcg", f"/dev/kvm unusable ({exc.strerror})"
    cache = vm_image.CACHE_DIR / "accel.json"
    stamp = {"boot_id": _boot_id(), "kernel": img.key}
    with contextlib.suppress(OSError, ValueError):
        saved = json.loads(cache.read_text())
        if {k: saved.get(k) for k in stamp} == stamp:
            return saved["accel"], saved["reason"] + " (cached for this machine boot)"
    accel, reason = _probe_kvm(img)
    netns._write(cache, json.dumps(dict(stamp, accel=accel, reason=reason), sort_keys=True) + "\n")
    return accel, reason


def _probe_kvm(img: vm_image.Image) -> Tuple[str, str]:
    log = vm_image.CACHE_DIR / "kvm-probe.log"
    argv = ["qemu-system-x86_64", "-name", "rtvlab-kvm-probe", "-accel", "kvm", "-cpu", "host",
            "-m", "256", "-nodefaults", "-display", "none", "-no-reboot",
            "-serial", f"file:{log}", "-kernel", str(img.kernel), "-initrd", str(img.initrd),
            "-append", "console=ttyS0 panic=-1 rdinit=/rtvlab-kvm-probe"]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=ACCEL_PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "tcg", (f"KVM guest kernel did not reach init within {ACCEL_PROBE_TIMEOUT:.0f}s "
                       f"(see {log})")
    text = log.read_text(errors="replace") if log.exists() else ""
    if "rtvlab-kvm-probe" in text:  # the kernel got as far as running (a missing) init
        return "kvm", f"KVM booted a guest kernel to init in {time.monotonic() - started:.1f}s"
    why = netns._last_line(proc.stdout) or netns._last_line(text) or f"exit {proc.returncode}"
    return "tcg", f"KVM guest failed: {why}"


# ---------------------------------------------------------------------------------------------
# up


def up(n: int, timeout: Optional[float] = None, accel: Optional[str] = None, machine: str = "pc") -> VMInfo:
    """Bring up n VMs (vm01..vmNN), wait for ssh and a settled systemd; return a VMInfo.

    A VM lab that is up is taken down first; a namespace lab may stay up (other addresses).
    Builds the image first if needed. A VM that does not come up within ``timeout`` (default
    300 s under TCG, 90 s under KVM) or whose QEMU exits raises LabError quoting the tail of its
    console; a failed ``up`` removes what it built.
    """
    if not isinstance(n, int) or not 1 <= n <= MAX_VMS:
        raise netns.LabError(f"VM count must be 1..{MAX_VMS}, got {n}")
    netns._require_root()
    netns.ensure_deps()
    img = vm_image.with_data_disks(vm_image.ensure_image())
    if accel is None:
        accel, reason = choose_accel(img)
    else:
        reason = "asked for by the caller"
    netns._log(f"VMs run under {accel.upper()}: {reason}")
    with netns._locked():
        if anything_up():
            netns._log("a VM lab is already up: taking it down first")
            _down_locked()
        _check_addresses_free()
        names = [vm_name(i) for i in range(1, n + 1)]
        info = VMInfo(hosts=[(vm_name(i), mgmt_ip(i)) for i in range(1, n + 1)],
                      fabric={vm_name(i): [fabric_ip(i, r) for r in range(len(FABRIC_IFS))]
                              for i in range(1, n + 1)},
                      accel=accel, accel_reason=reason, image=img.key,
                      boot_seconds={}, machine=machine)
        try:
            _prepare(info)
            _build_network(info)
            _start_repo_server(img)
            started = {}
            for i, name in enumerate(names, start=1):
                _start_vm(info, img, i, name)
                started[name] = time.monotonic()
            limit = timeout or (READY_TIMEOUT_KVM if accel == "kvm" else READY_TIMEOUT_TCG)
            boot = _wait_ready(info, started, limit)
            info = dataclasses.replace(info, boot_seconds=boot)
            _write_state(info, "up")
            netns.write_inventory()
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
            addr = ipaddress.ip_interface(words[words.index("inet") + 1])
            for net in (MGMT_NET, FABRIC_NET):
                if addr.network.overlaps(net) and words[1] != CONTROLLER_IF:
                    raise netns.LabError(f"{words[1]} already uses {addr} inside the VM lab "
                                       f"network {net}")


def _write_state(info: VMInfo, phase: str) -> None:
    data = {"phase": phase, "accel": info.accel, "accel_reason": info.accel_reason,
            "image": info.image, "controller_ip": info.controller_ip, "machine": info.machine,
            "hosts": [{"name": n, "ip": ip, "fabric": info.fabric[n],
                       "boot_seconds": info.boot_seconds.get(n)} for n, ip in info.hosts]}
    netns._write(STATE_DIR / "lab.json", json.dumps(data, indent=2, sort_keys=True) + "\n")


def _prepare(info: VMInfo) -> None:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STATE_DIR, 0o700)
    if not netns.NETNS_DIR.exists():
        netns._write(STATE_DIR / "created-run-netns", "dir\n")
    elif str(netns.NETNS_DIR) not in netns._mountpoints():
        netns._write(STATE_DIR / "created-run-netns", "mount\n")
    _write_state(info, "starting")
    keydir = STATE_DIR / "keys"
    keydir.mkdir()
    client = STATE_DIR / "id_ed25519"
    jobs = [(client, netns._keygen(client, "rocetune-lab-controller"))]
    jobs += [(keydir / f"{name}_host_ed25519", netns._keygen(keydir / f"{name}_host_ed25519",
                                                          f"root@{name}"))
             for name in info.names]
    for path, job in jobs:
        out, _ = job.communicate()
        if job.returncode != 0:
            raise netns.LabError(f"ssh-keygen {path.name}: {netns._last_line(out.decode())}")
    known = []
    for name, ip in info.hosts:
        algo, blob = (keydir / f"{name}_host_ed25519.pub").read_text().split()[:2]
        known.append(f"{','.join([name, ip] + info.fabric[name])} {algo} {blob}\n")
    netns._write(info.known_hosts, "".join(known))
    for i, name in enumerate(info.names, start=1):
        (STATE_DIR / name).mkdir()
        _write_seed(info, i, name, keydir)


def _write_seed(info: VMInfo, i: int, name: str, keydir: Path) -> None:
    """The VM's own files as a tar, attached as a read-only disk (unpacked at boot)."""
    hosts = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback",
             f"{info.controller_ip}\trtvlab-controller"]
    hosts += [f"{ip}\t{n}" for n, ip in info.hosts]
    net = [f"{MGMT_IF} {_mac(1, 0, i)} 1500 {mgmt_ip(i)}/{MGMT_NET.prefixlen} {MGMT_NET}"]
    net += [f"{nic} {_mac(2, r, i)} {FABRIC_MTU} {fabric_ip(i, r)}/{FABRIC_NET.prefixlen} "
            f"{FABRIC_NET}" for r, nic in enumerate(FABRIC_IFS)]
    net.append(f"gateway {info.controller_ip}")
    links = " ".join(f"{dev}={nd}" for dev, nd in softroce_links(name))
    pub = (STATE_DIR / "id_ed25519.pub").read_text()
    files = {
        "etc/hostname": (name + "\n", 0o644),
        "etc/hosts": ("# rocetune lab VMs (lab/vm.py)\n" + "\n".join(hosts) + "\n", 0o644),
        "etc/machine-id": (hashlib.md5(f"rocetune-lab {name}".encode()).hexdigest() + "\n",
                           0o444),
        "etc/ssh/ssh_host_ed25519_key": ((keydir / f"{name}_host_ed25519").read_text(), 0o600),
        "etc/ssh/ssh_host_ed25519_key.pub": ((keydir / f"{name}_host_ed25519.pub").read_text(),
                                             0o644),
        "etc/ssh/ssh_known_hosts": (info.known_hosts.read_text(), 0o644),
        "root/.ssh/authorized_keys": (pub, 0o600),
        "root/.ssh/id_ed25519": ((STATE_DIR / "id_ed25519").read_text(), 0o600),
        "root/.ssh/id_ed25519.pub": (pub, 0o644),
        "etc/rocetune-lab/net.conf": ("\n".join(net) + "\n", 0o644),
        "etc/default/rocetune-softroce": (
            "# Soft-RoCE devices: a software stand-in for RoCE NICs (rocetune lab)\n"
            f'SOFTROCE_LINKS="{links}"\n', 0o644),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, (text, mode) in sorted(files.items()):
            data = text.encode()
            ti = tarfile.TarInfo(path)
            ti.size, ti.mode, ti.mtime = len(data), mode, 0
            tar.addfile(ti, io.BytesIO(data))
    raw = buf.getvalue()
    raw += b"\0" * (-len(raw) % 65536)
    netns._write(STATE_DIR / name / "seed.tar", raw, 0o600)


def _ipn(*args: str) -> None:
    netns._ip(*args, netns=NETNS)


def _build_network(info: VMInfo) -> None:
    netns._ip("netns", "add", NETNS)
    _ipn("link", "set", "lo", "up")
    for bridge, mtu in ((MGMT_BRIDGE, 1500), (FABRIC_BRIDGE, SWITCH_MTU)):
        _ipn("link", "add", bridge, "mtu", str(mtu), "type", "bridge", "stp_state", "0",
             "forward_delay", "0", "group_fwd_mask", "0x4000")
        _ipn("link", "set", bridge, "up")
    netns._ip("link", "add", CONTROLLER_IF, "address", _mac(1, 0xff, 1), "type", "veth", "peer",
            "name", CONTROLLER_PEER, "netns", NETNS)
    _ipn("link", "set", CONTROLLER_PEER, "master", MGMT_BRIDGE, "up")
    netns._ip("addr", "add", f"{info.controller_ip}/{MGMT_NET.prefixlen}", "dev", CONTROLLER_IF)
    netns._ip("link", "set", CONTROLLER_IF, "up")
    Path(f"/proc/sys/net/ipv4/conf/{CONTROLLER_IF}/forwarding").write_text("0\n")
    for i, _name in enumerate(info.names, start=1):
        for tap, bridge, mtu in _taps(i):
            _ipn("tuntap", "add", "dev", tap, "mode", "tap")
            _ipn("link", "set", tap, "mtu", str(mtu), "master", bridge, "up")


def _taps(i: int) -> List[Tuple[str, str, int]]:
    return [(f"rtv{i:02d}m", MGMT_BRIDGE, 1500)] + \
        [(f"rtv{i:02d}f{r}", FABRIC_BRIDGE, SWITCH_MTU) for r in range(len(FABRIC_IFS))]


def _start_repo_server(img: vm_image.Image) -> None:
    with open(STATE_DIR / "repo.log", "wb") as log:
        subprocess.Popen([sys.executable, "-m", "http.server", "--bind", CONTROLLER_IP,
                          "--directory", str(img.repo), str(REPO_PORT)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True)
    deadline = time.monotonic() + 10
    while not netns._tcp_open(CONTROLLER_IP, REPO_PORT):
        if time.monotonic() > deadline:
            raise netns.LabError(f"the package repository did not start on {CONTROLLER_IP}:"
                               f"{REPO_PORT} (see {STATE_DIR / 'repo.log'})")
        time.sleep(0.1)


# Under TCG an x86-64-v2 CPU, not "max": with AVX/AVX2/AVX-512 on offer the guest kernel's
# crypto self-tests and its userspace take vector code paths that TCG emulates slowly, and
# boots after a reset took 100-204 s instead of 53-92 s (kernel phase up to 116 s instead of
# 12-21 s). Debian 12's userspace and the CPU torch wheel run on this baseline.
TCG_CPU = "qemu64,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16"


# q35: the stand-in GPU (virtio-rng, 1af4:1044) and the fabric NICs each behind a root port.
Q35_GPU_ID = "1af4:1044"
Q35_ROOT_PORTS = {"gpu": 0x10, "rail0": 0x11, "rail1": 0x12}


def qemu_argv(info: VMInfo, img: vm_image.Image, i: int, name: str) -> List[str]:
    d = STATE_DIR / name
    cpu = "host" if info.accel == "kvm" else TCG_CPU
    q35 = info.machine == "q35"
    append = "console=ttyS0 root=LABEL=rtvroot rw panic=-1 loglevel=4 systemd.show_status=1"
    argv = ["qemu-system-x86_64", "-name", f"rtvlab-{name},process=rtvlab-{name}",
            "-machine", "q35" if q35 else "pc", "-accel", info.accel, "-cpu", cpu, "-smp", "1",
            "-m", str(MEMORY_MIB), "-nodefaults", "-display", "none", "-no-reboot",
            "-serial", f"file:{d / 'console.log'}",
            "-kernel", str(img.kernel), "-initrd", str(img.initrd),
            "-append", append + (" intel_iommu=on" if q35 else ""),
            "-drive", f"file={img.disk},format=raw,if=none,id=root,snapshot=on,cache=unsafe",
            "-device", "virtio-blk-pci,drive=root,serial=rtvroot,addr=0x6",
            "-drive", f"file={d / 'seed.tar'},format=raw,if=none,id=seed,readonly=on",
            "-device", "virtio-blk-pci,drive=seed,serial=rtvseed,addr=0x7",
            "-pidfile", str(d / "qemu.pid"), "-daemonize",
            "-qmp", f"unix:{d / 'qmp.sock'},server=on,wait=off"]  # reboot(): set-action
    if q35:
        argv[argv.index("-nodefaults"):argv.index("-nodefaults")] = ["-device", "intel-iommu"]
        for port, (role, slot) in enumerate(Q35_ROOT_PORTS.items(), start=1):
            argv += ["-device", f"pcie-root-port,id=rp-{role},chassis={port},port={port},addr={slot:#x}"]
        argv += ["-device", "virtio-rng-pci,bus=rp-gpu"]
    for slot, (serial, path) in enumerate(img.data_disks, start=0x8):
        argv += ["-drive", f"file={path},format=raw,if=none,id={serial},readonly=on",
                 "-device", f"virtio-blk-pci,drive={serial},serial={serial},addr={slot:#x}"]
    nics = [(0x3, 1, 0)] + [(0x4 + r, 2, r) for r in range(len(FABRIC_IFS))]
    for (tap, _, _), (slot, net, rail) in zip(_taps(i), nics):
        where = f"bus=rp-rail{rail}" if q35 and net == 2 else f"addr={slot:#x}"
        argv += ["-netdev", f"tap,id={tap},ifname={tap},script=no,downscript=no",
                 "-device", f"virtio-net-pci,netdev={tap},mac={_mac(net, rail, i)},{where}"]
    return argv


def _start_vm(info: VMInfo, img: vm_image.Image, i: int, name: str) -> None:
    argv = ["ip", "netns", "exec", NETNS] + qemu_argv(info, img, i, name)
    env = dict(os.environ, TMPDIR=str(STATE_DIR / name))  # snapshot=on writes here
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env)
    if proc.returncode != 0:
        raise netns.LabError(f"{name}: qemu did not start: {netns._last_line(proc.stdout)}")


def _qemu_alive(name: str) -> bool:
    try:
        pid = int((STATE_DIR / name / "qemu.pid").read_text().strip())
    except (OSError, ValueError):
        return False
    return netns._alive(pid)


def console_tail(name: str, lines: int = CONSOLE_TAIL) -> List[str]:
    path = STATE_DIR / name / "console.log"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    text = ANSI_ESCAPE.sub("", text.replace("\r", ""))
    out: List[str] = []
    repeats = 0
    for line in (ln.rstrip() for ln in text.splitlines() if ln.strip()):
        if out and line == out[-1]:
            repeats += 1
            continue
        if repeats:
            out.append(f"(the line above {repeats} more times)")
            repeats = 0
        out.append(line)
    if repeats:
        out.append(f"(the line above {repeats} more times)")
    return out[-lines:]


def _wait_one(name: str, ip: str, t0: float, limit: float) -> Tuple[Optional[str], float]:
    deadline = t0 + limit
    while True:
        if not _qemu_alive(name):
            return "QEMU exited before the VM answered ssh", 0.0
        if netns._tcp_open(ip, 22, timeout=1.0):
            ok, _ = _ssh_ok(ip)
            if ok:
                break
        if time.monotonic() > deadline:
            return f"no ssh on {ip}:22 within {limit:.0f}s", 0.0
        time.sleep(1.0)
    ssh_at = time.monotonic() - t0
    # systemd settles (the Soft-RoCE unit included) before the VM counts as up.
    left = max(10, int(deadline - time.monotonic()))
    proc = run_on(ip, f"timeout {left} systemctl is-system-running --wait", check=False,
                  timeout=left + 15)
    state = proc.stdout.strip()
    if state != "running":
        failed = run_on(ip, "systemctl --failed --plain --no-legend", check=False).stdout
        return f"systemd is '{state}' (failed units: {' '.join(failed.split()) or 'none'})", 0.0
    netns._log(f"{name}: ssh after {ssh_at:.1f}s, systemd running after "
             f"{time.monotonic() - t0:.1f}s")
    return None, time.monotonic() - t0


def _ssh_ok(ip: str) -> Tuple[bool, str]:
    try:
        proc = subprocess.run(netns.ssh_command(ip, STATE_DIR, connect_timeout=10) + ["--", "true"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, "ssh timed out"
    return proc.returncode == 0, netns._last_line(proc.stdout)


def _wait_ready(info: VMInfo, started: Dict[str, float], limit: float) -> Dict[str, float]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(info.hosts)) as pool:
        futures = {pool.submit(_wait_one, n, ip, started[n], limit): n for n, ip in info.hosts}
        results = {futures[f]: f.result() for f in concurrent.futures.as_completed(futures)}
    problems = {n: why for n, (why, _) in results.items() if why}
    if problems:
        first = sorted(problems)[0]
        tail = console_tail(first)
        for name in sorted(problems):
            for line in console_tail(name):
                netns._log(f"{name} console: {line}")
        more = f" (and {len(problems) - 1} more VMs)" if len(problems) > 1 else ""
        notable = [ln for ln in tail if NOTABLE.search(ln)][:1]
        shown = notable + [ln for ln in tail[-6:] if ln not in notable]
        raise netns.LabError(f"{first} did not come up under {info.accel.upper()}: "
                           f"{problems[first]}{more}; console tail: "
                           + (" | ".join(shown) or "(empty)"))
    return {n: round(secs, 1) for n, (_, secs) in results.items()}


# ---------------------------------------------------------------------------------------------
# ssh


def _resolve(host: str) -> str:
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host) in MGMT_NET:
            return host
    if host.startswith("vm") and host[2:].isdigit():
        return mgmt_ip(int(host[2:]))
    raise netns.LabError(f"{host}: not a lab VM name (vmNN) or management address")


def ssh_command(host: str) -> List[str]:
    return netns.ssh_command(_resolve(host), STATE_DIR)


def run_on(host: str, cmd: Union[str, Sequence[str]], check: bool = True, timeout: float = 300,
           input: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run a command on a VM over ssh (strict host keys); like ``netns.run_on``."""
    remote = cmd if isinstance(cmd, str) else shlex.join(cmd)
    argv = ssh_command(host) + ["--", remote]
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        tail = netns._last_line(proc.stderr) or netns._last_line(proc.stdout)
        raise netns.LabError(f"{host}: `{remote}` exited {proc.returncode}: {tail}")
    return proc


def copy_to(host: str, local: Union[str, Path], remote: str, timeout: float = 300) -> None:
    """Copy a file or directory tree onto a VM (tar over ssh, no scp quirks)."""
    local = Path(local)
    # -h: the files behind links, as pip and the packed
    # agent carry them.
    tar = subprocess.Popen(["tar", "-h", "-C", str(local.parent), "-cf", "-",
                            "--exclude=__pycache__", local.name], stdout=subprocess.PIPE)
    argv = ssh_command(host) + ["--", f"mkdir -p {shlex.quote(remote)} && "
                                      f"tar -C {shlex.quote(remote)} -xf -"]
    proc = subprocess.run(argv, stdin=tar.stdout, capture_output=True,
                          text=True, timeout=timeout)
    tar.stdout.close()
    tar.wait()
    if proc.returncode != 0 or tar.returncode != 0:
        raise netns.LabError(f"{host}: copying {local} failed: {netns._last_line(proc.stderr)}")


def copy_from(host: str, remote: str, local: Union[str, Path], timeout: float = 300) -> None:
    """Copy one file from a VM."""
    with open(local, "wb") as fh:
        proc = subprocess.run(ssh_command(host) + ["--", f"cat {shlex.quote(remote)}"],
                              stdout=fh, stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode != 0:
        raise netns.LabError(f"{host}: reading {remote} failed: "
                           f"{netns._last_line(proc.stderr.decode(errors='replace'))}")


# ---------------------------------------------------------------------------------------------
# reboot: the guest reboots itself; QEMU resets the machine instead of exiting (``-no-reboot``
# is switched off for the reboot only, so a kernel panic still ends QEMU), and the disk's
# snapshot overlay lives on in the same QEMU process.

# A deadline, not a cost: a loaded CI runner's TCG guest has taken over four minutes to boot and
# run its boot units (rocetune-env.service re-plans under emulation).
REBOOT_TIMEOUT_TCG = 420.0
REBOOT_TIMEOUT_KVM = 90.0


def _qmp(name: str, *commands: dict) -> None:
    """Run QMP commands on a VM's QEMU (its monitor socket); an error reply raises LabError."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        try:
            sock.connect(str(STATE_DIR / name / "qmp.sock"))
        except OSError as exc:
            raise netns.LabError(f"{name}: no QEMU monitor at {STATE_DIR / name / 'qmp.sock'}: "
                               f"{exc.strerror or exc}") from None
        stream = sock.makefile("rwb")
        json.loads(stream.readline())  # the greeting
        for command in ({"execute": "qmp_capabilities"},) + commands:
            stream.write(json.dumps(command).encode() + b"\n")
            stream.flush()
            reply = {"event": None}
            while "event" in reply:  # events may come before the reply
                line = stream.readline()
                if not line:
                    raise netns.LabError(f"{name}: QEMU closed its monitor")
                reply = json.loads(line)
            if "error" in reply:
                raise netns.LabError(f"{name}: QEMU refused {command['execute']}: "
                                   f"{reply['error'].get('desc')}")


def _guest_boot_id(host: str) -> Optional[str]:
    try:
        proc = run_on(host, "cat /proc/sys/kernel/random/boot_id", check=False, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def reboot(host: str, timeout: Optional[float] = None) -> float:
    """Reboot a VM from inside (``systemctl reboot``) and wait until it is back: a new boot id
    over ssh and systemd ``running``. Returns the seconds that took. A VM not back within
    ``timeout`` (240 s under TCG, 90 s under KVM), whose QEMU exits, or whose systemd is not
    ``running`` raises LabError quoting its console tail."""
    ip = _resolve(host)
    info = current()
    name = next((n for n, a in info.hosts if a == ip), None) if info else None
    if name is None:
        raise netns.LabError(f"{host}: not a VM of the VM lab that is up")
    accel = info.accel
    limit = timeout or (REBOOT_TIMEOUT_KVM if accel == "kvm" else REBOOT_TIMEOUT_TCG)
    before = _guest_boot_id(ip)
    if before is None:
        raise netns.LabError(f"{name}: not answering ssh before the reboot")
    _qmp(name, {"execute": "set-action", "arguments": {"reboot": "reset"}})
    started = time.monotonic()
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):  # the connection may just drop
            subprocess.run(ssh_command(ip) + ["--", "systemctl reboot"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        for pid in _ssh_clients(only=ip):  # masters of the old boot's connections
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        deadline = started + limit
        while True:
            if not _qemu_alive(name):
                _reboot_failed(name, accel, "QEMU exited during the reboot")
            if netns._tcp_open(ip, 22, timeout=1.0):
                now = _guest_boot_id(ip)
                if now and now != before:
                    break
            if time.monotonic() > deadline:
                _reboot_failed(name, accel, f"not back on ssh within {limit:.0f}s")
            time.sleep(1.0)
        left = max(10, int(deadline - time.monotonic()))
        state = run_on(ip, f"timeout {left} systemctl is-system-running --wait", check=False,
                       timeout=left + 15).stdout.strip()
        if state != "running":
            failed = run_on(ip, "systemctl --failed --plain --no-legend", check=False).stdout
            _reboot_failed(name, accel, f"systemd is '{state}' after the reboot (failed units: "
                                        f"{' '.join(failed.split()) or 'none'}){_failed_units_log(ip, failed)}")
    finally:
        if _qemu_alive(name):
            with contextlib.suppress(netns.LabError, OSError, ValueError):
                _qmp(name, {"execute": "set-action", "arguments": {"reboot": "shutdown"}})
    seconds = time.monotonic() - started
    netns._log(f"{name}: rebooted, back and running after {seconds:.1f}s")
    return seconds


def _failed_units_log(ip: str, failed: str, lines: int = 12) -> str:
    """The last lines each failed unit logged in this boot: what a CI log needs to say why."""
    units = [ln.split()[0] for ln in failed.splitlines() if ln.split()]
    logs = []
    for unit in units:
        out = run_on(ip, f"journalctl -b -o cat --no-pager -n {lines} -u {shlex.quote(unit)}",
                     check=False).stdout.strip()
        logs.append(f"{unit} logged: " + (" | ".join(out.splitlines()) or "(nothing)"))
    return "; " + "; ".join(logs) if logs else ""


def _reboot_failed(name: str, accel: str, why: str) -> None:
    tail = console_tail(name)
    notable = [ln for ln in tail if NOTABLE.search(ln)][-1:]
    shown = notable + [ln for ln in tail[-6:] if ln not in notable]
    raise netns.LabError(f"{name} did not come back from a reboot under {accel.upper()}: {why}; "
                       "console tail: " + (" | ".join(shown) or "(empty)"))
