"""The probe over every fixture host: the pairings a cluster engineer expects, hwloc agreement,
determinism, and bad input that degrades to warnings."""

import os
import shutil

import pytest

from rocetune.checks import host_findings
from tests.fixtures.hwloc_view import hwloc_available, hwloc_pci_view
from tests.fixtures.roots import all_hosts, root_of
from tests.integration.clirun import features_of, no_traceback, rocetune, rocetune_json

HOSTS = all_hosts()


def root(host):
    return root_of(host)


@pytest.fixture(scope="module")
def features():
    cache = {}

    def get(host):
        if host not in cache:
            cache[host] = features_of(root(host))
        return cache[host]
    return get


def nearest(f, gpu):
    g = f["gpus"][gpu]
    return g["nearest_nics"][0]["path"] if g["nearest_nics"] else None, sorted(
        {n["device"] for n in g["nearest_nics"]})


# GPU index -> (path, nearest RDMA devices). From corpus/SOURCES.md "Expect:" lines and the
# public port tables the fixtures model (see each PROVENANCE.md).
EXPECT_NEAREST = {
    "dgx-h100-roce": {i: ("PIX", [d]) for i, d in enumerate(
        ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"])},
    "oci-a100-v2": {0: ("PXB", ["mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8"]),
                    1: ("PXB", ["mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8"]),
                    2: ("PXB", ["mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4"]),
                    4: ("PXB", ["mlx5_14", "mlx5_15", "mlx5_16", "mlx5_17"]),
                    6: ("PXB", ["mlx5_10", "mlx5_11", "mlx5_12", "mlx5_9"])},
    "hgx-h100-ib": {i: ("PIX", [f"mlx5_ib{i}"]) for i in range(8)},
    "container-partial-gid": {0: ("PIX", ["mlx5_13", "mlx5_4"]), 1: ("PIX", ["mlx5_14", "mlx5_6"]),
                              2: ("PIX", ["mlx5_15", "mlx5_7"]), 3: ("PIX", ["mlx5_16", "mlx5_8"])},
    "pcie-4gpu-2nic": {0: ("NODE", ["mlx5_0", "mlx5_1"]), 1: ("NODE", ["mlx5_0", "mlx5_1"]),
                       2: ("NODE", ["mlx5_2", "mlx5_3"]), 3: ("NODE", ["mlx5_2", "mlx5_3"])},
    "hgx-h100-nvlink-nonic": {i: (None, []) for i in range(8)},
}


@pytest.mark.parametrize("host", sorted(EXPECT_NEAREST))
def test_each_gpu_pairs_with_the_nics_the_real_machine_has(host, features):
    f = features(host)
    for gpu, expected in EXPECT_NEAREST[host].items():
        assert nearest(f, gpu) == expected, f"{host} GPU{gpu}"


@pytest.mark.parametrize("host", HOSTS)
def test_probe_is_clean_and_deterministic(host, features):
    f = features(host)
    assert f["topology"]["disagreements"] == []
    assert all(g["bdf"] for g in f["gpus"]), "every GPU matched to its PCI device"
    first = rocetune("--json", "probe", "--root", root(host)).stdout
    assert first == rocetune("--json", "probe", "--root", root(host)).stdout


def test_nvidia_smi_and_sysfs_agree_on_every_pair_of_the_oci_host(features):
    pairs = features("oci-a100-v2")["topology"]["gpu_nic"]
    assert len(pairs) == 8 * 18
    assert all(p["sysfs"] == p["nvidia_smi"] for p in pairs)
    front = {p["nic"] for p in pairs if p["nic"] in ("mlx5_0", "mlx5_13")}
    assert front == {"mlx5_0", "mlx5_13"}
    assert all(p["path"] == "SYS" for p in pairs if p["nic"] in front)


def test_nvlink_counts_come_from_the_matrix(features):
    f = features("hgx-h100-nvlink-nonic")
    assert all(g["nvlink"] == {str(j): 18 for j in range(8) if j != g["index"]} for g in f["gpus"])
    assert f["rdma"]["devices"] == []


def test_infiniband_ports_have_no_roce_gids_and_no_roce_mtu(features):
    ports = [p for d in features("hgx-h100-ib")["rdma"]["devices"] if d["name"].startswith("mlx5_ib")
             for p in d["ports"]]
    assert len(ports) == 8
    assert all(p["link_layer"] == "InfiniBand" and p["roce_mtu"] is None and not p["roce_v2_ipv4_gids"]
               for p in ports)


def test_flattened_vm_is_recognised(features):
    v = features("azure-vm-flat")["host"]["virtualization"]
    assert v["flattened"] and v["hypervisor"] == "Hyper-V"
    assert not features("dgx-h100-roce")["host"]["virtualization"]["flattened"]
    assert "host-flattened" in {x.id for x in host_findings(features("azure-vm-flat"))}


def test_the_firecracker_vm_is_described_as_a_vm_without_a_flattening_warning():
    # One GPU, virtio-net, no RDMA device: no GPU-NIC decision rests on the PCI tree.
    proc = rocetune("probe", "--root", root("h100-firecracker-vm"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "virtual machine, running under a hypervisor (not named by DMI, ACPI or /sys/hypervisor)" in out
    assert "host-flattened" not in out and "running under unknown" not in out


def test_container_with_unmapped_gids_is_partial_not_broken(features):
    f = features("container-partial-gid")
    assert len(f["gpus"]) == 4
    warnings = " ".join(f["sources"]["rdma"]["warnings"])
    assert "unreadable" in warnings
    usable = [p for d in f["rdma"]["devices"] for p in d["ports"] if p["roce_v2_ipv4_gids"]]
    assert usable, "ports whose GIDs are mapped still yield their RoCE v2 index"


def test_cpu_only_host_has_its_one_port_and_no_gpus(features):
    f = features("cpu-only-roce")
    assert f["gpus"] == [] and len(f["rdma"]["devices"]) == 1
    assert f["sources"]["gpu"]["ok"] and f["gpu"]["matrix"] is None


@pytest.mark.skipif(not hwloc_available(), reason="hwloc (lstopo-no-graphics) is not installed")
@pytest.mark.parametrize("host", HOSTS)
def test_numa_node_and_pci_parent_agree_with_hwloc(host, features):
    view = hwloc_pci_view(root(host))
    f = features(host)
    checked = 0
    for d in f["pci"]["devices"]:
        if d["kind"] not in ("gpu", "nic"):
            continue
        hw = view.get(d["bdf"])
        assert hw is not None, f"hwloc does not see {d['bdf']}"
        assert hw["parent"] == d["parent"], d["bdf"]
        single = len(f["host"]["numa_nodes"]) <= 1
        if hw["numa"] is not None and not (single and d["numa_node"] is None):
            # On a one-node host hwloc puts a device with numa_node -1 on node 0; the probe keeps
            # "unknown", which the rest of rocetune reads as that one node (model.vocab.path_type).
            assert hw["numa"] == d["numa_node"], d["bdf"]
        checked += 1
    assert checked == sum(1 for d in f["pci"]["devices"] if d["kind"] in ("gpu", "nic"))


def _corrupt_copy(tmp_path):
    dst = tmp_path / "host"
    shutil.copytree(root("dgx-h100-roce"), dst, symlinks=True)
    f = features_of(str(dst))
    gpu_bdf = f["gpus"][0]["bdf"]
    pdir = os.path.realpath(dst / "sys" / "bus" / "pci" / "devices" / gpu_bdf)
    with open(os.path.join(pdir, "numa_node"), "wb") as fh:
        fh.write(b"\x00\xff\xfe")
    with open(os.path.join(pdir, "current_link_width"), "w") as fh:
        fh.write("")
    gid_dir = os.path.realpath(dst / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "gids")
    with open(os.path.join(gid_dir, "3"), "w") as fh:
        fh.write("zz:not:a:gid\n")
    mtu = os.path.realpath(dst / "sys" / "class" / "net" / f["rdma"]["devices"][0]["ports"][0]["netdev"] / "mtu")
    os.unlink(mtu)
    os.mkdir(mtu)
    topo = dst / "commands" / "nvidia-smi_topo_-m.txt"
    text = topo.read_text()
    topo.write_text(text[: len(text) // 3])
    return str(dst)


def test_damaged_host_gives_warnings_and_a_partial_result(tmp_path):
    damaged = _corrupt_copy(tmp_path)
    proc = rocetune("probe", "--root", damaged)
    assert proc.returncode == 0 and no_traceback(proc)
    code, env = rocetune_json("probe", "--root", damaged)
    f = env["data"]["features"]
    text = " ".join(env["warnings"])
    assert "binary content" in text and "is a directory" in text and "not a GID" in text
    assert len(f["gpus"]) == 8 and f["gpus"][0]["numa_node"] is not None  # nvidia-smi still knows it
    assert f["rdma"]["devices"][0]["ports"][0]["roce_v2_ipv4_gids"] == []
