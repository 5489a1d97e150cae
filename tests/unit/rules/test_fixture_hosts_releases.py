"""Every NCCL variable rocetune decides for a fixture host is one that host's NCCL release reads
(src/rocetune/nccl/data/nccl_var_releases.json, from NCCL's source at every tag): a setting the
release ignores is a setting the plan only pretends to make."""

from __future__ import annotations

import os

import pytest

from rocetune.nccl import releases
from rocetune.nccl.versions import parse_version
from rocetune.planner import build_plan

HOSTS = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "hosts")


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(HOSTS) if os.path.isdir(os.path.join(HOSTS, n))))
def test_each_decided_variable_is_read_by_the_hosts_release(name):
    from rocetune.probe import collect_features
    from tests.fixtures.roots import root_of

    f = collect_features(root_of(name))
    version = parse_version(((f.get("kernel") or {}).get("nccl") or {}).get("version"))
    plan = build_plan(f)
    decided = sorted({d.key for d in plan.decisions if d.key.startswith("NCCL_") and d.rule_id != "declared-settings"})
    unread = [k for k in decided if releases.reads(k, version) is False]
    assert not unread, f"{name} (NCCL {version}): {unread}"
