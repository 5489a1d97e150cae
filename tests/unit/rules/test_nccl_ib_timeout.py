"""nccl-ib-timeout: 20 where the found NCCL defaults to less, nothing where it already uses 20."""

from __future__ import annotations

import pytest

from rocetune.nccl import defaults

from .featurekit import Host, plan_of, rail_host


@pytest.mark.parametrize("version,want,default", [("2.12.12", "20", 14), ("2.13.4", "20", 14),
                                                  ("2.14.3", "20", 18), ("2.22.3", "20", 18),
                                                  ("2.23.4", None, 20), ("2.30.7", None, 20)])
def test_by_release(version, want, default):
    plan = plan_of(rail_host(2, nccl=version).build())
    assert plan.env.get("NCCL_IB_TIMEOUT") == want
    assert defaults.default("NCCL_IB_TIMEOUT", tuple(int(x) for x in version.split("."))) == default
    if want:
        assert f"defaults to {default}" in plan.get("NCCL_IB_TIMEOUT").reason


def test_unknown_release_gets_20_and_says_why():
    d = plan_of(rail_host(2, nccl=None).build()).get("NCCL_IB_TIMEOUT")
    assert d.value == "20" and "unknown" in d.reason


def test_no_rdma_no_timeout():
    h = Host().iface("eth0", "10.0.0.5/24", default=True, speed_gbps=100).gpu(0)
    assert "NCCL_IB_TIMEOUT" not in plan_of(h.build()).env


def test_declared_22_is_kept():
    plan = plan_of(rail_host(2, nccl="2.21.5").declare(NCCL_IB_TIMEOUT="22").build())
    assert plan.get("NCCL_IB_TIMEOUT").value == "22" and plan.get("NCCL_IB_TIMEOUT").rule_id == "declared-settings"
