"""gpudirect-rdma's peer-memory check: a path counts only for the NCCL releases that check it
(ncclIbGdrSupport at each tag; nccl/defaults.py PEER_MEMORY_CHECKS)."""

from __future__ import annotations

import pytest

from rocetune.nccl.defaults import PEER_MEMORY_PATHS, peer_memory_checks

from .featurekit import plan_of, rail_host


def only(key: str, nccl):
    h = rail_host(nccl=nccl)
    h.peer = {k: k == key for k in PEER_MEMORY_PATHS}
    return plan_of(h.build())


def findings(plan):
    """gpudirect-rdma's own findings (nccl-known-issues speaks of the same releases apart)."""
    return {f.id: f for f in plan.findings if f.rule == "gpudirect-rdma"}


@pytest.mark.parametrize("key,nccl,seen", [
    ("nv_mem", "2.12.12", True), ("nv_mem", "2.30.7", True),
    ("nvidia-peermem", "2.12.12", True), ("nvidia-peermem", "2.21.5", True),
    ("nvidia-peermem", "2.22.3", False), ("nvidia-peermem", "2.28.3", False),
    ("nv_mem_nc", "2.21.5", False), ("nv_mem_nc", "2.22.3", True),
    ("nvidia_peermem", "2.22.3", False), ("nvidia_peermem", "2.23.4", True), ("nvidia_peermem", "2.28.9", True),
])
def test_each_path_counts_only_where_nccl_checks_it(key, nccl, seen):
    plan = only(key, nccl)
    report = plan.reports["gpudirect-rdma"]
    assert report["available"] is seen
    assert (PEER_MEMORY_PATHS[key] in report["checked_by_nccl"]) is seen
    if seen:
        assert not findings(plan) and report["route"] == f"peer memory ({PEER_MEMORY_PATHS[key]})"
    else:
        f = findings(plan)["gdr-not-detected"]
        assert PEER_MEMORY_PATHS[key] in f.message and f"NCCL {nccl}" in f.message


def test_tags_as_read_in_ncclibgdrsupport():
    assert peer_memory_checks((2, 9, 6)) == ("nv_mem",)
    assert peer_memory_checks((2, 19, 3)) == ("nv_mem", "nvidia-peermem")
    assert peer_memory_checks((2, 22, 3)) == ("nv_mem", "nv_mem_nc")
    assert peer_memory_checks((2, 23, 4)) == ("nv_mem", "nv_mem_nc", "nvidia_peermem")


def test_unknown_release_counts_a_path_but_says_for_which_releases():
    plan = only("nvidia_peermem", None)
    assert plan.reports["gpudirect-rdma"]["available"] is True
    assert any("counts only for NCCL 2.23.4 and later" in n.message for n in plan.notes)
