"""rocetune on real (software) RDMA: two QEMU VMs with Soft-RoCE devices (lab/vm.py).

Each VM: management NIC ens3 (default route; vm01 also has Soft-RoCE device rxe2 there) and
two fabric rails ens4/ens5 in 198.18.2.0/24 at MTU 9000 with rxe0/rxe1. rocetune runs inside
the VMs from the repository's own source tree, through its command line only. site.yml on the
same VMs (converge, rerun, check, reboot) follows in test_vm_reboot.py.

Soft-RoCE is a software stand-in: these tests prove GID choice, MTUs and RDMA paths end to
end, not speed and not that any RDMA NIC works. Under TCG every figure here is CPU-bound.
"""

from __future__ import annotations

import concurrent.futures
import copy
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from lab import netns, vm, vm_image

pytestmark = pytest.mark.vm

REPO = Path(__file__).resolve().parents[2]
SRC = "/opt/rocetune"  # where the repository's src/ goes inside each VM
FABRIC = {"rxe0": "ens4", "rxe1": "ens5"}


def _json_flag() -> str:
    """The CLI's JSON switch (`--json`; `--output json` in older trees)."""
    proc = subprocess.run([sys.executable, "-m", "rocetune", "probe", "--help"],
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "--json" if "--json" in proc.stdout else "--output json"


@pytest.fixture(scope="module")
def vms(vm2):
    """vm2 with the repository's src/ copied into every VM."""
    for name in vm2.names:
        vm.run_on(name, f"rm -rf {SRC}")
        vm.copy_to(name, REPO / "src", SRC)
    return vm2


def rocetune(host: str, args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`rocetune ARGS` on a VM with the VM's own python3 (stdlib, PyYAML, pyverbs, psutil)."""
    return vm.run_on(host, f"cd / && PYTHONPATH={SRC}/src python3 -m rocetune {args}",
                     check=check)


def probe_and_plan(host: str, out: str = "") -> dict:
    """One `rocetune probe --json --format sh` on a VM (writing the env file `out` there too):
    {'features', 'env': {KEY: value}, 'decisions': {KEY: the decision's JSON}}; a decision has
    key, value, rule_id, reason and evidence."""
    write = f" -o {out}" if out else ""
    data = json.loads(rocetune(host, f"probe {_json_flag()} --format sh{write}").stdout)["data"]
    decisions = {d["key"]: d for d in data["plan"]["decisions"]}
    env = {key: d["value"] for key, d in decisions.items()}
    return {"features": data["features"], "env": env, "decisions": decisions}


def probe(host: str) -> dict:
    return probe_and_plan(host)["features"]


ENV_FILE = "/tmp/rocetune.env"  # what the job scripts source on each VM


@pytest.fixture(scope="module")
def probed(vms):
    """probe_and_plan of every VM, once (a probe costs seconds of emulated CPU under TCG); the
    same run writes each VM's env file (ENV_FILE) for the jobs."""
    with concurrent.futures.ThreadPoolExecutor(len(vms.names)) as pool:
        plans = pool.map(lambda name: probe_and_plan(name, out=ENV_FILE), vms.names)
        return dict(zip(vms.names, plans))


def ports(features: dict) -> dict:
    """{device: its port 1} from Features.rdma."""
    return {d["name"]: d["ports"][0] for d in features["rdma"]["devices"]}


def verbs_ports(features: dict) -> dict:
    return {d["name"]: d["ports"][0] for d in features["verbs"]["devices"]}


# ---------------------------------------------------------------------------------------------
# Faults first (they need the VM tier to themselves; vm2 comes up after them)


def test_a_vm_that_does_not_boot_fails_fast_with_its_console_tail(monkeypatch):
    """A guest whose kernel cannot mount its root: `up` says so quickly, quoting the console,
    and leaves nothing behind."""
    netns._require_root()
    real = vm.qemu_argv

    def broken(info, img, i, name):
        argv = real(info, img, i, name)
        at = argv.index("-append") + 1
        argv[at] += " rdinit=/rtvlab-missing-init"  # no initramfs: no disk driver, no root
        return argv

    monkeypatch.setattr(vm, "qemu_argv", broken)
    with pytest.raises(netns.LabError) as err:
        vm.up(1, timeout=240)
    message = str(err.value)
    assert message.startswith("vm01 did not come up under "), message
    # Failing fast: the end of QEMU was noticed, not the 240 s limit waited out (timings on a
    # shared machine prove nothing; the image build before the boot may take minutes).
    assert "QEMU exited before the VM answered ssh" in message and "timed out" not in message
    assert "console tail:" in message and "Unable to mount root fs" in message, message
    assert leftovers() == []


def test_down_cleans_up_after_a_killed_up():
    """`up` killed while its VM boots leaves QEMU, taps and bridges; `down` removes them all."""
    netns._require_root()
    proc = subprocess.Popen([sys.executable, "-m", "lab", "up", "1", "--vm"], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while not (vm.STATE_DIR / "vm01" / "qemu.pid").exists():  # written once QEMU runs
            assert proc.poll() is None and time.monotonic() < deadline, "no VM was started"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    left = leftovers()
    assert any(item.startswith("process") for item in left), left
    assert "link rtvctl0" in left and "netns rtvlab-net" in left, left
    vm.down()
    assert leftovers() == []


def leftovers() -> list:
    """Everything of the VM tier still on the machine (should be empty after `down`)."""
    left = []
    for pid in vm._vm_pids():
        if netns._alive(pid):
            left.append(f"process {pid} {' '.join(vm._cmdline(pid))[:80]}")
    links = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE, text=True).stdout
    names = [ln.split(":")[1].strip().split("@")[0] for ln in links.splitlines()]
    left += [f"link {name}" for name in names if name.startswith("rtv")]
    spaces = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    left += [f"netns {ln.split()[0]}" for ln in spaces.splitlines() if ln.startswith("rtvlab")]
    with open("/proc/mounts") as fh:
        left += [f"mount {ln.split()[1]}" for ln in fh
                 if "rtvlab" in ln or str(vm.STATE_DIR) in ln]
    for path in (vm.STATE_DIR, netns.VM_INVENTORY):
        if path.exists():
            left.append(f"file {path}")
    return left


# ---------------------------------------------------------------------------------------------
# The VMs


def test_vms_are_shaped_like_gpu_nodes(vms):
    """Strict-host-key ssh, management NIC with the default route, two rails with rxe devices."""
    print(f"accelerator: {vms.accel} ({vms.accel_reason}); boot seconds: {vms.boot_seconds}")
    for i, name in enumerate(vms.names, start=1):
        assert "StrictHostKeyChecking=yes" in vms.ssh_command(name)
        out = vm.run_on(name, "hostname; ip -j addr; ip -j route; rdma -j link show").stdout
        hostname, addr, route, rdma = out.split("\n", 3)
        assert hostname == name
        by_if = {a["ifname"]: a for a in json.loads(addr)}
        v4 = {k: [x["local"] for x in a["addr_info"] if x["family"] == "inet"]
              for k, a in by_if.items()}
        assert v4["ens3"] == [vm.mgmt_ip(i)] and by_if["ens3"]["mtu"] == 1500
        assert v4["ens4"] == [vm.fabric_ip(i, 0)] and by_if["ens4"]["mtu"] == 9000
        assert v4["ens5"] == [vm.fabric_ip(i, 1)] and by_if["ens5"]["mtu"] == 9000
        default = [r for r in json.loads(route) if r["dst"] == "default"]
        assert [(r["gateway"], r["dev"]) for r in default] == [(vms.controller_ip, "ens3")]
        links = {lk["ifname"]: lk["netdev"] for lk in json.loads(rdma)}
        assert links == dict(vm.softroce_links(name))
    # Nothing leaves the lab: the controller does not forward for the VMs.
    assert Path(f"/proc/sys/net/ipv4/conf/{vm.CONTROLLER_IF}/forwarding").read_text() == "0\n"


def test_inventory_has_the_vm_group(vms):
    """The controller's inventories name the VMs (test_vm_reboot.py runs site.yml over them)."""
    inventory = netns.INVENTORY.read_text()
    assert "    vm:\n" in inventory and "vm01:" in inventory
    only_vms = netns.VM_INVENTORY.read_text()
    assert "gpu_nodes:\n      children:\n        vm:" in only_vms
    assert sorted(re.findall(r"^ +(vm\d\d):$", only_vms, re.M)) == vms.names


def test_apt_in_a_vm_installs_from_the_controllers_repository(vms):
    """Offline: the only apt source is the image's own packages, served on the lab network."""
    apt = "apt-get -q -o Acquire::Languages=none"
    out = vm.run_on("vm02", f"{apt} update 2>&1 && {apt} install -y --reinstall "
                            "--no-install-recommends rdmacm-utils 2>&1").stdout
    assert re.search(r"^Get:\d+ http://198\.18\.1\.1:8088 \./ Packages ", out, re.M), out
    assert re.search(r"^Get:\d+ http://198\.18\.1\.1:8088 \./ rdmacm-utils ", out, re.M), out
    assert "1 reinstalled" in out, out
    # apt asks for Packages.xz, .gz, ... first; the flat repository has the plain file only.
    assert not re.search(r"^[EW]: ", out, re.M), out


def test_softroce_script_is_idempotent_and_labelled(vms):
    out = vm.run_on("vm02", "rocetune-softroce up rxe0=ens4 rxe1=ens5").stdout
    assert out.splitlines() == ["rocetune-softroce: rxe0 on ens4: already there",
                                "rocetune-softroce: rxe1 on ens5: already there"]
    bad = vm.run_on("vm02", "rocetune-softroce up rxe9=nosuchnic", check=False)
    assert bad.returncode == 1
    assert bad.stderr.strip() == "rocetune-softroce: error: nosuchnic: no such network interface"
    assert "SOFTWARE STAND-IN" in (REPO / "lab/softroce.sh").read_text()


def test_probe_finds_both_fabric_rxe_devices(vms, probed):
    for i, name in enumerate(vms.names, start=1):
        f = probed[name]["features"]
        rdma = ports(f)
        for rail, (dev, netdev) in enumerate(FABRIC.items()):
            port = rdma[dev]
            assert port["netdev"] == netdev, (name, dev)
            assert port["state"] == "ACTIVE" and port["link_layer"] == "Ethernet"
            assert port["netdev_mtu"] == 9000 and port["roce_mtu"] == 4096, (name, dev)
            assert port["roce_v2_ipv4_gids"] == [1], (name, dev)
            gid1 = {g["index"]: g for g in port["gids"]}[1]
            assert (gid1["type"], gid1["ipv4"], gid1["ndev"]) == \
                ("RoCE v2", vm.fabric_ip(i, rail), netdev)
        # pyverbs (the live reader) agrees with sysfs.
        assert f["verbs"]["via"] == "pyverbs"
        assert f["verbs"]["disagreements"] == []
        for dev, port in verbs_ports(f).items():
            assert port["active_mtu"] == rdma[dev]["roce_mtu"], (name, dev)
        assert set(verbs_ports(f)) == set(rdma)
        mgmt = [d for d, p in rdma.items() if p["netdev"] == "ens3"]
        assert mgmt == ([vm.MGMT_RXE] if name == vm.MGMT_RXE_HOST else [])
        assert f["net"]["default_route_interfaces"] == ["ens3"]


PYVERBS_VS_SYSFS = r"""
import json, pyverbs.device as d
out = {}
for info in d.get_device_list():
    name = info.name.decode()
    with d.Context(name=name) as ctx:
        port = ctx.query_port(1)
        gid = ctx.query_gid(1, 1)
    base = f"/sys/class/infiniband/{name}/ports/1"
    out[name] = {"pyverbs_mtu": int(port.active_mtu), "pyverbs_gid1": str(gid),
                 "sysfs_gid1": open(f"{base}/gids/1").read().strip(),
                 "sysfs_ndev": open(f"{base}/gid_attrs/ndevs/1").read().strip()}
print(json.dumps(out))
"""


def test_pyverbs_agrees_with_sysfs(vms):
    out = json.loads(vm.run_on("vm01", "python3 -", input=PYVERBS_VS_SYSFS).stdout)
    assert sorted(out) == ["rxe0", "rxe1", "rxe2"]
    for dev, seen in out.items():
        assert seen["pyverbs_gid1"] == seen["sysfs_gid1"], dev
    # IBV_MTU_4096 is 5 on the rails (MTU 9000), IBV_MTU_1024 is 3 on the management NIC.
    assert {d: s["pyverbs_mtu"] for d, s in out.items()} == {"rxe0": 5, "rxe1": 5, "rxe2": 3}
    assert {d: s["sysfs_ndev"] for d, s in out.items()} == \
        {"rxe0": "ens4", "rxe1": "ens5", "rxe2": "ens3"}


def test_probe_plans_the_fabric_rxe_devices_for_nccl(vms, probed):
    """Both rails in NCCL_IB_HCA and UCX_NET_DEVICES; the management rxe stays out."""
    for name in vms.names:
        env = probed[name]["env"]
        assert "NCCL_IB_DISABLE" not in env, (name, env)
        assert env["NCCL_IB_HCA"] == "=rxe0:1,rxe1:1", name
        assert env["NCCL_IB_GID_INDEX"] == "1", name
        assert env["UCX_NET_DEVICES"] == "rxe0:1,rxe1:1", name
        assert env["NCCL_SOCKET_IFNAME"] == "=ens3", name
        # ens3 for the reason docs/rules/socket-ifname.md gives for a host with compute RDMA
        # ports: it carries the default route (not, say, because it sorts first).
        socket = probed[name]["decisions"]["NCCL_SOCKET_IFNAME"]
        assert socket["rule_id"] == "socket-ifname", socket
        assert socket["reason"].startswith(
            "ens3 carries the default route: the network every node reaches"), socket["reason"]
        assert socket["evidence"]["default_route"] is True, socket["evidence"]
        assert socket["evidence"]["candidates"] == ["ens3", "ens4", "ens5"], socket["evidence"]
        for key in ("GLOO_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include"):
            assert probed[name]["decisions"][key]["rule_id"] == "socket-ifname", (name, key)


def test_capture_replays_to_the_same_features(vms, probed, tmp_path):
    rocetune("vm01", "capture -o /tmp/vm01.tar.gz")
    live = copy.deepcopy(probed["vm01"]["features"])
    vm.copy_from("vm01", "/tmp/vm01.tar.gz", tmp_path / "vm01.tar.gz")
    root = tmp_path / "root"
    root.mkdir()
    with tarfile.open(tmp_path / "vm01.tar.gz") as tar:
        tar.extractall(root)  # noqa: S202 - our own capture
    proc = subprocess.run(f"{sys.executable} -m rocetune probe --root {root} {_json_flag()}",
                          shell=True, env={"PYTHONPATH": str(REPO / "src"),
                                           "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    replay = json.loads(proc.stdout)["data"]["features"]
    assert replay["verbs"].pop("via") == "ibv_devinfo"
    assert live["verbs"].pop("via") == "pyverbs"
    for key in sorted(set(live) | set(replay)):
        assert replay.get(key) == live.get(key), key


# ---------------------------------------------------------------------------------------------
# RDMA between the VMs


def ib_write_bw(server_gid: int, client_gid: int, dev: str = "rxe0") -> tuple:
    """ib_write_bw vm02 (server) <- vm01; returns (server, client) CompletedProcess."""
    args = f"ib_write_bw -d {dev} -s 65536 -n 200 -F --report_gbits"
    result = {}

    def serve():
        result["server"] = vm.run_on("vm02", f"timeout 60 {args} -x {server_gid}", check=False,
                                     timeout=90)

    thread = threading.Thread(target=serve)
    thread.start()
    time.sleep(3)  # the server listens on TCP 18515 for the out-of-band exchange
    server_ip = vm.fabric_ip(2, list(FABRIC).index(dev))
    client = vm.run_on("vm01", f"timeout 60 {args} -x {client_gid} {server_ip}", check=False,
                       timeout=90)
    thread.join()
    return result["server"], client


def bw_average(out: str) -> float:
    row = re.search(r"^\s*65536\s+200\s+([\d.]+)\s+([\d.]+)", out, re.M)
    assert row, out
    return float(row.group(2))


def test_ib_write_bw_with_the_device_and_gid_that_rocetune_names(vms, probed):
    env = probed["vm01"]["env"]
    dev = env["NCCL_IB_HCA"].lstrip("=").split(",")[0].split(":")[0]
    gid = int(env["NCCL_IB_GID_INDEX"])
    assert (dev, gid) == ("rxe0", 1)
    server, client = ib_write_bw(gid, gid, dev)
    assert client.returncode == 0, client.stdout + client.stderr
    assert server.returncode == 0, server.stdout + server.stderr
    assert "GID index       : 1" in client.stdout and "Mtu             : 4096[B]" in client.stdout
    # The remote GID is vm02's IPv4 address on rail 0: the RoCE v2 path over the fabric.
    assert "GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:02:12" in client.stdout
    print(f"ib_write_bw {dev} GID {gid}: {bw_average(client.stdout)} Gb/s average "
          f"({vms.accel}: a path check, not a speed figure)")


def fleet_validate(vms, tmp: Path, *args: str) -> tuple:
    """`rocetune fleet validate` from the controller to both VMs over SSH (paramiko, the lab's key
    and known_hosts), rocetune running in the VMs from the copied source tree."""
    out = tmp / "validate.json"
    argv = [sys.executable, "-m", "rocetune", "--json", "fleet", "validate", vms.ip("vm01"), vms.ip("vm02"),
            "--user", "root", "--identity", str(vms.key), "--known-hosts", str(vms.known_hosts),
            "--command", f"cd / && PYTHONPATH={SRC}/src python3 -m rocetune", "--timeout", "240",
            "--seconds", "3", "-o", str(out), *args]
    proc = subprocess.run(argv, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp)},
                          capture_output=True, text=True, timeout=900)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(out.read_text()), tmp


def test_fleet_validate_runs_perftest_on_each_rail_and_iperf3_on_the_socket_path(vms, probed, tmp_path):
    """Real ib_write_bw between the VMs on both rails at once, with the GID index the env names,
    the sender's rail counters counting the bytes; judged against the probed rate of rxe (2.5
    Gb/s, which TCG never reaches: a FAIL that says so), then against a rate the user gives."""
    code, doc, _ = fleet_validate(vms, tmp_path)
    pair = doc["pairs"][0]
    rails = [t for t in pair["tests"] if t["kind"] == "rdma"]
    print("validate:", json.dumps([{k: t.get(k) for k in ("a_port", "measured_gbps", "status", "counters")}
                                   for t in pair["tests"]]))
    assert [(t["a_port"], t["b_port"]) for t in rails] == [("rxe0:1", "rxe0:1"), ("rxe1:1", "rxe1:1")]
    for t in rails:
        assert t["gid_index"] == 1 and t["link_type"] == "Ethernet" and t["measured_gbps"] > 0, t
        assert t["counters"]["ok"] is True, t["counters"]  # the bytes left by this rail's netdev
        assert t["verdict"]["line_rate_gbps"] == 2.5 and t["status"] == "fail" and "below 2.25" in t["why"]
    tcp = next(t for t in pair["tests"] if t["kind"] == "tcp")
    socket_if = probed["vm01"]["env"]["NCCL_SOCKET_IFNAME"].lstrip("=")
    assert tcp["a_if"] == socket_if and tcp["measured_gbps"] > 0, tcp
    assert tcp["status"] == "unjudged"  # virtio-net reports no link speed
    assert code == 1 and not doc["summary"]["passed"]

    code, doc, _ = fleet_validate(vms, tmp_path, "--tests", "rdma", "--line-rate", "0.02", "--mode", "ring")
    assert code == 0 and doc["summary"]["passed"], json.dumps(doc["pairs"])[:3000]
    assert len(doc["pairs"]) == 2  # a ring of two: each way once
    assert {(p["a"], p["b"]) for p in doc["pairs"]} == {(vms.ip("vm01"), vms.ip("vm02")),
                                                        (vms.ip("vm02"), vms.ip("vm01"))}


def test_link_local_gid(vms):
    """GID 0 is fe80::/64 (RoCE v2 over IPv6 link-local).

    On one L2 segment it still connects: link-local GIDs fail only where a router sits between
    the ports, which is why rocetune pins the IPv4 GID. What does break on any fabric is peers
    that disagree: one side on GID 0, the other on the IPv4 GID.
    """
    server, client = ib_write_bw(0, 0)
    assert client.returncode == 0, client.stdout + client.stderr
    assert "GID: 254:128:00:00:00:00:00:00" in client.stdout  # fe80::
    print(f"GID 0 on one L2 segment: {bw_average(client.stdout)} Gb/s average")
    server, client = ib_write_bw(0, 1)
    assert client.returncode != 0 and server.returncode != 0
    assert "Found Incompatibility issue with GID types." in client.stdout + client.stderr
    print("GID 0 vs 1:", " ".join((client.stdout + client.stderr).split("\n")[-4:]))


# ---------------------------------------------------------------------------------------------
# MTU fault


def test_mtu_fault_shows_in_probe_and_in_a_jumbo_ping(vms):
    """vm02's rail 0 at MTU 1500 while its peers stay at 9000.

    virtio-net accepts frames larger than its MTU, unlike a physical NIC, so the lab puts the
    limit where a real 1500-byte host enforces it: the NIC and its switch port (the tap).
    """
    ping = "ping -c 2 -W 2 -M do -s 8972 -I 198.18.2.11 198.18.2.12"
    assert vm.run_on("vm01", ping, check=False).returncode == 0
    vm.run_on("vm02", "ip link set ens4 mtu 1500")
    netns._ip("link", "set", "rtv02f0", "mtu", "1500", netns=vm.NETNS)
    try:
        port = ports(probe("vm02"))["rxe0"]
        assert (port["netdev_mtu"], port["roce_mtu"]) == (1500, 1024)
        failed = vm.run_on("vm01", ping, check=False)
        assert failed.returncode != 0
        assert "100% packet loss" in failed.stdout, failed.stdout
        print("vm02 ens4 at MTU 1500:", failed.stdout.strip().splitlines()[-1])
        local = vm.run_on("vm02", "ping -c 1 -W 2 -M do -s 8972 -I 198.18.2.12 198.18.2.11",
                          check=False)
        assert local.returncode != 0
        assert "message too long, mtu=1500" in local.stdout + local.stderr
    finally:
        netns._ip("link", "set", "rtv02f0", "mtu", str(vm.SWITCH_MTU), netns=vm.NETNS)
        vm.run_on("vm02", "ip link set ens4 mtu 9000")
    assert ports(probe("vm02"))["rxe0"]["roce_mtu"] == 4096
    assert vm.run_on("vm01", ping, check=False).returncode == 0


# ---------------------------------------------------------------------------------------------
# Open MPI across the VMs, from a job script that sources rocetune's env file

ALLREDUCE = """\
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1)
print(f"rank {comm.Get_rank()}/{comm.Get_size()} on {MPI.Get_processor_name()}: sum {total}")
"""

JOB = f"""\
#!/bin/sh
# Allreduce over vm01 and vm02 with the environment rocetune planned on this node.
set -eu
. {ENV_FILE}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec timeout 240 mpirun -H vm01,vm02 -np 2 \\
    --mca oob_tcp_if_include "$OMPI_MCA_btl_tcp_if_include" "$@" python3 /tmp/allreduce.py
"""


@pytest.fixture(scope="module")
def mpi_job(vms, probed):
    for name in vms.names:
        vm.run_on(name, "cat > /tmp/allreduce.py", input=ALLREDUCE)
    vm.run_on("vm01", "cat > /tmp/job.sh && chmod +x /tmp/job.sh", input=JOB)
    env = vm.run_on("vm01", f"cat {ENV_FILE}").stdout
    assert "export OMPI_MCA_btl_tcp_if_include='ens3'" in env
    assert "export UCX_NET_DEVICES='rxe0:1,rxe1:1'" in env
    return "/tmp/job.sh"


def ranks(out: str) -> list:
    return sorted(re.findall(r"^rank (\d)/2 on (vm0\d): sum (\d+)$", out, re.M))


def test_allreduce_across_vms_over_tcp_with_the_rocetune_env(mpi_job):
    """Open MPI's ob1 PML with the TCP BTL on the interface rocetune names: a correct sum."""
    proc = vm.run_on("vm01", f"{mpi_job} --mca pml ob1 --mca btl tcp,self", check=False,
                     timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ranks(proc.stdout) == [("0", "vm01", "3"), ("1", "vm02", "3")]


@pytest.mark.xfail(strict=True, reason="UCX 1.13 (Debian 12) over Soft-RoCE: rc_verbs needs an "
                   "auxiliary wireup transport; without ud_verbs: 'no auxiliary transport ... "
                   "Unsupported operation' then 'ucp_ep_create() failed: Destination is "
                   "unreachable'; with ud_verbs the peer receives the UD wireup packets but "
                   "never answers ('UD endpoint ... unhandled timeout error')")
def test_allreduce_across_vms_over_ucx_rc_verbs(mpi_job):
    """UCX's own log (UCX_LOG_LEVEL=info) says which transport it picked and what failed."""
    proc = vm.run_on("vm01", f"{mpi_job} --mca pml ucx --mca btl ^openib,uct "
                             "-x UCX_NET_DEVICES -x UCX_TLS=rc_verbs,self,tcp "
                             "-x UCX_SOCKADDR_TLS_PRIORITY=rdmacm -x UCX_LOG_LEVEL=info",
                     check=False, timeout=300)
    log = proc.stdout + proc.stderr
    print("\n".join(line for line in log.splitlines() if " UCX " in line or "pml_ucx" in line))
    assert proc.returncode == 0, netns._last_line(log)
    assert ranks(proc.stdout) == [("0", "vm01", "3"), ("1", "vm02", "3")]
    assert re.search(r"ep_cfg\[\d\]: tag\(.*rc_verbs/rxe\d:1", log), log


# ---------------------------------------------------------------------------------------------
# PyTorch's Gloo backend across the VMs: examples/jobs/gloo_allreduce.sh, which sources the env
# file rocetune wrote on each VM, with the controller's CPU torch from a read-only data disk
# (vm_image.ensure_torch_disk: the VMs have no internet and no pip index)

JOBS = "/opt/rocetune-jobs"  # examples/jobs lands in JOBS/jobs, the same path on every VM
GLOO_SIZE_MB, GLOO_WARMUP, GLOO_ITERS = 4, 1, 3


@pytest.fixture(scope="module")
def gloo_job(vms, probed):
    """On each VM: the torch disk mounted and the job scripts copied; the env file is the one
    `rocetune probe -o` wrote there (fixture probed). Returns the fan-out command (run on vm01;
    it ssh-es to vm01 and vm02)."""
    disk = vm_image.ensure_torch_disk()  # `up` built it before the VMs booted; cached
    mount, dev = vm_image.TORCH_MOUNT, f"/dev/disk/by-id/virtio-{vm_image.TORCH_DISK_SERIAL}"

    def prepare(name: str) -> None:
        proc = vm.run_on(name, f"test -b {dev} || exit 3; mkdir -p {mount} && (mountpoint -q "
                               f"{mount} || mount -o ro {dev} {mount}) && rm -rf {JOBS}",
                         check=False)
        if proc.returncode == 3:
            raise netns.LabError(f"{name}: no {dev}: the VMs were started without the torch disk")
        assert proc.returncode == 0, f"{name}: mounting the torch disk: {proc.stderr}"
        vm.copy_to(name, REPO / "examples/jobs", JOBS)

    with concurrent.futures.ThreadPoolExecutor(len(vms.names)) as pool:
        list(pool.map(prepare, vms.names))  # each VM is its own emulated CPU
    print(f"torch {disk.torch_version} disk: {disk.path.stat().st_size >> 20} MiB")
    return (f"{JOBS}/jobs/gloo_allreduce.sh --env {ENV_FILE} --python {mount}/bin/python3 "
            # One process per VM: torchrun's agent would import torch a second time (tens of
            # seconds under TCG) before the rank does.
            f"--launcher python --timeout 400 vm01 vm02 -- --size-mb {GLOO_SIZE_MB} "
            f"--warmup {GLOO_WARMUP} --iters {GLOO_ITERS} --timeout 300")


TX_BYTES = "cd /sys/class/net && for i in ens*; do echo $i $(cat $i/statistics/tx_bytes); done"


def on_each(names: list, cmd: str) -> dict:
    """{VM: stdout of cmd}, all VMs at once (an ssh login alone costs seconds under TCG)."""
    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(lambda name: vm.run_on(name, cmd).stdout, names)))


def tx_bytes(out: str) -> dict:
    """TX_BYTES output -> {interface: bytes sent}."""
    return {name: int(n) for name, n in (line.split() for line in out.splitlines())}


def test_gloo_allreduce_across_vms_on_the_interface_the_env_names(vms, probed, gloo_job):
    """PASS at world=2, with GLOO_SOCKET_IFNAME as sourced from the env file on each VM, and the
    data counted on that interface's byte counters (not only named in the job's output)."""
    seen = on_each(vms.names, f"(set -a; . {ENV_FILE}; echo \"$GLOO_SOCKET_IFNAME\"); {TX_BYTES}")
    chosen = {name: out.split("\n", 1)[0] for name, out in seen.items()}
    before = {name: tx_bytes(out.split("\n", 1)[1]) for name, out in seen.items()}
    for name in vms.names:
        assert chosen[name] == probed[name]["env"]["GLOO_SOCKET_IFNAME"], name
    assert len(set(chosen.values())) == 1, chosen
    iface = chosen["vm01"]
    started = time.monotonic()
    proc = vm.run_on("vm01", gloo_job, check=False, timeout=480)
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("allreduce_check:")), "")
    print(f"{line}\ngloo job wall time {took:.1f}s under {vms.accel}")
    assert proc.returncode == 0, out[-4000:]
    assert " PASS world=2 backend=gloo " in line, out[-4000:]
    assert f" iface={iface} " in line and " hosts=vm01,vm02 " in line, line
    # Each rank sends at least half its buffer per all_reduce; on the other NICs only chatter.
    least = (GLOO_WARMUP + GLOO_ITERS) * (GLOO_SIZE_MB << 20) // 2
    after = on_each(vms.names, TX_BYTES)
    for name in vms.names:
        sent = {nic: n - before[name][nic] for nic, n in tx_bytes(after[name]).items()}
        print(f"{name} bytes sent during the job: {sent}")
        assert sent[iface] >= least, (name, sent)
        assert all(n < least // 4 for nic, n in sent.items() if nic != iface), (name, sent)
