"""The verbs source against the real pyverbs library on this machine (python3-pyverbs)."""

import pytest

from rocetune.hostfs.context import ProbeContext
from rocetune.hostfs.root import HostRoot
from rocetune.probe.sources import verbs


def test_real_pyverbs_on_a_kernel_without_rdma_gives_a_reason_not_a_crash():
    pyverbs_device = pytest.importorskip("pyverbs.device", reason="python3-pyverbs is not installed")
    try:
        devices = pyverbs_device.get_device_list()
    except Exception as exc:  # Debian's pyverbs raises here instead of returning []
        raised = str(exc)
    else:
        pytest.skip(f"this machine has RDMA devices: {[d.name for d in devices]}")
    ctx = ProbeContext(HostRoot("/"))
    assert verbs._from_pyverbs(ctx) is None
    assert ctx.status.ok is False and raised in ctx.status.reason
    live = ProbeContext(HostRoot("/"))
    data = verbs.probe(live, {"devices": []})
    assert data["devices"] == [] and live.status.reason == "no RDMA devices to query"
