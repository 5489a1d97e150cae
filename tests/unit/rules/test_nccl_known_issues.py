"""nccl-known-issues: each known NCCL bug is a finding only for the releases the release table
gates it to (rocetune.nccl.releases) and only where the host condition that makes it bite holds."""

from __future__ import annotations

import pytest

from rocetune.nccl import releases

from .featurekit import plan_of, rail_host


def ids(plan):
    return {f.id: f for f in plan.findings if f.rule == "nccl-known-issues"}


def grace(h, name="NVIDIA GB200"):
    for g in h.gpus:
        g["name"] = name
    return h


@pytest.mark.parametrize("nccl,raised,fix", [
    ("2.18.5", False, None), ("2.19.3", True, "has no NCCL_IB_ECE_ENABLE"), ("2.23.4", True, "NCCL_IB_ECE_ENABLE=0"),
    ("2.26.2", True, "NCCL_IB_ECE_ENABLE=0"), ("2.26.3", False, None), ("2.30.7", False, None)])
def test_ece_on_roce_from_2_19_1_up_to_2_26_3(nccl, raised, fix):
    f = ids(plan_of(rail_host(2, nccl=nccl).build())).get("nccl-ece-roce")
    assert (f is not None) is raised
    if raised:
        assert fix in f.message and f.evidence["source"] == releases.fact("ece-roce-slowdown").source


def test_ece_is_not_raised_on_infiniband_or_where_the_owner_turned_it_off():
    h = rail_host(2, nccl="2.24.3")
    for d in h.devices.values():
        for p in d["ports"]:
            p["link_layer"] = "InfiniBand"
    assert "nccl-ece-roce" not in ids(plan_of(h.build()))
    assert "nccl-ece-roce" not in ids(plan_of(rail_host(2, nccl="2.24.3").declare(NCCL_IB_ECE_ENABLE="0").build()))


def test_port_recovery_on_roce_from_2_30_3_when_declared():
    on = rail_host(2, nccl="2.30.7").declare(NCCL_IB_RESILIENCY_PORT_RECOVERY="1")
    f = ids(plan_of(on.build()))["nccl-roce-port-recovery"]
    assert "NVIDIA/nccl#2157" in f.message
    assert "nccl-roce-port-recovery" not in ids(plan_of(rail_host(2, nccl="2.30.7").build()))
    old = rail_host(2, nccl="2.29.7").declare(NCCL_IB_RESILIENCY_PORT_RECOVERY="1")
    assert "nccl-roce-port-recovery" not in ids(plan_of(old.build()))  # 2.29.7 has no port recovery
    assert f.severity == "warning"


def test_port_recovery_on_roce_from_2_31_2_refreshes_the_gid():
    f = ids(plan_of(rail_host(2, nccl="2.31.2").declare(NCCL_IB_RESILIENCY_PORT_RECOVERY="1").build()))[
        "nccl-roce-port-recovery"]
    assert f.severity == "info" and "refreshes a port's GID" in f.message and "#1819" not in f.message


def test_unlimited_stack_on_a_multi_node_nvlink_gpu():
    h = grace(rail_host(2, nccl="2.27.7"))
    h.stack_limit = "unlimited"
    f = ids(plan_of(h.build()))["nccl-mnnvl-stack"]
    assert "ulimit -s 8192" in f.message and f.evidence["gpus"] == ["NVIDIA GB200"]
    h.stack_limit = "8388608"
    assert "nccl-mnnvl-stack" not in ids(plan_of(h.build()))
    h2 = rail_host(2, nccl="2.27.7")  # an H100: no multi-node NVLink
    h2.stack_limit = "unlimited"
    assert "nccl-mnnvl-stack" not in ids(plan_of(h2.build()))


@pytest.mark.parametrize("nccl,raised,fix", [("2.24.3", True, "NCCL_NET_GDR_LEVEL=SYS"),
                                             ("2.26.2", True, "NCCL_NET_GDR_C2C=1"), ("2.27.3", False, None)])
def test_c2c_gdr_off_by_default_before_2_27_3(nccl, raised, fix):
    f = ids(plan_of(grace(rail_host(2, nccl=nccl), "NVIDIA GH200 480GB").build())).get("nccl-c2c-gdr-off")
    assert (f is not None) is raised
    if raised:
        assert fix in f.message
    declared = grace(rail_host(2, nccl="2.26.2")).declare(NCCL_NET_GDR_C2C="1")
    assert "nccl-c2c-gdr-off" not in ids(plan_of(declared.build()))


def test_gin_needs_nvidia_peermem_or_dmabuf_from_2_28_7():
    h = rail_host(2, nccl="2.28.9").legacy_peermem()
    f = ids(plan_of(h.build()))["nccl-gin-peer-memory"]
    assert f.severity == "info" and "nvidia-peermem or DMA-BUF on a kernel >= 6.1" in f.message
    assert "nccl-gin-peer-memory" not in ids(plan_of(rail_host(2, nccl="2.28.3").legacy_peermem().build()))
    assert "nccl-gin-peer-memory" not in ids(plan_of(rail_host(2, nccl="2.28.9").build()))  # nvidia_peermem
    dmabuf = rail_host(2, nccl="2.28.9").legacy_peermem().open_driver(kernel="6.8.0-1017-nvidia")
    assert "nccl-gin-peer-memory" not in ids(plan_of(dmabuf.build()))


def test_ignore_net_mismatch_default_from_2_30_3():
    assert "nccl-ignore-net-mismatch" in ids(plan_of(rail_host(2, nccl="2.30.3").build()))
    assert "nccl-ignore-net-mismatch" not in ids(plan_of(rail_host(2, nccl="2.29.7").build()))
    assert "nccl-ignore-net-mismatch" not in ids(
        plan_of(rail_host(2, nccl="2.30.7").declare(NCCL_IGNORE_NET_MISMATCH="0").build()))


def test_an_unknown_release_raises_nothing_here():
    h = grace(rail_host(2, nccl=None))
    h.stack_limit = "unlimited"
    assert not ids(plan_of(h.build()))
