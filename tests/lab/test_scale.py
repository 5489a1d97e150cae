"""site.yml on sixteen lab hosts: converge, then an idempotent rerun.

Takes the lab over (``lab_exclusive``): the four-host session lab, if in use, is taken down
first and brought back afterwards (fresh), so run order does not matter."""

from __future__ import annotations

import pytest

from lab.playbooks import run_playbook

HOSTS = 16


@pytest.fixture
def lab16(lab_exclusive, tmp_path):
    info = lab_exclusive.up(HOSTS)
    yield info
    # lab_exclusive takes it down (and restores the session lab) afterwards.


def test_site_converges_sixteen_hosts_and_reruns_without_change(lab16, tmp_path):
    first = run_playbook(lab16.inventory, tmp_path)
    assert first.rc == 0, first.explain()
    assert sorted(first.recap) == lab16.names, first.explain()
    assert all(s["failed"] == 0 and s["unreachable"] == 0 for s in first.recap.values()), first.explain()
    # the converge step: every role that changes a node, in one task
    step = first.output.split("(the converge step)", 1)[1]
    assert all(f"changed: [{host}]" in step for host in lab16.names), first.explain()

    again = run_playbook(lab16.inventory, tmp_path)
    assert again.rc == 0, again.explain()
    assert again.total("changed") == 0, again.explain()
    print(f"16 hosts: converge {first.seconds:.1f}s, rerun {again.seconds:.1f}s")
