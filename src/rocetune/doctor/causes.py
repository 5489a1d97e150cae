"""Faults before their symptoms: each finding's cause class, the device it is about, and the
findings grouped into faults -- one root per fault, the findings that name its device under it.

A lost rail shows as a missing port (hardware), a GPU without a rail, a rail count short by one,
an env that names the device and a plan that drifted from it (env); the root is the hardware
finding, the rest are what follows from it. The cause classes, in the order a fault propagates:
hardware (a device, a GPU, a NIC's firmware health or counters), link (speed, MTU, addresses
and GIDs on a port), configuration (QoS, firmware settings, kernel and system limits, versions),
env (what jobs are given: the env files, NCCL's own view). A check not named below is env.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import List, Optional, Sequence, Tuple

from ..model.finding import Finding, severity_rank
from ..model.vocab import natural_key

CAUSES = ("hardware", "link", "configuration", "env")
_CLASSES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (
        "hardware",
        (
            "doctor-kernel-nic-*",
            "doctor-kernel-pcie-aer",
            "doctor-kernel-gpu-xid",
            "doctor-gpu-lost",
            "doctor-kernel-module-event",
            "nic-*",
            "expect-gpus",
            "expect-rails",
            "doctor-port-down",
            "doctor-phy-module",
            "doctor-phy-ber",
            "doctor-nvlink-*",
            "pci-link-degraded",
            "no-rdma-device",
            "no-nvidia-gpu",
            "doctor-module-not-loaded",
            "rail-port-unusable",
            "no-compute-port",
            "gpu-without-rail",
            "doctor-fw-pending-reset",
        ),
    ),
    (
        "link",
        (
            "doctor-kernel-link-flap",
            "expect-rail-link",
            "doctor-phy-*",
            "rail-slower",
            "doctor-no-ipv4-roce-gid",
            "doctor-rail-mtu-mismatch",
            "roce-mtu-low",
            "rdma-ports-share-subnet",
        ),
    ),
    (
        "configuration",
        (
            "doctor-acs-*",
            "doctor-ecn-off",
            "doctor-global-pause",
            "doctor-fw-*",
            "doctor-iommu-*",
            "doctor-memlock-*",
            "doctor-pcie-p2p-*",
            "doctor-qos-mismatch",
            "doctor-rail-qos-mismatch",
            "doctor-boot-unit-failed",
            "expect-firmware",
            "expect-qos-plan",
            "expect-versions",
            "expect-gpudirect",
            "gdr-*",
            "qos-*",
            "memlock-limited",
            "tc-*",
            "switch-*",
        ),
    ),
)
# A subject that names a device: an RDMA device or port (mlx5_4, mlx5_4:1, mlx5_4/1), a netdev
# (enp79s0np0), a PCI function (0000:4f:00.0), a GPU (GPU2). Not a path, a variable or a field.
_DEVICE = re.compile(
    r"^(?:[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|GPU\d+|[a-z][a-z0-9_.-]*\d[a-z0-9_.-]*"
    r"(?:[:/]\d+)?)$"
)

_PCI = re.compile(r"^[0-9a-f]{4}:")


def cause(check_id: str) -> str:
    for name, patterns in _CLASSES:
        if any(fnmatchcase(check_id, p) for p in patterns):
            return name
    return "env"


def device(f: Finding) -> Optional[str]:
    """The device a finding is about (its subject, without the port), or None."""
    subject = (f.subject or "").strip()
    if not _DEVICE.match(subject):
        return None
    return subject if _PCI.match(subject) else re.sub(r"[:/]\d+$", "", subject)


def _names(f: Finding, name: str) -> bool:
    text = f"{f.subject} {f.message}"
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.])", text) is not None


def faults(findings: Sequence[Finding]) -> List[Tuple[Finding, List[Finding]]]:
    """The failures and warnings as faults: (root, related), worst first and by cause. A root is
    the most severe finding, of the earliest cause, about a device (a NIC before a GPU: a GPU
    left without its rail follows from the rail). Related to it: a later finding that names its
    device or a device of one already related (in its subject or message), and one of the same
    check about no device or a GPU (the rail count short by the missing rail)."""
    graded = [f for f in findings if f.severity in ("error", "warning")]
    ranked = sorted(graded, key=_rank)
    out: List[Tuple[Finding, List[Finding]]] = []
    taken = [False] * len(ranked)
    for i, root in enumerate(ranked):
        if taken[i]:
            continue
        related: List[Finding] = []
        dev = device(root)
        if dev is not None:
            names = {dev}
            grew = True
            while grew:
                grew = False
                for j in range(i + 1, len(ranked)):
                    f = ranked[j]
                    follows = any(_names(f, n) for n in names) or (
                        f.id == root.id and not _gpu(dev) and (device(f) is None or _gpu(device(f)))
                    )
                    if not taken[j] and follows:
                        taken[j], grew = True, True
                        related.append(f)
                        if device(f) is not None:
                            names.add(str(device(f)))
        out.append((root, sorted(related, key=_rank)))
    return out


def _gpu(dev: Optional[str]) -> bool:
    return bool(dev and dev.startswith("GPU"))


def _rank(f: Finding) -> tuple:
    dev = device(f)
    return (
        severity_rank(f.severity),
        CAUSES.index(cause(f.id)),
        dev is None,
        _gpu(dev),
        f.id,
        natural_key(f.subject or ""),
    )


def ordered(findings: Sequence[Finding]) -> List[Finding]:
    """Every finding, faults first (each root followed by what is related to it), then the notes."""
    out = [f for root, related in faults(findings) for f in [root] + related]
    notes = sorted(
        (f for f in findings if f.severity not in ("error", "warning")),
        key=lambda f: (f.id, natural_key(f.subject or "")),
    )
    return out + notes
