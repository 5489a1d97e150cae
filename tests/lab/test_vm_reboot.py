"""site.yml on the Soft-RoCE VMs: a node that provisions itself, the controller's converge,
rerun and check, then one reboot.

Runs on the VM pair that test_vm.py used (vm2 lasts the session), in this order:

1. vm01 provisions itself: the first-boot bundle (docs/first-boot.md) run with the local
   connection by the image's own Debian ansible-core; meanwhile the controller converges vm02.
2. A controller run over both changes nothing on either node; `--check --diff` over both
   reports changed=0. Each node's env file is what `rocetune env` plans there (the rails in
   NCCL_IB_HCA, not the management NIC), the rails are at MTU 9000, ens3 (Ansible's) at 1500.
3. Before the reboot, roce_net asked to put ens3 (Ansible's interface) at 9000 on vm02 without
   the opt-in: refused, nothing persisted, and after the reboot ens3 is still at 1500.
4. One reboot of both VMs, with vm02's rails given their IPv4 address only after their
   Soft-RoCE device (an IPv6 address before), so its RoCE v2 IPv4 GID moves from index 1 to 2.
   What the roles persisted is back (modules from modules-load.d, MTU 9000 on the rails with
   the lab's own boot script no longer setting it, unlimited memlock for a fresh login); the
   QoS boot unit reported "not supported" on virtio and exited cleanly; rocetune-env.service
   left vm01's env files byte-identical (same mtime) and moved vm02's to
   NCCL_IB_GID_INDEX=2 with one journal line per file; what it wrote is what `rocetune env`,
   the roles' own code path, plans.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab import netns, vm, vm_tier
from lab.playbooks import PlaybookRun, ansible_env, parse_env_file, parse_recap, tool

pytestmark = pytest.mark.vm

REPO = Path(__file__).resolve().parents[2]
ENV_FILE = "/etc/rocetune/nccl.env"
NCCL_CONF = "/etc/nccl.conf"
SELF = "vm01"  # provisions itself
MOVED = "vm02"  # its IPv4 GIDs move
BUNDLE = "/opt/rocetune-first-boot"
TIMINGS: dict = {}

# The lab VM's own boot script sets every NIC's MTU from its seed; without that, a rail's 9000
# after a reboot can only come from what the roce_net role persisted.
SEED_WITHOUT_MTU = r"""sed -i 's/ip link set dev "$name" mtu "$mtu" up/ip link set dev "$name" up/' \
    /usr/local/sbin/rocetune-lab-seed && grep -q 'ip link set dev "$name" up' /usr/local/sbin/rocetune-lab-seed"""

# The rails' IPv4 addresses arrive after their Soft-RoCE devices, an IPv6 address before them
# (as with a late DHCP lease): the kernel fills the GID table in that order, so the IPv4 RoCE v2
# GID takes index 2 instead of 1 (NCCL #1333, #2157 describe this after a reboot or port flap).
IPV4_LATE = r"""#!/bin/sh
# rocetune lab: rails' IPv4 after their Soft-RoCE device (pre: remove it, add IPv6; post: back)
set -eu
table=100
while read -r name mac mtu addr net; do
    case "$name" in ''|'#'*|gateway) continue ;; ens3) continue ;; esac
    table=$((table + 1))
    last=${addr%/*}; last=${last##*.}
    case "$1" in
    pre) ip addr del "$addr" dev "$name" 2>/dev/null || true
         ip -6 addr add "fd00:198:18:2::$last/64" dev "$name" nodad 2>/dev/null || true ;;
    post) ip addr add "$addr" dev "$name"
          ip route replace "$net" dev "$name" src "${addr%/*}" table "$table" ;;
    esac
done < /etc/rocetune-lab/net.conf
"""
IPV4_LATE_DROPIN = """[Service]
ExecStartPre=/usr/local/sbin/rtvlab-ipv4-late pre
ExecStartPost=/usr/local/sbin/rtvlab-ipv4-late post
"""


def site(*args: str, inventory: Path = None) -> PlaybookRun:
    argv = [tool("ansible-playbook"), "-i", str(inventory or netns.VM_INVENTORY), "site.yml", *args]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, env=ansible_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    return PlaybookRun(argv, proc.returncode, proc.stdout, time.monotonic() - start,
                       parse_recap(proc.stdout))


def node_changes(run: PlaybookRun, host: str) -> list:
    """Tasks that changed something on the node itself (not the controller-side ones)."""
    return [ln for ln in run.output.splitlines() if re.match(rf"^changed: \[{host}\]", ln)]


def sh(host: str, cmd: str, **kw) -> str:
    return vm.run_on(host, cmd, **kw).stdout


def snapshot(host: str) -> dict:
    """The env files' bytes and mtimes on a node."""
    out = sh(host, f"for f in {ENV_FILE} {NCCL_CONF}; do stat -c '%n %Y' $f; done; "
                   f"sha256sum {ENV_FILE} {NCCL_CONF}")
    return {"lines": out.splitlines(), "env": sh(host, f"cat {ENV_FILE}"),
            "conf": sh(host, f"cat {NCCL_CONF}")}


def unit_log(host: str, unit: str) -> list:
    return sh(host, f"journalctl -b -o cat --no-pager -u {unit}").splitlines()


def unit_state(host: str, unit: str) -> dict:
    out = sh(host, f"systemctl show {unit} -p ActiveState -p Result -p ExecMainStatus")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def reboot_both() -> dict:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(vm.reboot, name) for name in (SELF, MOVED)}
        return {name: round(f.result(), 1) for name, f in futures.items()}


# ---------------------------------------------------------------------------------------------
# 1. Converge: vm01 by itself (local connection), vm02 from the controller; rerun; check


def make_bundle(tmp: Path, vms) -> Path:
    """The first-boot bundle of docs/first-boot.md for vm01: the playbook and roles, the
    agent packed on the controller, and an inventory of the node itself."""
    bundle = tmp / "rocetune-first-boot"
    bundle.mkdir()
    galaxy = str(Path(sys.executable).parent / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--output-path", str(tmp), str(REPO)],
                   check=True, cwd=tmp, stdout=subprocess.DEVNULL)
    tarball = next(tmp.glob("rocetune-fabric-*.tar.gz"))
    subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(bundle / "collections")],
                   check=True, cwd=tmp, stdout=subprocess.DEVNULL)
    (bundle / "site.yml").write_text("- name: Bring this node onto the tuned fabric\n"
                                     "  ansible.builtin.import_playbook: rocetune.fabric.site\n")
    packed = json.loads(subprocess.run(
        [sys.executable, "-m", "rocetune.agentpack", "--out-dir", str(tmp / "agent"),
         "--python", "/usr/bin/python3"], env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, check=True, text=True).stdout)
    shutil.copy(packed["path"], bundle / "rocetune.pyz")
    shutil.copytree(REPO / "inventories/lab/group_vars", bundle / "inventory/group_vars")
    lab_vars = [ln.strip() for ln in vm_tier.inventory_lines(vms)
                if re.match(r"\s+rocetune_lab_(interface|fabric_interfaces|systemd|vm|controller_ip)\b", ln)]
    fabric = json.dumps(vms.fabric[SELF])
    (bundle / "inventory/hosts.yml").write_text(
        "# This node, provisioning itself (docs/first-boot.md)\n"
        "all:\n  children:\n    gpu_nodes:\n      hosts:\n"
        f"        {SELF}:\n"
        "          ansible_connection: local\n"
        "          ansible_python_interpreter: /usr/bin/python3\n"
        f"          rocetune_lab_fabric_ips: {fabric}\n"
        "          rocetune_agent_package: \"{{ inventory_dir }}/../rocetune.pyz\"\n"
        "          rocetune_env_features_dir: /var/lib/rocetune/features\n"
        "      vars:\n" + "".join(f"        {v}\n" for v in lab_vars))
    (bundle / "ansible.cfg").write_text(
        "[defaults]\ninventory = inventory/hosts.yml\ncollections_path = collections\n"
        "interpreter_python = auto_silent\nretry_files_enabled = False\n"
        "internal_poll_interval = 0.05\n")
    return bundle


@pytest.fixture(scope="module")
def converged(vm2, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("first-boot")
    bundle = make_bundle(tmp, vm2)
    vm.run_on(SELF, f"rm -rf {BUNDLE}")
    vm.copy_to(SELF, bundle, str(Path(BUNDLE).parent))
    result = {}

    def provision_self():
        started = time.monotonic()
        result["local"] = (vm.run_on(SELF, f"ansible-playbook --version | head -n 1 && cd {BUNDLE} "
                                           "&& ansible-playbook site.yml 2>&1",
                                     check=False, timeout=1200), time.monotonic() - started)

    thread = threading.Thread(target=provision_self)
    thread.start()
    controller = site("--limit", MOVED)
    thread.join()
    both = site()
    check = site("--check", "--diff")
    return {"bundle": bundle, "controller": controller, "both": both, "check": check, **result}


def test_a_node_provisions_itself_with_the_local_connection(converged):
    local, local_s = converged["local"]
    version = local.stdout.split("\n", 1)[0]
    assert version.startswith("ansible-playbook [core 2.14"), local.stdout[:2000]
    recap = parse_recap(local.stdout)
    assert local.returncode == 0 and recap[SELF]["failed"] == 0, local.stdout[-6000:]
    # the converge step: every role that changes the node, in one task
    assert f"changed: [{SELF}]" in local.stdout.split("(the converge step)", 1)[1], local.stdout[-6000:]
    TIMINGS.update(local_converge=round(local_s))
    print(f"{SELF}: {version}; site.yml -c local in {local_s:.0f}s")
    # The env it wrote is what the agent plans there.
    assert sh(SELF, f"cat {ENV_FILE}") == sh(SELF, "rocetune env --format sh")


def test_the_controller_then_changes_nothing_on_either_node(converged):
    controller, both = converged["controller"], converged["both"]
    assert controller.rc == 0, controller.explain()
    assert both.rc == 0 and both.recap[MOVED]["changed"] == 0, both.explain()
    assert node_changes(both, SELF) == [], both.explain()
    # All it may change is on the controller: its first copy of vm01's Features (vm01 kept
    # its own), unless an earlier run left the same one there.
    changed = [ln for ln in both.output.splitlines() if ln.startswith("changed: ")]
    assert set(changed) <= {f"changed: [{SELF} -> localhost]"}, both.explain()
    TIMINGS.update(controller_converge=round(controller.seconds), rerun_both=round(both.seconds))
    print(f"controller: converge {MOVED} {controller.seconds:.0f}s; rerun over both "
          f"{both.seconds:.0f}s, nothing changed on the nodes")


def test_check_mode_is_clean_and_each_node_carries_what_rocetune_plans(converged):
    check = converged["check"]
    assert check.rc == 0 and check.total("changed") == 0, check.explain()
    TIMINGS.update(check_diff=round(check.seconds))
    for name in (SELF, MOVED):
        deployed = sh(name, f"cat {ENV_FILE}")
        assert deployed == sh(name, "rocetune env --format sh"), \
            f"{name}: the env file differs from `rocetune env` there"
        assert "NCCL_IB_HCA='=rxe0:1,rxe1:1'" in deployed, deployed  # not vm01's rxe2 on ens3
        mtus = sh(name, "cat /sys/class/net/ens3/mtu /sys/class/net/ens4/mtu /sys/class/net/ens5/mtu")
        assert mtus.split() == ["1500", "9000", "9000"], (name, mtus)
        assert "rdma_rxe" in sh(name, "cat /etc/modules-load.d/*.conf")


# ---------------------------------------------------------------------------------------------
# 2. One reboot: what was persisted comes back; vm02's IPv4 GID moves


PERSISTED_MTU = ("cat /etc/udev/rules.d/81-rocetune-roce-net.rules; "
                 "ls -l --time-style=+%s /etc/udev/rules.d /etc/systemd/network 2>&1; "
                 "ls -lR --time-style=+%s /etc/systemd/network 2>&1")


def refuse_the_connection_interface() -> dict:
    """roce_net asked to put ens3, the interface Ansible connects through, at MTU 9000 without
    the opt-in: refused before anything is persisted."""
    before = sh(MOVED, PERSISTED_MTU)
    run = site("--limit", MOVED, "--tags", "roce_net_apply",
               "-e", json.dumps({"roce_net_interfaces": ["ens4", "ens5", "ens3"]}))
    return {"run": run, "before": before, "after": sh(MOVED, PERSISTED_MTU)}


@pytest.fixture(scope="module")
def rebooted(converged):
    gid_file = "/sys/class/infiniband/rxe0/ports/1/gids/{}"
    assert sh(MOVED, f"cat {gid_file.format(1)}").strip().endswith(":ffff:c612:020c")
    vm.run_on(MOVED, "cat > /usr/local/sbin/rtvlab-ipv4-late && chmod 0755 /usr/local/sbin/rtvlab-ipv4-late",
              input=IPV4_LATE)
    vm.run_on(MOVED, "mkdir -p /etc/systemd/system/rocetune-softroce.service.d && cat > "
                     "/etc/systemd/system/rocetune-softroce.service.d/50-ipv4-late.conf",
              input=IPV4_LATE_DROPIN)
    before = {"refused": refuse_the_connection_interface()}
    for name in (SELF, MOVED):
        sh(name, SEED_WITHOUT_MTU)
        before[name] = snapshot(name)
    seconds = reboot_both()
    TIMINGS["reboot"] = seconds
    print(f"reboot (both VMs in parallel): {seconds}")
    return before


@pytest.mark.parametrize("name", [SELF, MOVED])
def test_persisted_settings_are_back_after_a_reboot(rebooted, name):
    assert set(sh(name, "cat /etc/modules-load.d/rocetune-rdma.conf").split()) >= \
        {"rdma_rxe", "ib_uverbs", "rdma_ucm"}
    loaded = {ln.split()[0] for ln in sh(name, "cat /proc/modules").splitlines()}
    assert {"rdma_rxe", "ib_uverbs", "rdma_ucm"} <= loaded, sorted(loaded)
    # The lab's boot script no longer sets MTUs: the rails' 9000 is roce_net's udev rule.
    mtus = sh(name, "cat /sys/class/net/ens3/mtu /sys/class/net/ens4/mtu /sys/class/net/ens5/mtu").split()
    assert mtus == ["1500", "9000", "9000"], mtus
    assert sh(name, "ulimit -l").strip() == "unlimited"  # a fresh login, a new sshd
    links = json.loads(sh(name, "rdma -j link show"))
    assert {lk["ifname"]: lk["netdev"] for lk in links} == dict(vm.softroce_links(name))
    assert all(lk["state"] == "ACTIVE" for lk in links), links


@pytest.mark.parametrize("name", [SELF, MOVED])
def test_the_qos_boot_unit_reports_not_supported_and_exits_cleanly(rebooted, name):
    assert unit_state(name, "rocetune-qos.service") == \
        {"ActiveState": "active", "Result": "success", "ExecMainStatus": "0"}
    # It ran after the lab's unit that makes the Soft-RoCE devices (roce_qos_boot_after), not
    # beside it: configfs RDMA-CM writes on a device still being made fail the unit.
    after = sh(name, "systemctl show rocetune-qos.service -p After --value").split()
    assert "rocetune-softroce.service" in after, after
    log = unit_log(name, "rocetune-qos.service")
    for nic in ("ens4", "ens5"):
        assert any(f"DCB is not supported on {nic} (driver virtio_net)" in ln for ln in log), log


def test_the_refused_connection_interface_stays_at_1500_after_the_reboot(rebooted):
    refused = rebooted["refused"]
    run = refused["run"]
    assert run.rc != 0 and run.recap[MOVED]["failed"] == 1, run.explain()
    assert "refusing to change the MTU of ens3 (1500 -> 9000)" in run.output, run.explain()
    assert "roce_net_allow_link_flap: true" in run.output and "nothing was changed" in run.output
    assert refused["after"] == refused["before"], "the refused run persisted something"
    assert 'NAME=="ens3"' not in refused["after"]
    # What the next boot applied is what was persisted: ens3 at 1500, the rails at 9000.
    mtus = sh(MOVED, "cat /sys/class/net/ens3/mtu /sys/class/net/ens4/mtu /sys/class/net/ens5/mtu").split()
    assert mtus == ["1500", "9000", "9000"], mtus


def test_an_unchanged_node_keeps_its_env_files_byte_for_byte(rebooted):
    """vm01 was converged by an ssh session with the 8 MiB memlock default; the unit runs with
    unlimited: the probing process's limit is not a host fact, so nothing is rewritten."""
    assert unit_state(SELF, "rocetune-env.service") == \
        {"ActiveState": "active", "Result": "success", "ExecMainStatus": "0"}
    after = snapshot(SELF)
    assert after == rebooted[SELF]  # same bytes, same mtimes
    log = [ln for ln in unit_log(SELF, "rocetune-env.service") if ln.startswith(("wrote ", "unchanged "))]
    assert [ln.split(" (")[0] for ln in log] == [f"unchanged {ENV_FILE}", f"unchanged {NCCL_CONF}"], log


def test_the_env_follows_a_moved_gid_index_after_a_reboot(rebooted):
    gids = sh(MOVED, "for d in rxe0 rxe1; do cat /sys/class/infiniband/$d/ports/1/gids/2; done").split()
    assert [g[-9:] for g in gids] == ["c612:020c", "c612:0270"], gids  # 198.18.2.12, .112 at 2
    env = parse_env_file(sh(MOVED, f"cat {ENV_FILE}"))
    assert rebooted[MOVED]["env"] != sh(MOVED, f"cat {ENV_FILE}")
    assert env["NCCL_IB_GID_INDEX"] == "2", env
    assert "NCCL_IB_GID_INDEX=2\n" in sh(MOVED, f"cat {NCCL_CONF}")
    log = [ln for ln in unit_log(MOVED, "rocetune-env.service") if ln.startswith(("wrote ", "unchanged "))]
    assert len(log) == 2, log
    for line, path in zip(log, (ENV_FILE, NCCL_CONF)):
        assert line.startswith(f"wrote {path} (") and "NCCL_IB_GID_INDEX 1 -> 2" in line, log
    print("\n".join(log))


def test_the_boot_unit_wrote_what_the_roles_plan(rebooted):
    """The unit and the rocetune_env role run the same `rocetune env` planning: on both nodes
    the files the unit left are what it plans now (a controller rerun would change nothing)."""
    for name in (SELF, MOVED):
        assert sh(name, f"cat {ENV_FILE}") == sh(name, "rocetune env --format sh"), name
    print(f"timings {TIMINGS}")


# ---------------------------------------------------------------------------------------------
# 3. rocetune doctor on the rebooted nodes: clean, then each thing broken is found with its fix


def doctor(host: str) -> tuple:
    proc = vm.run_on(host, "rocetune --json doctor", check=False)
    out = json.loads(proc.stdout)
    return proc.returncode, {(f["id"], f["subject"]): f for f in out["data"]["findings"]}


BREAKS = {
    # name: (host, break, restore, finding, severity)
    "rail-mtu": (SELF, "ip link set ens5 mtu 1500", "ip link set ens5 mtu 9000",
                 ("doctor-rail-mtu-mismatch", "ens5"), "error"),
    "memlock": (SELF, "mv /etc/systemd/system.conf.d/90-rocetune-memlock.conf /root/",
                "mv /root/90-rocetune-memlock.conf /etc/systemd/system.conf.d/",
                ("doctor-memlock-services", "host"), "warning"),
    "rdma_rxe-unloaded": (SELF, "for d in $(rdma -j link show | python3 -c 'import json,sys; "
                                "print(\" \".join(l[\"ifname\"] for l in json.load(sys.stdin)))'); "
                                "do rdma link delete $d; done; modprobe -r rdma_rxe",
                          "systemctl restart rocetune-softroce.service",
                          ("doctor-module-not-loaded", "rdma_rxe"), "error"),
    "env-edited": (SELF, f"cp {ENV_FILE} /root/env.bak && sed -i \"s/NCCL_IB_TIMEOUT='20'/NCCL_IB_TIMEOUT='14'/\" {ENV_FILE}",
                   f"cp /root/env.bak {ENV_FILE}", ("doctor-env-drift", ENV_FILE), "warning"),
    "qos-unit-failed": (SELF, "mkdir -p /run/systemd/system/rocetune-qos.service.d && printf "
                              "'[Service]\\nExecStart=\\nExecStart=/bin/false\\n' > "
                              "/run/systemd/system/rocetune-qos.service.d/zz-broken.conf && "
                              "systemctl daemon-reload && (systemctl restart rocetune-qos.service || true)",
                        "rm -r /run/systemd/system/rocetune-qos.service.d && systemctl daemon-reload && "
                        "systemctl restart rocetune-qos.service",
                        ("doctor-boot-unit-failed", "rocetune-qos.service"), "error"),
}


def test_doctor_finds_nothing_wrong_on_the_tuned_nodes(rebooted):
    for name in (SELF, MOVED):
        code, found = doctor(name)
        failures = {k: f["message"] for k, f in found.items() if f["severity"] == "error"}
        assert code in (0, 5) and not failures, (name, failures)


def test_both_gathering_paths_see_the_tuned_vms_alike(rebooted, tmp_path):
    """The collection's fleet play and `rocetune fleet gather --inventory` (paramiko, the VMs'
    own known_hosts) on the two tuned VMs: every VM gathered, and one report from either."""
    play_dir, gather_dir = tmp_path / "play", tmp_path / "gather"
    play = subprocess.run([tool("ansible-playbook"), "-i", str(netns.VM_INVENTORY), "playbooks/fleet.yml",
                           "-e", json.dumps({"rocetune_fleet_dir": str(play_dir)})],
                          cwd=REPO, env=ansible_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900)
    assert play.returncode == 0, play.stdout[-3000:]
    gather = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "gather", "--inventory",
                             str(netns.VM_INVENTORY), "-o", str(gather_dir), "--known-hosts",
                             str(vm.current().known_hosts), "--timeout", "300"],
                            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                            capture_output=True, text=True, timeout=900)
    assert gather.returncode == 0, gather.stdout[-2000:] + gather.stderr[-2000:]
    reports = []
    for directory in (play_dir, gather_dir):
        proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "report", str(directory)],
                              env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.PIPE, text=True)
        data = json.loads(proc.stdout)["data"]
        reports.append((proc.returncode, {h["host"]: (h["status"], sorted(h.get("differs") or []))
                                          for h in data["hosts"]}, data["facts"]["hca.names"]))
    print("fleet report on the VMs (play, gather):", reports)
    assert reports[0] == reports[1]
    code, hosts, hca = reports[0]
    assert sorted(hosts) == [SELF, MOVED] and all(status != "failed" for status, _ in hosts.values())
    assert hca["reference"] == ["rxe0:1", "rxe1:1"]  # the mgmt NIC's rxe2 on vm01 is not a compute port


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_doctor_finds_each_thing_broken_with_its_fix(rebooted, case):
    host, breaking, restore, key, severity = BREAKS[case]
    sh(host, breaking)
    try:
        code, found = doctor(host)
    finally:
        sh(host, restore)
    assert key in found, (case, sorted(found))
    assert found[key]["severity"] == severity and found[key]["fix"], found[key]
    assert code == (1 if severity == "error" else 5) or (severity == "warning" and code == 1), (case, code)
    code, found = doctor(host)
    assert key not in found or found[key]["severity"] == "info", (case, found.get(key))


def test_doctor_names_a_gid_index_that_moved_under_a_stale_env(rebooted):
    """vm02's env from before the reboot (GID index 1) put back: the node's IPv4 GID is at 2."""
    sh(MOVED, f"cp {ENV_FILE} /root/env.now")
    vm.run_on(MOVED, f"cat > {ENV_FILE}", input=rebooted[MOVED]["env"])
    try:
        code, found = doctor(MOVED)
    finally:
        sh(MOVED, f"cp /root/env.now {ENV_FILE}")
    drift = found[("doctor-env-drift", ENV_FILE)]
    assert "NCCL_IB_GID_INDEX 1 -> 2" in drift["message"], drift


def test_a_lost_rail_fails_the_boot_unit_which_keeps_the_last_good_env(rebooted):
    """vm01's Soft-RoCE rail rxe1 is gone when rocetune-env.service runs again (as at a boot):
    the unit refuses the seven-rail plan -- here one rail of two -- fails visibly with the reason
    in its journal, leaves the env files byte for byte, and doctor reports both the failed unit
    and the refusal; repaired, the unit succeeds and the record is gone."""
    before = snapshot(SELF)
    assert "NCCL_IB_HCA='=rxe0:1,rxe1:1'" in before["env"]
    sh(SELF, "rdma link delete rxe1")
    try:
        sh(SELF, "systemctl restart rocetune-env.service || true")
        state = unit_state(SELF, "rocetune-env.service")
        log = unit_log(SELF, "rocetune-env.service")
        after = snapshot(SELF)
        code, found = doctor(SELF)
    finally:
        sh(SELF, "systemctl restart rocetune-softroce.service && systemctl restart rocetune-env.service")
    assert state["ActiveState"] == "failed" and state["Result"] == "exit-code", state
    assert any(f"refused to replace the env: {ENV_FILE}: NCCL_IB_HCA would lose rxe1:1 (2 -> 1 RDMA ports)" in ln
               for ln in log), log
    assert after == before  # same bytes, same mtimes: the last good env stays
    assert code == 1
    ids = {k[0] for k, f in found.items() if f["severity"] == "error"}
    assert {"doctor-boot-unit-failed", "doctor-env-refused", "doctor-env-names-missing-device"} <= ids, ids
    assert unit_state(SELF, "rocetune-env.service") == \
        {"ActiveState": "active", "Result": "success", "ExecMainStatus": "0"}
    assert sh(SELF, "test -e /var/lib/rocetune/env-refused.json && echo kept || echo gone").strip() == "gone"
    code, found = doctor(SELF)
    assert not any(k[0] in ("doctor-env-refused", "doctor-boot-unit-failed") for k in found), sorted(found)
