"""gpudirect-rdma: a report, loud when a GPU+RDMA host has no GPUDirect."""

from __future__ import annotations

from .featurekit import Host, plan_of, rail_host


def findings(plan):
    """gpudirect-rdma's own findings (nccl-known-issues speaks of the same releases apart)."""
    return {f.id: f for f in plan.findings if f.rule == "gpudirect-rdma"}


def test_missing_peer_memory_on_a_gpu_rdma_host_is_loud():
    plan = plan_of(rail_host().no_peermem().build())
    f = findings(plan)["gdr-unavailable"]
    assert f.severity == "warning" and "GPUDirect RDMA unavailable" in f.message
    for path in ("/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                 "/sys/module/nvidia_peermem/version"):
        assert path in f.message
    assert "8 GPU-NIC pair(s) are PIX/PXB" in f.message
    assert plan.reports["gpudirect-rdma"]["available"] is False


def test_nvidia_peermem_is_invisible_to_old_nccl():
    plan = plan_of(rail_host(nccl="2.21.5").build())
    assert "gdr-not-detected" in findings(plan)


def test_nvidia_peermem_with_recent_nccl_is_fine():
    plan = plan_of(rail_host(nccl="2.23.4").build())
    assert not findings(plan)
    report = plan.reports["gpudirect-rdma"]
    assert report["available"] and report["route"] == "peer memory (/sys/module/nvidia_peermem/version)"
    assert all(p["default_level"] for p in report["pairs"] if p["path"] == "PIX")


def test_legacy_nv_peer_mem_works_on_every_version():
    plan = plan_of(rail_host(nccl="2.18.5").legacy_peermem().build())
    assert not findings(plan)


def test_loaded_but_unregistered_peermem_is_reported():
    h = rail_host().no_peermem()
    h.modules["nvidia_peermem"] = True
    assert "gdr-peermem-unregistered" in findings(plan_of(h.build()))


def test_no_gpu_no_warning():
    h = Host().iface("eno1", "10.0.0.5/24", default=True).no_peermem()
    h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24")
    assert not findings(plan_of(h.build()))


def test_only_far_nics_means_no_gdr_at_default_level():
    h = Host().iface("eno1", "10.0.0.5/24", default=True).gpu(0)
    h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24", paths={0: "NODE"})
    plan = plan_of(h.build())
    assert any("no GPU-NIC pair is PIX/PXB" in str(n) for n in plan.notes)
    assert plan.reports["gpudirect-rdma"]["pairs"] == [
        {"gpu": 0, "port": "mlx5_0:1", "path": "NODE", "default_level": False}]


def test_never_sets_a_variable():
    for h in (rail_host(), rail_host().no_peermem(), rail_host(nccl="2.18.5")):
        plan = plan_of(h.build())
        assert not [d for d in plan.decisions if d.rule_id == "gpudirect-rdma"]
        assert "NCCL_NET_GDR_LEVEL" not in plan.env


def test_no_peermem_on_a_host_without_gpu_local_nics_is_only_info():
    h = Host().iface("eno1", "10.0.0.5/24", default=True).gpu(0).no_peermem()
    h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24", paths={0: "SYS"})
    f = findings(plan_of(h.build()))["gdr-unavailable"]
    assert f.severity == "info" and "no GPU-NIC pair is PIX/PXB" in f.message


def test_dmabuf_with_open_module_replaces_peer_memory():
    plan = plan_of(rail_host(nccl="2.26.2").no_peermem().open_driver().build())
    assert not findings(plan)
    report = plan.reports["gpudirect-rdma"]
    assert report["route"] == "DMA-BUF" and report["dmabuf"]["usable"] is True
    assert any("DMA-BUF" in str(n) for n in plan.notes)


def test_proprietary_module_means_no_dmabuf():
    h = rail_host(nccl="2.26.2").no_peermem().open_driver(open_module=False)
    f = findings(plan_of(h.build()))["gdr-unavailable"]
    assert "open_gpu_module" in f.message and "DMA-BUF is not available" in f.message


def test_old_kernel_or_rdma_core_means_no_dmabuf():
    for h in (rail_host().no_peermem().open_driver(kernel="5.10.0-28-amd64"),
              rail_host().no_peermem().open_driver(rdma_core=28)):
        report = plan_of(h.build()).reports["gpudirect-rdma"]
        assert report["dmabuf"]["usable"] is False and not report["available"]


def test_unknown_driver_leaves_dmabuf_undecided_and_says_how_to_check():
    f = findings(plan_of(rail_host().no_peermem().build()))["gdr-unavailable"]
    assert "cannot be confirmed" in f.message and "NCCL_DEBUG=INFO" in f.message


def test_old_nccl_with_only_nvidia_peermem_but_dmabuf_is_fine():
    plan = plan_of(rail_host(nccl="2.21.5").open_driver().build())
    assert "gdr-not-detected" not in findings(plan)
    assert plan.reports["gpudirect-rdma"]["route"] == "DMA-BUF"


def test_uncounted_peer_memory_with_dmabuf_unknown_does_not_claim_gdr_is_off_or_on():
    # 2.21.5 does not check /sys/module/nvidia_peermem; the fixture host says nothing of the GPU
    # driver or kernel, so DMA-BUF can neither be confirmed nor ruled out
    plan = plan_of(rail_host(nccl="2.21.5").build())
    f = findings(plan)["gdr-not-detected"]
    assert "NCCL disables GPUDirect RDMA" not in f.message
    assert "rests on DMA-BUF, which this probe cannot confirm" in f.message
    report = plan.reports["gpudirect-rdma"]
    assert report["expected"] is None
    notes = [n.message for n in plan.notes]
    assert not any(n.startswith("GPUDirect RDMA at NCCL's default level") for n in notes)
    assert any("if DMA-BUF works, which this probe cannot confirm" in n for n in notes)


def test_the_plan_says_whether_a_job_should_show_gdr():
    on = plan_of(rail_host(nccl="2.23.4").build()).reports["gpudirect-rdma"]
    assert on["expected"] is True and on["expected_why"].startswith("8 GPU-NIC pair(s) at PIX/PXB, peer memory")
    unknown = plan_of(rail_host().no_peermem().build()).reports["gpudirect-rdma"]
    assert (unknown["expected"], unknown["available"]) == (None, False)  # DMA-BUF conditions unknown
    host = rail_host().no_peermem()
    host.open_driver("550.54.15", open_module=False)  # the proprietary module: no DMA-BUF
    off = plan_of(host.build()).reports["gpudirect-rdma"]
    assert off["expected"] is False and "DMA-BUF is unavailable" in off["expected_why"]


def test_a_nic_on_a_grace_superchips_own_cpu_is_p2c_and_counts_from_2_27_3():
    """v2.27.3-1 src/graph/paths.cc:670-680 makes GPU-to-NIC P2C when the GPU reaches its CPU over C2C and the
    NIC hangs off that CPU; v2.30.7-1 :510 sets the default GDR level to P2C while NCCL_NET_GDR_C2C is on
    (default 1 from 2.27.3, 0 in 2.26.2)."""
    def grace_host(nccl):
        h = Host(nccl=nccl).iface("eno1", "10.0.0.5/24", default=True).gpu(0).no_peermem()
        h.gpus[0]["name"] = "NVIDIA GB200"
        h.rdma("mlx5_0", netdev="ens1np0", ipv4="192.168.1.5/24", paths={0: "PHB"})
        return h

    new = plan_of(grace_host("2.28.9").build())
    assert new.reports["gpudirect-rdma"]["pairs"] == [
        {"gpu": 0, "port": "mlx5_0:1", "path": "PHB", "default_level": True, "nccl_path": "P2C"}]
    f = findings(new)["gdr-unavailable"]
    assert f.severity == "warning" and "1 GPU-NIC pair(s) are PIX/PXB/P2C" in f.message
    old = plan_of(grace_host("2.26.2").build())
    assert findings(old)["gdr-unavailable"].severity == "info"  # C2C GDR off by default before 2.27.3
    on = plan_of(grace_host("2.26.2").declare(NCCL_NET_GDR_C2C="1").build())
    assert findings(on)["gdr-unavailable"].severity == "warning"
