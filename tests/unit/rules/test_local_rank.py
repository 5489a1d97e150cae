"""local-rank: GPU, nearest NIC, NUMA node and CPUs of each local rank."""

from __future__ import annotations

import pytest

from rocetune.errors import ExitCode, RocetuneError

from .featurekit import Host, plan_of, rail_host


def test_every_rank_in_the_plan():
    plan = plan_of(rail_host().build())
    assert [r["local_rank"] for r in plan.ranks] == list(range(8))
    r5 = plan.ranks[5]
    assert (r5["gpu"], r5["nic"], r5["numa_node"], r5["cpus"]) == (5, "mlx5_5:1", 1, "32-63")
    assert not [d for d in plan.decisions if d.key.startswith("ROCETUNE_")]


def test_local_rank_adds_its_row_as_variables():
    e = plan_of(rail_host().build(), local_rank=2).env
    assert e["ROCETUNE_GPU"] == "2" and e["ROCETUNE_NIC"] == "mlx5_2:1"
    assert e["ROCETUNE_NUMA_NODE"] == "0" and e["ROCETUNE_CPUS"] == "0-31"
    assert e["ROCETUNE_GPU_BUS_ID"].count(":") == 2
    assert "CUDA_VISIBLE_DEVICES" not in e


def test_gpus_sharing_nics_are_spread_over_them():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    h.gpu(0).gpu(1)
    for i in range(4):
        h.rdma(f"mlx5_{i}", netdev=f"r{i}", ipv4=f"192.168.{i}.5/24", paths={0: "PXB", 1: "PXB"})
    ranks = plan_of(h.build()).ranks
    assert ranks[0]["nic"] != ranks[1]["nic"]
    assert ranks[0]["nearest_nics"] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_3:1"]


@pytest.mark.parametrize("rank", [8, 99])
def test_rank_beyond_the_gpus_is_a_usage_error(rank):
    with pytest.raises(RocetuneError) as e:
        plan_of(rail_host().build(), local_rank=rank)
    assert e.value.code == ExitCode.USAGE and "0..7" in e.value.message


def test_host_without_gpu():
    h = Host().iface("eth0", "10.0.0.5/24", default=True)
    assert plan_of(h.build()).ranks == []
    with pytest.raises(RocetuneError):
        plan_of(h.build(), local_rank=0)
