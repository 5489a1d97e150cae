"""Host checks over hand-made Features: each fires where its facts say, and stays quiet elsewhere."""

from rocetune.checks import host_findings as findings


def test_findings_flag_low_roce_mtu_and_memlock():
    f = {"pci": {"devices": []}, "gpus": [], "topology": {"disagreements": []}, "verbs": {"disagreements": []},
         "rdma": {"devices": [{"name": "mlx5_0", "ports": [{"port": 1, "link_layer": "Ethernet", "state": "ACTIVE",
                                                             "roce_mtu": 1024, "netdev": "eth2", "netdev_mtu": 1500}]}]},
         "net": {"default_route_interfaces": ["eth0"]},
         "kernel": {"memlock": "8388608"}, "host": {"virtualization": {"flattened": False, "reasons": []}}}
    ids = {x.id for x in findings(f)}
    assert {"roce-mtu-low", "memlock-limited", "no-nvidia-gpu"} <= ids


def _flat_features(gpus: int, rdma: list) -> dict:
    return {"pci": {"devices": []}, "gpus": [{"index": i} for i in range(gpus)],
            "topology": {"disagreements": []}, "verbs": {"disagreements": []},
            "rdma": {"devices": rdma}, "net": {"default_route_interfaces": []}, "kernel": {},
            "host": {"virtualization": {"hypervisor": "KVM", "flattened": True,
                                        "reasons": ["running under KVM with GPUs not behind any PCIe switch"]}}}


def test_a_flattened_tree_is_a_warning_only_where_gpu_nic_pairing_depends_on_it():
    nics = [{"name": f"mlx5_{i}", "function": "pci", "ports": []} for i in (10, 2, 1)]
    got = [x for x in findings(_flat_features(2, nics)) if x.id == "host-flattened"]
    assert len(got) == 1 and got[0].severity == "warning"
    msg = got[0].message
    assert "2 GPU(s) with RDMA NIC(s) mlx5_1, mlx5_2, mlx5_10" in msg and "GPUDirect RDMA" in msg
    assert "NCCL_TOPO_FILE" in msg and "running under KVM" in msg
    # One GPU and no RDMA device, or only Soft-RoCE: NCCL decides nothing from the PCI distances.
    rxe = [{"name": "rxe0", "function": "software", "ports": []}]
    for f in (_flat_features(1, []), _flat_features(2, rxe), _flat_features(0, nics)):
        assert "host-flattened" not in {x.id for x in findings(f)}


def test_roce_mtu_is_checked_on_a_rail_with_only_an_ipv6_ra_default_route():
    port = {"port": 1, "link_layer": "Ethernet", "state": "ACTIVE", "roce_mtu": 1024, "netdev": "ens1",
            "netdev_mtu": 1500}
    f = {"pci": {"devices": []}, "gpus": [], "topology": {"disagreements": []}, "verbs": {"disagreements": []},
         "rdma": {"devices": [{"name": "mlx5_0", "ports": [port]}]},
         "net": {"default_route_interfaces": ["eth0", "ens1"],
                 "default_routes": [{"interface": "eth0", "family": "inet", "metric": 100},
                                    {"interface": "ens1", "family": "inet6", "metric": 1024}]},
         "kernel": {"memlock": "unlimited"}, "host": {"virtualization": {"flattened": False, "reasons": []}}}
    assert "roce-mtu-low" in {x.id for x in findings(f)}
    f["net"]["default_routes"][1]["family"] = "inet"  # now ens1 is a front end too: not checked
    f["net"]["default_routes"][1]["metric"] = 100
    assert "roce-mtu-low" not in {x.id for x in findings(f)}


def test_a_host_finding_names_what_was_read_and_carries_its_checks_fix():
    f = {"pci": {"devices": []}, "gpus": [], "topology": {"disagreements": []}, "verbs": {"disagreements": []},
         "rdma": {"devices": [{"name": "mlx5_0", "ports": [{"port": 1, "link_layer": "Ethernet", "state": "ACTIVE",
                                                             "roce_mtu": 1024, "netdev": "eth2", "netdev_mtu": 1500}]}]},
         "net": {"default_route_interfaces": ["eth0"]},
         "kernel": {"memlock": "8388608"}, "host": {"virtualization": {"flattened": False, "reasons": []}}}
    by_id = {x.id: x for x in findings(f)}
    mtu = by_id["roce-mtu-low"]
    assert mtu.subject == "mlx5_0:1" and mtu.kind == "host"
    assert mtu.evidence == {"file": "/sys/class/net/eth2/mtu", "value": {"netdev_mtu": 1500, "roce_mtu": 1024}}
    assert "4200" in mtu.fix and "iboe_get_mtu" in mtu.source
    assert by_id["memlock-limited"].evidence == {"file": "/proc/self/limits", "value": "8388608"}
    # Sorted by id then subject, as the probe lists them.
    assert [x.id for x in findings(f)] == sorted(by_id)
