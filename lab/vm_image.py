"""The lab VM image: a Debian bookworm disk with a kernel that has Soft-RoCE, built once and cached.

``ensure_image()`` returns an ``Image`` (disk, kernel, initrd, local package repository). The
image is built from the namespace lab's debootstrapped rootfs (``netns.ensure_rootfs``) plus
``VM_PACKAGES`` installed with apt in a chroot, turned into an ext4 disk without mounting it
(``mkfs.ext4 -d``). Every .deb that went into the image is kept as a flat apt repository next
to it: VMs install from there (served on the lab network by ``vm.py``), never from the internet.

The cache lives in ``/var/cache/rocetune-lab/vm/<key>/``; the key is a hash of the package lists,
the build steps and the guest files (``lab/vm_guest/``, ``lab/softroce.sh``), so
changing any of them builds a new image on the next ``up`` and removes the old one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import List, Tuple

from lab import netns

CACHE_DIR = Path(os.environ.get("ROCETUNE_LAB_VM_CACHE", "/var/cache/rocetune-lab/vm"))
HERE = Path(__file__).resolve().parent
GUEST_DIR = HERE / "vm_guest"
SOFTROCE_SCRIPT = HERE / "softroce.sh"

# On top of the systemd-mode rootfs (netns.ROOTFS_PACKAGES): what a GPU node's RDMA stack has,
# minus the GPU. Keep sorted; the image key hashes this list.
VM_PACKAGES = (
    # Debian's ansible-core (2.14): a node that provisions itself with the local connection
    # (docs/first-boot.md), as a golden image carries it.
    "ansible-core",
    "ethtool",
    "ibverbs-providers",
    "ibverbs-utils",
    "infiniband-diags",  # the rdma_core role installs it (offline, from the lab repository)
    "initramfs-tools",
    "iproute2",
    "iputils-ping",
    "libopenmpi-dev",
    "linux-image-amd64",
    "openmpi-bin",
    "openssh-client",
    "openssh-server",
    "iperf3",
    "perftest",
    "python3-mpi4py",
    "python3-psutil",
    "python3-pyverbs",
    "python3-yaml",
    "rdma-core",
    "rdmacm-utils",
    "ucx-utils",
    "udev",
)

# What the controller needs to build and boot VMs: program -> Debian package.
HOST_PROGRAMS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "mkfs.ext4": "e2fsprogs",
    "dpkg-scanpackages": "dpkg-dev",
    "debootstrap": "debootstrap",
    "tar": "tar",
}

# Runs inside `unshare --mount` with $1 = the build root: chroot apt into it.
CHROOT_INSTALL = r"""
set -eu
root=$1 mirror=$2; shift 2
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf 'deb %s bookworm main\n' "$mirror" > "$root/etc/apt/sources.list"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
chroot "$root" apt-get update -q
chroot "$root" apt-get install -y -q --no-install-recommends -o APT::Keep-Downloaded-Packages=true "$@"
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
"""


@dataclasses.dataclass(frozen=True)
class Image:
    """A built VM image. ``repo`` is a flat apt repository (``Packages`` + the .debs)."""

    key: str
    dir: Path
    disk: Path
    kernel: Path
    initrd: Path
    repo: Path
    # Read-only disks every VM gets besides its root and seed: (virtio serial, image file).
    data_disks: Tuple[Tuple[str, Path], ...] = ()


def image_key() -> str:
    """Hash of everything that decides the image's content: the package lists, the build steps
    (the chroot script and the functions that shape the disk) and the guest files."""
    h = hashlib.sha256()
    h.update(("\n".join(netns.ROOTFS_PACKAGES + VM_PACKAGES) + "\n").encode())
    h.update(netns._rootfs_stamp().encode())
    h.update(CHROOT_INSTALL.encode())
    for func in (_make_repo, _configure_guest, _make_disk):
        h.update(inspect.getsource(func).encode())
    for path in [SOFTROCE_SCRIPT] + sorted(GUEST_DIR.iterdir()):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cached_image() -> Image:
    key = image_key()
    d = CACHE_DIR / key
    return Image(key=key, dir=d, disk=d / "disk.img", kernel=d / "vmlinuz",
                 initrd=d / "initrd.img", repo=d / "repo")


def ensure_host_deps() -> None:
    missing = sorted({pkg for prog, pkg in HOST_PROGRAMS.items() if netns._which(prog) is None})
    netns._apt_install(missing)
    still = sorted(prog for prog in HOST_PROGRAMS if netns._which(prog) is None)
    if still:
        raise netns.LabError(f"still missing after install: {', '.join(still)}")


def ensure_image() -> Image:
    """The cached image for the current key; built (a few minutes) when missing."""
    img = cached_image()
    if (img.dir / "stamp").exists():
        return img
    ensure_host_deps()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with _cache_lock():
        if (img.dir / "stamp").exists():  # built by another process meanwhile
            return img
        _build(img)
    return img


@contextlib.contextmanager
def _cache_lock():
    import fcntl

    fd = os.open(str(CACHE_DIR), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _build(img: Image) -> None:
    started = time.monotonic()
    base = netns.ensure_rootfs()
    build = CACHE_DIR / f"{img.key}.build"
    log = CACHE_DIR / "build.log"
    netns._unmount_under(build)
    netns._safe_rmtree(build)
    build.mkdir(parents=True)
    root = build / "root"
    mirror = netns._apt_mirror()
    netns._log(f"building the VM image {img.key} once: {base} + apt from {mirror} "
             f"(a few minutes; log: {log})")
    netns._run(["cp", "-a", "--reflink=auto", str(base), str(root)], what="copy the rootfs")
    with open(log, "w") as fh:
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "--",
                               "/bin/sh", "-c", CHROOT_INSTALL, "rtvlab-build", str(root), mirror]
                              + list(VM_PACKAGES), stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = netns._last_line(log.read_text(errors="replace"))
        with contextlib.suppress(OSError, netns.LabError):
            netns._safe_rmtree(build)
        raise netns.LabError(f"VM image: apt-get install in the chroot failed "
                           f"(exit {proc.returncode}): {tail} (full log: {log})")
    _make_repo(root, build / "repo", log)
    _configure_guest(root)
    kernel, initrd = _boot_files(root)
    shutil.copyfile(kernel, build / "vmlinuz")
    shutil.copyfile(initrd, build / "initrd.img")
    _make_disk(root, build / "disk.img")
    netns._safe_rmtree(root)
    netns._write(build / "stamp", f"key={img.key}\nkernel={kernel.name}\n")
    if img.dir.exists():
        netns._safe_rmtree(img.dir)
    os.rename(build, img.dir)
    for old in CACHE_DIR.iterdir():  # older images: their key no longer matches
        if old.is_dir() and old.name != img.key:
            with contextlib.suppress(OSError, netns.LabError):
                netns._safe_rmtree(old)
    netns._log(f"VM image {img.key} ready in {time.monotonic() - started:.0f}s "
             f"({img.disk.stat().st_size >> 20} MiB disk)")


def _make_repo(root: Path, repo: Path, log: Path) -> None:
    """Move the downloaded .debs out of the image into a flat apt repository."""
    repo.mkdir()
    for deb in sorted((root / "var/cache/apt/archives").glob("*.deb")):
        os.rename(deb, repo / deb.name)
    with open(repo / "Packages", "w") as out, open(log, "a") as err:
        proc = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=repo,
                              stdout=out, stderr=err)
    if proc.returncode != 0:
        raise netns.LabError(f"dpkg-scanpackages failed in {repo} (see {log})")
    for lists in (root / "var/lib/apt/lists").glob("*"):
        if lists.is_file():
            lists.unlink()


def _configure_guest(root: Path) -> None:
    """Files every VM shares; per-VM identity comes from its seed disk at boot."""
    netns._write(root / "etc/fstab", "LABEL=rtvroot / ext4 rw,relatime 0 1\n")
    netns._write(root / "etc/hostname", "rtvlab\n")
    # apt inside a VM reads only the lab's repository (served by the controller at boot time).
    netns._write(root / "etc/apt/sources.list",
               "# rocetune lab: packages served by the controller (lab/vm.py)\n"
               f"deb [trusted=yes] http://{VM_REPO_HOST}:{VM_REPO_PORT}/ ./\n")
    netns._write(root / "etc/ssh/sshd_config", netns.SSHD_CONFIG)
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    netns._write(root / "usr/local/sbin/rocetune-lab-seed",
               (GUEST_DIR / "rocetune-lab-seed.sh").read_text(), 0o755)
    netns._write(root / "usr/local/sbin/rocetune-softroce", SOFTROCE_SCRIPT.read_text(), 0o755)
    units = root / "etc/systemd/system"
    wants = units / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit in ("rocetune-lab-seed.service", "rocetune-softroce.service"):
        netns._write(units / unit, (GUEST_DIR / unit).read_text())
        link = wants / unit
        if not link.is_symlink():
            link.symlink_to(f"/etc/systemd/system/{unit}")
    # The serial console carries the boot log only: a getty there hangs it up. Timers that
    # would wake apt or rebuild man pages under TCG are masked too.
    for unit in ("serial-getty@ttyS0.service", "getty@tty1.service", "apt-daily.timer",
                 "apt-daily-upgrade.timer", "man-db.timer", "e2scrub_all.timer",
                 "e2scrub_reap.service",
                 "fstrim.timer", "systemd-networkd-wait-online.service"):
        link = units / unit
        if not link.is_symlink():
            link.symlink_to("/dev/null")
    netns._write(root / "etc/systemd/journald.conf.d/rocetune-lab.conf",
               "[Journal]\nStorage=volatile\nForwardToConsole=no\n")
    netns._write(root / "etc/modules-load.d/rocetune-lab.conf", "rdma_rxe\n")
    # No password anywhere; root logs in with the lab key only.
    netns._write(root / "root/.ssh/.keep", "", 0o600)
    os.chmod(root / "root/.ssh", 0o700)


def _boot_files(root: Path):
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise netns.LabError(f"VM image: no kernel/initrd in {root / 'boot'} after installing "
                           "linux-image-amd64")
    return kernels[-1], initrds[-1]


def _make_disk(root: Path, disk: Path) -> None:
    used = int(subprocess.run(["du", "-sx", "--block-size=1M", str(root)],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.split()[0])
    size_mib = used + 1024  # room for what a playbook installs
    with open(disk, "wb") as fh:
        fh.truncate(size_mib << 20)
    netns._run(["mkfs.ext4", "-q", "-F", "-L", "rtvroot", "-d", str(root), str(disk)],
             what="mkfs.ext4 -d (VM disk)")


# The controller's address on the management network and the repository's port.
VM_REPO_HOST = "198.18.1.1"
VM_REPO_PORT = 8088


def list_packages(img: Image) -> List[str]:
    """Package names in the image's repository."""
    return sorted({line.split(":", 1)[1].strip()
                   for line in (img.repo / "Packages").read_text().splitlines()
                   if line.startswith("Package:")})


# ---------------------------------------------------------------------------------------------
# The torch data disk: the controller's CPU torch for jobs in the VMs, without internet

TORCH_CACHE_DIR = CACHE_DIR.parent / "vm-torch"
TORCH_DISK_SERIAL = "rtvtorch"  # the guest sees /dev/disk/by-id/virtio-rtvtorch
TORCH_MOUNT = "/opt/rocetune-lab-torch"
VENV = netns.REPO / ".venv"
# Not imported by a job: C++ headers, C++ tests, CMake files; of bin/ (C++ test binaries and
# tools) only the shared-memory manager, which `import torch` insists on finding.
TORCH_SKIP = ("include", "share", "test")
TORCH_BIN_KEEP = ("torch_shm_manager",)
# What the Gloo job does (import, a one-rank process group on loopback, the collectives it
# calls); the site-packages entries this loads, with their distributions' metadata, are what
# goes on the disk.
TORCH_IMPORTS = r"""
import datetime, importlib.metadata as md, json, os, sys
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1], GLOO_SOCKET_IFNAME="lo")
import torch, torch.distributed as dist
dist.init_process_group("gloo", rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
t = torch.ones(4)
dist.all_reduce(t)
dist.all_gather([torch.empty(4)], t)
dist.barrier()
dist.destroy_process_group()
site = os.path.dirname(os.path.dirname(torch.__file__))
tops = {f[len(site) + 1:].split("/")[0] for f in
        (getattr(m, "__file__", None) or "" for m in list(sys.modules.values()))
        if f.startswith(site + "/")}
tops.discard("_distutils_hack")  # setuptools' .pth hook, not the job's
names = {top[:-3] if top.endswith(".py") else top for top in tops}
owners = md.packages_distributions()
metas = {os.path.basename(str(md.distribution(d)._path))
         for n in names for d in owners.get(n, [])}
print(json.dumps({"torch": torch.__version__, "entries": sorted(tops | metas)}))
"""


@dataclasses.dataclass(frozen=True)
class TorchDisk:
    """A read-only ext4 image: site-packages/ (torch and what it imports) and bin/python3,
    a wrapper that puts them on the guest python3's path."""

    key: str
    path: Path
    torch_version: str


def torch_disk_key() -> str:
    """Hash of the venv's torch build (its RECORD), the venv's distributions, the Python and
    the build steps; raises LabError when the venv has no torch."""
    site = sorted(VENV.glob("lib/python3*/site-packages"))
    records = sorted(p for s in site for p in s.glob("torch-*.dist-info/RECORD"))
    if not records:
        raise netns.LabError(f"no torch in {VENV} (scripts/bootstrap.sh installs the CPU wheel)")
    h = hashlib.sha256(records[-1].read_bytes())
    h.update("\n".join(sorted(p.name for p in records[-1].parent.parent.glob("*.dist-info")))
             .encode())
    h.update(os.path.realpath(VENV / "bin/python").encode())
    h.update(TORCH_IMPORTS.encode() + "\0".join(TORCH_SKIP + TORCH_BIN_KEEP).encode())
    for func in (_build_torch_disk, _torch_wrapper):
        h.update(inspect.getsource(func).encode())
    return h.hexdigest()[:16]


def ensure_torch_disk() -> TorchDisk:
    """The cached torch disk for the venv's torch; built (about a minute) when missing."""
    key = torch_disk_key()
    path = TORCH_CACHE_DIR / f"{key}.img"
    meta = TORCH_CACHE_DIR / f"{key}.json"
    TORCH_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)  # its lock
    if not (path.exists() and meta.exists()):
        ensure_host_deps()
        with _cache_lock():
            if not (path.exists() and meta.exists()):
                _build_torch_disk(key, path, meta)
    return TorchDisk(key=key, path=path, torch_version=json.loads(meta.read_text())["torch"])


def _build_torch_disk(key: str, path: Path, meta: Path) -> None:
    started = time.monotonic()
    with socket.socket() as s:  # a free port for the one-rank process group
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([str(VENV / "bin/python"), "-c", TORCH_IMPORTS, str(port)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise netns.LabError(f"torch disk: the venv's torch does not run a Gloo process group: "
                           f"{netns._last_line(proc.stderr)}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    site = Path(sorted(VENV.glob("lib/python3*/site-packages"))[-1])
    build = TORCH_CACHE_DIR / f"{key}.build"
    netns._safe_rmtree(build)
    stage = build / "tree"
    (stage / "site-packages").mkdir(parents=True)
    for entry in found["entries"]:
        # Hard links: the staging tree costs no copy (cp -a where /var/cache is elsewhere).
        src, dst = site / entry, stage / "site-packages" / entry
        if subprocess.run(["cp", "-al", str(src), str(dst)], stderr=subprocess.DEVNULL).returncode:
            netns._run(["cp", "-a", str(src), str(dst)], what=f"copy {src}")
    for skip in TORCH_SKIP:
        netns._safe_rmtree(stage / "site-packages/torch" / skip)
    for tool in (stage / "site-packages/torch/bin").iterdir():
        if tool.name not in TORCH_BIN_KEEP:
            netns._safe_rmtree(tool)
    # pip compiled every module at install; anything without bytecode gets it here, since the
    # guest cannot write it to a read-only disk (replacing a linked file leaves the venv's alone).
    # Its exit status is ignored: a few files are templates or newer syntax that pip could not
    # compile either, and no import reaches them.
    subprocess.run([str(VENV / "bin/python"), "-m", "compileall", "-q", "-j", "0",
                    str(stage / "site-packages")], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    netns._write(stage / "bin/python3", _torch_wrapper(found["torch"]), 0o755)
    # The staged tree on its own (-S: no site-packages but its own), with the controller's
    # /usr/bin/python3, which is the guest's Debian Python: what the job will import there.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([str(stage / "bin/python3"), "-S", "-c", TORCH_IMPORTS, str(port)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        netns._safe_rmtree(build)
        raise netns.LabError(f"torch disk: the staged tree does not run the Gloo job's imports "
                           f"with /usr/bin/python3: {netns._last_line(proc.stderr)}")
    used = int(subprocess.run(["du", "-sx", "--block-size=1M", str(stage)],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.split()[0])
    files = sum(len(d) + len(f) for _, d, f in os.walk(stage))
    with open(build / "disk.img", "wb") as fh:
        fh.truncate((used + used // 10 + 64) << 20)
    netns._run(["mkfs.ext4", "-q", "-F", "-L", TORCH_DISK_SERIAL, "-O", "^has_journal",
              "-N", str(files + files // 5 + 1024), "-d", str(stage), str(build / "disk.img")],
             what="mkfs.ext4 -d (torch disk)")
    os.rename(build / "disk.img", path)
    netns._write(meta, json.dumps({"torch": found["torch"], "entries": found["entries"],
                                 "build_seconds": round(time.monotonic() - started, 1)},
                                indent=2, sort_keys=True) + "\n")
    netns._safe_rmtree(build)
    for old in TORCH_CACHE_DIR.iterdir():  # other torch builds: their key no longer matches
        if old.stem != key:
            with contextlib.suppress(OSError, netns.LabError):
                netns._safe_rmtree(old)
    netns._log(f"torch disk {key} (torch {found['torch']}) ready in "
             f"{time.monotonic() - started:.0f}s ({path.stat().st_size >> 20} MiB)")


def _torch_wrapper(version: str) -> str:
    return ("#!/bin/sh\n"
            f"# The guest's python3 with torch {version} from this disk (rocetune lab).\n"
            'site="$(dirname "$(readlink -f "$0")")/../site-packages"\n'
            'PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$@"\n')


def with_data_disks(img: Image) -> Image:
    """The image with the torch disk attached when the controller's venv has torch; without
    it (the reason logged) otherwise: jobs that need torch say so, the rest of the tier runs."""
    try:
        disk = ensure_torch_disk()
    except (netns.LabError, OSError, subprocess.SubprocessError, ValueError) as exc:
        netns._log(f"VMs without the torch disk: {exc}")
        return img
    return dataclasses.replace(img, data_disks=((TORCH_DISK_SERIAL, disk.path),))
