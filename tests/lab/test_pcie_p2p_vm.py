"""The pcie_p2p role and doctor's checks below NCCL on a real kernel: one lab VM booted as a q35
machine with an emulated IOMMU (QEMU intel-iommu, `intel_iommu=on`), its fabric NICs and a
stand-in GPU (virtio-rng, 1af4:1044: the VM has no GPU) each behind a QEMU pcie-root-port. With
the IOMMU on, the guest kernel turns ACS redirect on at those ports, as on a GPU server. The
devices sit on separate root ports (PHB: no GPU-NIC pair the role's gpu_nic scope takes), so the
role is given those ports by name (pcie_p2p_acs_devices, scope none).

1. Before the role: the ports between the "GPU" and the NICs have ReqRedir+ CmpltRedir+ (read
   with the role's own reader from the ports' configuration space).
2. playbooks/pcie_p2p.yml over ssh: the redirect bits are cleared now (read back), the unit is
   enabled, iommu=pt goes to the boot loader's drop-in (update-grub stood in by a script that
   records its run: the lab VM has no GRUB, QEMU boots its kernel directly), the node is marked
   reboot-required. doctor (the agent zip on the VM) says the iommu=pt waits for a reboot and
   finds no redirect (doctor-acs-redirect, reading with the role's own code). A second run and a
   `--check --diff` run on the converged node: changed=0.
3. Reboot: the kernel turns redirect on again, the unit clears it before multi-user; doctor
   agrees. Redirect put back by hand: doctor reports the port.
4. A rail's carrier taken away through QEMU (set_link off/on): the kernel log's real `set down`
   / `set active` lines of its Soft-RoCE device; doctor reports the flap on the compute port.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import netns, vm
from lab.playbooks import ansible_env, parse_recap, tool

pytestmark = pytest.mark.vm

REPO = Path(__file__).resolve().parents[2]
HOST = "vm01"
READER = "/root/rocetune_pcie_p2p_boot.py"  # the unit's script, with the module_utils beside it
GPU = vm.Q35_GPU_ID
STAND_IN_UPDATE_GRUB = """#!/bin/sh
# lab stand-in: QEMU boots this VM's kernel directly (no GRUB); record the run and what it read
cat /etc/default/grub.d/*.cfg > /run/update-grub-ran
echo "Generating grub configuration file ..."
"""
TIMINGS: dict = {}


def sh(cmd: str, **kw) -> str:
    return vm.run_on(HOST, cmd, **kw).stdout


PORTS: list = []


def ports() -> list:
    """The root ports above the stand-in GPU and the NICs (PCI class 02), read from sysfs once."""
    if not PORTS:
        gpu = "0x" + GPU.replace(":", ":0x")
        out = sh("for d in /sys/bus/pci/devices/*; do "
                 f"if [ \"$(cat $d/vendor):$(cat $d/device)\" = {gpu} ] || grep -q '^0x02' $d/class; then "
                 "basename \"$(dirname \"$(readlink -f $d)\")\"; fi; done | sort -u")
        PORTS.extend(p for p in out.split() if p.count(":") == 2 and "." in p)
    return PORTS


def acs_check() -> dict:
    """bridge -> the reader's line for it (read only)."""
    out = sh(f"python3 {READER} --check --scope none " + " ".join(f"--device {p}" for p in ports()))
    return {ln.split(": ", 1)[0]: ln.split(": ", 1)[1] for ln in out.splitlines() if ": ACS " in ln}


def playbook(*args: str):
    argv = [tool("ansible-playbook"), "-i", str(netns.VM_INVENTORY), "playbooks/pcie_p2p.yml",
            "-e", json.dumps({"pcie_p2p_acs_scope": "none", "pcie_p2p_acs_devices": ports(),
                              "pcie_p2p_boot_loader": "update-grub"}), *args]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, env=ansible_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    return proc, parse_recap(proc.stdout), time.monotonic() - started


def doctor() -> list:
    out = sh("python3 /root/rocetune.pyz doctor --json", check=False, timeout=300)
    return json.loads(out)["data"]["findings"]


@pytest.fixture(scope="module")
def q35(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the VM lab needs root")
    started = time.monotonic()
    info = vm.up(1, machine="q35")
    TIMINGS["boot"] = round(time.monotonic() - started)
    try:
        vm.copy_to(HOST, REPO / "plugins" / "module_utils" / "rocetune_pcie_p2p.py", "/root")
        vm.copy_to(HOST, REPO / "roles" / "pcie_p2p" / "files" / "rocetune_pcie_p2p_boot.py", "/root")
        agent = tmp_path_factory.mktemp("agent")
        packed = json.loads(subprocess.run(
            [sys.executable, "-m", "rocetune.agentpack", "--out-dir", str(agent / "build"), "--python",
             "/usr/bin/python3"], env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.PIPE, check=True, text=True).stdout)
        shutil.copy(packed["path"], agent / "rocetune.pyz")
        vm.copy_to(HOST, agent / "rocetune.pyz", "/root")
        vm.run_on(HOST, "cat > /usr/local/sbin/update-grub && chmod 755 /usr/local/sbin/update-grub",
                  input=STAND_IN_UPDATE_GRUB)
        yield info
    finally:
        vm.down()
        print(f"pcie_p2p VM timings (s): {TIMINGS}")


def test_the_kernel_turns_acs_redirect_on_at_the_root_ports_between_gpu_and_nics(q35):
    before = acs_check()
    assert len(before) == 3, before  # the stand-in GPU's port and both rails' ports
    assert all("would clear (SrcValid+ TransBlk- ReqRedir+ CmpltRedir+" in line for line in before.values()), before
    TIMINGS["ports"] = sorted(before)


def test_the_role_clears_it_now_and_marks_iommu_pt_for_the_next_boot(q35):
    proc, recap, took = playbook()
    assert proc.returncode == 0 and recap[HOST]["failed"] == 0, proc.stdout[-4000:]
    assert recap[HOST]["changed"] >= 3, proc.stdout[-4000:]
    TIMINGS["role"] = round(took)
    assert all("already clear" in line and "ReqRedir- CmpltRedir-" in line for line in acs_check().values())
    assert sh("systemctl is-enabled rocetune-pcie-p2p.service").strip() == "enabled"
    assert sh("cat /run/update-grub-ran").strip().endswith('GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} iommu=pt"')
    assert "System restart required" in sh("cat /run/reboot-required")
    assert "iommu=pt takes effect at the next reboot" in proc.stdout
    started = time.monotonic()
    found = doctor()
    TIMINGS["doctor"] = round(time.monotonic() - started)
    ids = {f["id"] for f in found}
    assert "doctor-pcie-p2p-iommu" in ids, found
    assert not [f for f in found if f["id"] == "doctor-acs-redirect"], found  # read as root: no "not checked"


def test_a_rerun_and_a_check_diff_run_on_the_converged_node_change_nothing(q35):
    grub_ran = sh("stat -c %Y /run/update-grub-ran")
    proc, recap, took = playbook()
    assert proc.returncode == 0 and recap[HOST]["failed"] == 0, proc.stdout[-4000:]
    assert recap[HOST]["changed"] == 0, proc.stdout[-4000:]
    TIMINGS["rerun"] = round(took)
    proc, recap, took = playbook("--check", "--diff")
    assert proc.returncode == 0 and recap[HOST]["failed"] == 0, proc.stdout[-4000:]
    assert recap[HOST]["changed"] == 0, proc.stdout[-4000:]
    assert "ACSCtl:" not in proc.stdout and "GRUB_CMDLINE_LINUX" not in proc.stdout, proc.stdout[-4000:]
    TIMINGS["check_diff"] = round(took)
    assert sh("stat -c %Y /run/update-grub-ran") == grub_ran  # the boot loader was not run again
    assert all("already clear" in line for line in acs_check().values())


def test_after_a_reboot_the_unit_clears_it_again_and_doctor_sees_it_put_back(q35):
    TIMINGS["reboot"] = round(vm.reboot(HOST))
    state = dict(ln.split("=", 1) for ln in sh(
        "systemctl show rocetune-pcie-p2p.service -p ActiveState -p Result").splitlines() if "=" in ln)
    assert state == {"ActiveState": "active", "Result": "success"}, state
    log = sh("journalctl -b -o cat --no-pager -u rocetune-pcie-p2p.service")
    assert log.count(": ACS cleared (") == 3, log  # the kernel had set it again at boot
    after = acs_check()
    assert all("already clear" in line for line in after.values()), after
    port = sorted(after)[0]
    # put Request Redirect back on one port, as a kernel or a BIOS update would
    sh("python3 -c 'import sys; sys.path.insert(0, \"/root\"); import rocetune_pcie_p2p as p; "
       f"fs = p.Sysfs(); off = p.acs_offset(fs.config(\"{port}\")); "
       f"import struct; v = struct.unpack_from(\"<H\", fs.config(\"{port}\"), off + 6)[0]; "
       f"fs.write_control(\"{port}\", off, v | p.BITS[\"ReqRedir\"])'")
    found = doctor()
    bad = [f for f in found if f["id"] == "doctor-acs-redirect"]
    assert [(f["subject"], f["severity"]) for f in bad] == [(port, "error")], bad  # the other two are clear
    assert not [f for f in found if f["id"] == "doctor-boot-unit-failed"], found


def test_a_rail_losing_carrier_is_in_the_kernel_log_and_doctor_reports_the_flap(q35):
    sh("dmesg --clear")
    tap = f"rtv{1:02d}f0"
    vm._qmp(HOST, {"execute": "set_link", "arguments": {"name": tap, "up": False}})
    time.sleep(2)
    vm._qmp(HOST, {"execute": "set_link", "arguments": {"name": tap, "up": True}})
    time.sleep(2)
    lines = [ln for ln in sh("dmesg --kernel").splitlines() if "rxe0" in ln or "ens4" in ln]
    print("kernel log after set_link off/on:\n" + "\n".join(lines))
    assert any(ln.rstrip().endswith("infiniband rxe0: set down") for ln in lines), lines
    assert any(ln.rstrip().endswith("infiniband rxe0: set active") for ln in lines), lines
    flap = [f for f in doctor() if f["id"] == "doctor-kernel-link-flap"]
    assert [(f["subject"], f["severity"]) for f in flap] == [("rxe0", "warning")], flap
