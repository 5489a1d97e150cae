"""GPU↔NIC pairing, cross-checks and the flattened-host inputs, from hand-made source data."""

from rocetune.probe.topology import derive_topology, virtualization


def pci_dev(bdf, kind, chain, rc="pci0000:00", numa=0):
    return {"bdf": bdf, "kind": kind, "root_complex": rc, "numa_node": numa, "parent": chain[-2] if len(chain) > 1 else None,
            "switches": chain[1:-1:2], "link": None}


def rdma_dev(name, pci, ports=1, link_layer="Ethernet"):
    return {"name": name, "pci": pci, "ports": [
        {"port": p, "state": "ACTIVE", "link_layer": link_layer, "netdev": f"{name}-eth{p}"}
        for p in range(1, ports + 1)]}


RP, UP = "0000:00:01.0", "0000:01:00.0"
PCI = {"devices": [
    pci_dev("0000:03:00.0", "gpu", [RP, UP, "0000:02:00.0", "0000:03:00.0"]),
    pci_dev("0000:04:00.0", "nic", [RP, UP, "0000:02:08.0", "0000:04:00.0"]),
    pci_dev("0000:41:00.0", "nic", ["0000:40:01.0", "0000:41:00.0"], rc="pci0000:40", numa=1),
]}
RDMA = {"devices": [rdma_dev("mlx5_0", "0000:04:00.0"), rdma_dev("mlx5_bond_0", "0000:41:00.0", ports=1)]}
HOST = {"numa_nodes": [{"id": 0, "cpulist": "0-7"}, {"id": 1, "cpulist": "8-15"}]}


def matrix(nic0="PIX", nic1="SYS"):
    return {"gpus": [{"index": 0, "cpu_affinity": "0-7", "numa_affinity": "0"}],
            "nics": [{"index": 0, "name": "mlx5_0"}, {"index": 1, "name": "mlx5_bond_0"}],
            "links": {"GPU0": {"NIC0": nic0, "NIC1": nic1}}}


def test_nearest_nic_is_the_one_under_the_same_switch():
    gpus, topo, warnings = derive_topology(PCI, RDMA, {"matrix": matrix(), "bus_ids": {}, "names": {}}, HOST)
    assert warnings == []
    assert gpus[0]["bdf"] == "0000:03:00.0" and gpus[0]["cpu_affinity"] == "0-7"
    assert [(n["device"], n["port"], n["path"]) for n in gpus[0]["nearest_nics"]] == [("mlx5_0", 1, "PIX")]
    paths = {p["nic"]: (p["sysfs"], p["nvidia_smi"]) for p in topo["gpu_nic"]}
    assert paths == {"mlx5_0": ("PIX", "PIX"), "mlx5_bond_0": ("SYS", "SYS")}
    assert topo["disagreements"] == []


def test_disagreement_between_sysfs_and_nvidia_smi_is_reported_not_hidden():
    _, topo, _ = derive_topology(PCI, RDMA, {"matrix": matrix(nic0="PHB"), "bus_ids": {}, "names": {}}, HOST)
    assert topo["disagreements"] == ["GPU0-mlx5_0: sysfs says PIX, nvidia-smi says PHB"]


def test_without_nvidia_smi_the_pairing_still_comes_from_sysfs():
    gpus, topo, _ = derive_topology(PCI, RDMA, {"matrix": None, "bus_ids": {}, "names": {}}, HOST)
    assert gpus[0]["index"] == 0 and gpus[0]["nearest_nics"][0]["device"] == "mlx5_0"
    assert gpus[0]["cpu_affinity"] == "0-7"  # from the NUMA node when nvidia-smi is absent


def test_matrix_without_legend_never_invents_names():
    m = matrix()
    m["nics"] = [{"index": 0, "name": None}, {"index": 1, "name": None}]
    _, topo, _ = derive_topology({"devices": []}, {"devices": []}, {"matrix": m, "bus_ids": {}, "names": {}}, HOST)
    assert topo["gpu_nic"] == []


def test_container_with_fewer_gpus_than_pci_and_no_bus_ids_does_not_guess():
    pci = {"devices": PCI["devices"] + [pci_dev("0000:83:00.0", "gpu", ["0000:80:01.0", "0000:83:00.0"], rc="pci0000:80", numa=1)]}
    gpus, _, warnings = derive_topology(pci, RDMA, {"matrix": matrix(), "bus_ids": {}, "names": {}}, HOST)
    assert gpus[0]["bdf"] is None and "not matched" in warnings[0]


def test_synthetic_pci_domains_mark_the_host_flattened():
    devs = [pci_dev(f"{d:04x}:00:00.0", k, [f"{d:04x}:00:00.0"], rc=f"pci{d:04x}:00", numa=None)
            for d, k in ((1, "gpu"), (2, "gpu"), (0x101, "nic"), (0x102, "nic"))]
    pci = {"devices": devs}
    gpus = [{"index": 0}, {"index": 1}]
    topo = {"gpu_nic": [{"gpu": 0, "nic": "mlx5_0", "path": "NODE"}]}
    v = virtualization({"hypervisor": "Hyper-V", "numa_nodes": [{"id": 0}]}, pci, gpus, topo)
    assert v["flattened"] and any("synthetic PCI domains" in r for r in v["reasons"])
    assert any("Hyper-V" in r for r in v["reasons"])


def test_bare_metal_switch_tree_is_not_flattened():
    v = virtualization({"hypervisor": None, "numa_nodes": HOST["numa_nodes"]}, PCI, [{"index": 0}],
                       {"gpu_nic": [{"path": "PIX"}]})
    assert not v["flattened"] and v["reasons"] == []


def test_nics_the_rdma_view_lacks_are_named_four_and_counted():
    from rocetune.probe.topology import rdma_evidence

    nics = [{"index": i, "name": f"mlx5_{i}"} for i in range(12)]
    known, why = rdma_evidence({"ok": True}, {"devices": []}, {"matrix": {"nics": nics}})
    assert known is False
    assert "(mlx5_0, mlx5_1, mlx5_2, mlx5_3 and 8 more)" in why
