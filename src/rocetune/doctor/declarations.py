"""The checks of doctor/checks.py, doctor/deployed_env.py and doctor/reader_checks.py: what
`rocetune doctor` finds on a running node, declared with their pages (docs/checks/<id>.md).
and of nic_health.py (the NIC counters, from the table rocetune.checks.nic_counters). The kernel
log's, PHY's, firmware's and NVLink's are declared in below_declarations.py, a job's NCCL log's
and RAS's in nccl_findings.py, where their findings are made."""

from __future__ import annotations

from ..checks import declare
from ..checks.expect import READS as EXPECT_READS
from ..checks.expect import SOURCE as EXPECT_SOURCE
from ..checks.nic_counters import REGISTRY, RESET_ID

_NOT_CHECKED = "info when the node lacks what the check reads (said as 'not checked: ...')"


declare(
    id="doctor-port-down", kind="doctor", severity="error",
    title="A rail port is not ACTIVE",
    checks="Every RDMA port the plan would use (not the front end, not software, not an SR-IOV "
           "VF, not a spare port without an address), and every port the expectations or the "
           "deployed env name, is ACTIVE.",
    reads="/sys/class/infiniband/DEV/ports/N/state, the netdev's addresses.",
    why="NCCL uses only ACTIVE ports: a rail that is down leaves the job one NIC short, or "
        "unable to start where the env names that port alone.",
    fix="bring the link up: cable, switch port, `ip link set IF up`",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc ncclIbInit (ports not "
           "IBV_PORT_ACTIVE are skipped)",
)

declare(
    id="doctor-no-ipv4-roce-gid", kind="doctor", severity="error",
    title="A RoCE compute port has no IPv4 RoCE v2 GID",
    checks="Every ACTIVE RoCE port the plan uses, the expectations name (rails.devices) or the "
           "deployed env's NCCL_IB_HCA names has a RoCE v2 GID with an IPv4 address: a rail that "
           "lost its address is left out of a re-derived plan and is still a rail.",
    reads="The GID table and its types (/sys/class/infiniband/DEV/ports/N/gids, gid_attrs/types).",
    why="NCCL's default NCCL_IB_ADDR_FAMILY is AF_INET: a port with no IPv4 RoCE v2 GID gives "
        "NCCL no GID to use (or, pinned, the wrong one).",
    fix="give the port's netdev its IPv4 address",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc ncclIbGetGidIndex; NCCL #1333, #2157",
)

declare(
    id="doctor-rail-mtu-mismatch", kind="doctor", severity="error",
    title="One rail runs another MTU than the others",
    checks="All RoCE rails (the plan's, and those the expectations or the deployed env name) "
           "share one MTU; the ones that differ from the most common are named.",
    reads="/sys/class/net/IF/mtu of each compute port's netdev.",
    why="NCCL sets each connection's QP MTU to the smaller of the two ports' active_mtu "
        "(v2.26.2 net_ib.cc:1413), and a port's RoCE MTU follows its netdev's MTU: a rail "
        "left at 1500 carries 1024-byte RoCE packets to every peer, against 4096 on the "
        "others, and its bandwidth drops with the smaller packets.",
    fix="set the odd rail to the fabric's MTU (the roce_net role: roce_net_mtu)",
    source="NVIDIA/nccl v2.26.2-1 src/transport/net_ib.cc:1413 (remDevInfo->mtu = min(remote, "
           "local active_mtu)); Linux include/rdma/ib_addr.h iboe_get_mtu()",
)

declare(
    id="doctor-memlock-services", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_NOT_CHECKED,
    title="Services do not get an unlimited memlock",
    checks="systemd's DefaultLimitMEMLOCK, the last setting in system.conf and its drop-ins "
           "in systemd's order, is infinity.",
    reads="/etc/systemd/system.conf and system.conf.d/*.conf under /usr/lib, /usr/local/lib, "
          "/run and /etc.",
    why="Jobs started by a service (slurmd, containerd, kubelet) inherit its RLIMIT_MEMLOCK; "
        "systemd's default is 8 MiB, too little to register RDMA buffers.",
    fix="DefaultLimitMEMLOCK=infinity in /etc/systemd/system.conf.d/ (the rdma_core role writes "
        "it), then `systemctl daemon-reexec` and a restart of slurmd/containerd",
    source="systemd-system.conf(5) (DefaultLimitMEMLOCK, 8M since systemd 253); NCCL "
           "troubleshooting guide (memlock)",
)

declare(
    id="doctor-memlock-logins", kind="doctor", severity="warning",
    also=("info",),
    severity_note=_NOT_CHECKED,
    title="Logins do not get an unlimited memlock",
    checks="`*` soft and hard memlock are unlimited in limits.conf and limits.d.",
    reads="/etc/security/limits.conf and /etc/security/limits.d/*.conf.",
    why="A job started over ssh (mpirun, pdsh) gets pam_limits' memlock; below unlimited, "
        "memory registration fails or is capped.",
    fix="`* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.d/ "
        "(the rdma_core role writes them)",
    source="pam_limits(8), limits.conf(5); rdma-core libibverbs (memlock warning)",
)

declare(
    id="doctor-iommu-translated", kind="doctor", severity="warning",
    title="The IOMMU translates GPUDirect traffic on bare metal",
    checks="On bare metal with IOMMU groups, the kernel command line has iommu=pt or the "
           "IOMMU off.",
    reads="/proc/cmdline (iommu=, intel_iommu=, amd_iommu=), /sys/kernel/iommu_groups.",
    why="DMA remapping of every peer-to-peer and GPUDirect RDMA transfer costs bandwidth or "
        "breaks P2P.",
    fix="boot with iommu=pt (passthrough) or the IOMMU off on bare-metal GPU nodes",
    source="NCCL troubleshooting guide, 'IOMMU'",
)

declare(
    id="doctor-acs-redirect", kind="doctor", severity="error",
    also=("info",),
    severity_note="info when a bridge's extended configuration space cannot be read (not root), or the GPU-NIC "
                  "paths or the pcie_p2p unit cannot be told (said as 'not checked: ...')",
    title="ACS redirects GPU-NIC peer-to-peer traffic",
    checks="No PCI bridge between a GPU and a rail it reaches at PIX or PXB, nor any function the "
           "pcie_p2p role's boot unit is told to hold, has ACS P2P Request Redirect, P2P Completion "
           "Redirect or P2P Egress Control on.",
    reads="The ACS Control register of each bridge from /sys/bus/pci/devices/BDF/config (extended "
          "capability 0x000D, control at +6; root reads the extended space), with the pcie_p2p role's "
          "own reader (src/rocetune/core/pcie_p2p.py); the PCI tree and GPU-NIC paths from the Features; "
          "the ExecStart of /etc/systemd/system/rocetune-pcie-p2p.service.",
    why="With a redirect bit on, a switch port sends peer-to-peer requests up to the root complex: "
        "GPUDirect RDMA loses bandwidth, or hangs. The kernel turns ReqRedir and CmpltRedir on at boot "
        "when an IOMMU is on; the pcie_p2p role's unit clears them after.",
    fix="run the pcie_p2p role (or `systemctl restart rocetune-pcie-p2p` where it ran), or clear the bits "
        "in the BIOS; or run NCCL with NCCL_NET_GDR_LEVEL below PXB",
    source="NCCL troubleshooting guide, 'PCI Access Control Services (ACS)'; Linux drivers/pci/pci.c "
           "(pci_disable_acs_redir: PCI_ACS_RR, PCI_ACS_CR, PCI_ACS_EC; pci_std_enable_acs); PCI Express "
           "Base Specification (ACS Extended Capability); NCCL #214, #523, #2079",
)

declare(
    id="doctor-qos-mismatch", kind="doctor", severity="error",
    also=("info",),
    severity_note="info when the node has no QoS plan, or a rail's QoS could not be read (said as 'not checked: ...')",
    title="A rail's QoS differs from the node's QoS plan",
    checks="DSCP trust, PFC on exactly the lossless priorities, and the data DSCP mapped to "
           "its priority, on each RoCE rail, where the node has a QoS plan.",
    reads="`mlnx_qos -i IF` or `dcb` (the probe's QoS source), /etc/rocetune/qos.yml or --qos.",
    why="RoCE data in a lossy queue drops under congestion; PFC on a lossy class pauses it.",
    fix="apply the plan: the roce_qos role (or `mlnx_qos -i IF --trust dscp --pfc ...`)",
    source="NVIDIA, 'RoCE configuration for ConnectX' (DSCP trust, PFC on the RoCE priority); docs/qos.md",
)

declare(
    id="doctor-rail-qos-mismatch", kind="doctor", severity="error",
    title="One rail's NIC QoS differs from the other rails'",
    checks="All RoCE rails (the plan's, and those the expectations or the deployed env name) "
           "share one DSCP trust, one set of PFC priorities and one DSCP-to-priority map; the "
           "odd ones are named. Runs with or without a QoS plan.",
    reads="`mlnx_qos -i IF` or `dcb` on each rail (the probe's QoS source).",
    why="NCCL_IB_TC is one value for every rail: a class lossless on seven rails is lossy on "
        "the eighth, and without a QoS plan a re-derived env drops NCCL_IB_TC on all of them.",
    fix="apply the same QoS to every rail (the roce_qos role), then restart rocetune-env",
    source="IEEE 802.1Qbb (PFC per priority); NVIDIA, 'RoCE configuration for ConnectX'; "
           "NVIDIA/nccl v2.26.2 src/transport/net_ib.cc (one NCCL_IB_TC for every queue pair)",
)

declare(
    id="doctor-global-pause", kind="doctor", severity="error",
    title="Global pause is on where PFC is planned",
    checks="802.3x pause is off on each RoCE rail when the plan makes a priority lossless.",
    reads="`ethtool -a IF`.",
    why="PFC and global pause exclude each other: with pause on, one slow receiver stops "
        "every class on the link.",
    fix="`ethtool -A IF rx off tx off` (the roce_qos role: roce_qos_pause_off)",
    source="IEEE 802.1Qbb; NVIDIA mlx5 (PFC refused while pause is on)",
)

declare(
    id="doctor-ecn-off", kind="doctor", severity="warning",
    title="ECN (DCQCN) is off for the RoCE priority",
    checks="The notification and reaction points of DCQCN are on for the plan's data priority.",
    reads="/sys/class/net/IF/ecn/roce_np/enable/N and roce_rp/enable/N (mlx5).",
    why="Without ECN, congestion is met with PFC pauses alone, which spread.",
    fix="enable both for the plan's data priority (the roce_qos role does, roce_qos_dcqcn: true)",
    source="NVIDIA, 'DCQCN' (mlx5 ecn sysfs)",
)

declare(
    id="doctor-env-drift", kind="doctor", severity="warning",
    also=("info",),
    severity_note="info when the text differs but no variable does, when the file is not rocetune's, or "
                  "when only variables it records as overrides (--set, --config) differ",
    title="A deployed env file differs from the plan now",
    checks="/etc/rocetune/nccl.env and /etc/nccl.conf, where rocetune wrote them, hold what "
           "the plan gives now; the variables that differ are named.",
    reads="The files and the plan of the node as it is now.",
    why="A GID index that moved after a reboot or port flap, or a hand edit, leaves jobs with "
        "values that no longer fit the node.",
    fix="rerun `rocetune env -o FILE` (or the rocetune_env role); a hand edit belongs in the node "
        "settings (env.set in /etc/rocetune/doctor.yml) so that every run plans it",
    source="rocetune's plan; NCCL #1333, #2157 (GID index after a reboot or port flap)",
)
_ENV_FILES_READ = ("Every env file jobs source: /etc/rocetune/nccl.env and /etc/nccl.conf, whoever wrote "
                   "them, and the files the node settings list (env.files in /etc/rocetune/doctor.yml), "
                   "each read in its dialect")
declare(
    id="doctor-env-names-missing-device", kind="doctor", severity="error",
    title="The deployed env names an RDMA device the node does not have",
    checks="Every device and port the deployed NCCL_IB_HCA names (exactly, or as a prefix) exists, "
           "with or without expectations.",
    reads=f"NCCL_IB_HCA in each env file jobs source ({_ENV_FILES_READ[0].lower() + _ENV_FILES_READ[1:]}); "
          "/sys/class/infiniband.",
    why="A name that matches no device leaves NCCL fewer rails, or none (then sockets).",
    fix="find why the device is gone (driver or module unloaded, renamed), then rerun "
        "`rocetune env -o FILE`",
    source="NCCL documentation, NCCL_IB_HCA; NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc",
)

declare(
    id="doctor-env-selects-non-rail", kind="doctor", severity="error",
    title="The deployed env's NCCL_IB_HCA selects ports that are not compute rails",
    checks="The ports a deployed NCCL_IB_HCA selects -- a bare prefix (`mlx5`) selects every device "
           "whose name starts with it, a `^` list every port it does not name -- are all compute "
           "rails: the plan's ports and those the expectations name, not the front end, storage "
           "NICs, software devices or unaddressed ports.",
    reads=f"{_ENV_FILES_READ}; the RDMA ports and why the plan left each out.",
    why="NCCL uses every ACTIVE port the list selects: a management bond or a storage NIC in the "
        "list carries the job's traffic on a network not built for it, and a port without a "
        "routable GID fails its connections.",
    fix="name the rails exactly (`=mlx5_0:1,...`: `rocetune env` writes it), or write the env with "
        "`rocetune env -o FILE`",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:704-740 and src/misc/utils.cc matchIfList "
           "(prefix match, `=` exact, `^` exclude)",
)

declare(
    id="doctor-env-gid-not-roce-v2", kind="doctor", severity="error",
    title="The deployed env pins a GID index that is not an IPv4 RoCE v2 GID",
    checks="A deployed NCCL_IB_GID_INDEX (0 or more) is an IPv4 RoCE v2 GID (IPv6 where a port has "
           "no IPv4 one) on every RoCE rail the env's NCCL_IB_HCA selects.",
    reads=f"{_ENV_FILES_READ}; each port's GID table and its types.",
    why="NCCL uses a pinned index verbatim on every port; after an address moved (a reboot, a port "
        "flap, an address re-added) the index names a link-local, RoCE v1 or empty GID, and the "
        "job's connections fail or hang.",
    fix="rerun `rocetune env -o FILE` (the boot unit does at every boot); on NCCL 2.21.5 or later "
        "leave NCCL_IB_GID_INDEX unset",
    source="NVIDIA/nccl v2.20.5-1 src/transport/net_ib.cc:80 (IB_GID_INDEX, default 0), :838 and "
           ":1028 (one index queried on every device); v2.21.5-1 ncclIbGetGidIndex (a set index is "
           "returned before any scan); NCCL #1333, #2157",
)

declare(
    id="doctor-env-tc-lossy", kind="doctor", severity="error",
    title="The deployed env sends RoCE in a traffic class the NICs treat as lossy",
    checks="The priority NCCL_IB_TC maps to under DSCP trust (NCCL_IB_SL under PCP trust) has PFC "
           "on, on every RoCE rail the env selects; not checked where the QoS plan declares no "
           "lossless priority.",
    reads=f"{_ENV_FILES_READ}; each rail's trust, DSCP map and PFC (mlnx_qos, dcb).",
    why="RoCE needs a lossless class (or a fabric built for lossy RoCE, which the QoS plan then "
        "says): in a class without PFC a congested switch drops packets, and NCCL's go-back-N "
        "retransmissions slow the job or time it out.",
    fix="turn PFC back on for that priority (the roce_qos role), or write the env again from the "
        "QoS plan (`rocetune env -o FILE`); a fabric run lossy by design says so in its QoS plan "
        "(`lossless_priorities: []`)",
    source="NVIDIA/nccl v2.26.2-1 src/transport/net_ib.cc:101-102 (NCCL_IB_TC, NCCL_IB_SL); "
           "NVIDIA, RoCE lossless configuration (PFC on the RoCE priority)",
)

declare(
    id="doctor-env-ifname-missing", kind="doctor", severity="error",
    title="The deployed env names a socket interface the node does not have",
    checks="NCCL_SOCKET_IFNAME (prefixes, `=` exact; a `^` list is not judged) matches an "
           "interface of the node, and every interface GLOO_SOCKET_IFNAME names exists.",
    reads=f"{_ENV_FILES_READ}; the node's interfaces.",
    why="NCCL bootstraps over the interfaces the list selects: none leaves the job with 'no socket "
        "interface found', and Gloo fails on a name that does not exist.",
    fix="name the node's interface (`rocetune env` picks the one that reaches the other nodes)",
    source="NVIDIA/nccl v2.28.9-1 src/misc/socket.cc findInterfaces with src/misc/utils.cc "
           "matchIfList; PyTorch ProcessGroupGloo GLOO_SOCKET_IFNAME",
)

declare(
    id="doctor-env-cross-nic-unreachable", kind="doctor", severity="error",
    title="The deployed env lets NCCL cross rails that cannot reach each other",
    checks="A deployed NCCL_CROSS_NIC=1 where the rails' reach was measured isolated or partial "
           "(/etc/rocetune/rail-reach.json, from `fleet validate --tests cross-rail`); not judged "
           "without a measurement (routes alone do not prove isolation).",
    reads=f"{_ENV_FILES_READ}; /etc/rocetune/rail-reach.json.",
    why="NCCL_CROSS_NIC=1 lets a ring or tree leave one node on a rail and enter the next on another: "
        "where that path does not answer, the connection fails and the job with it.",
    fix="NCCL_CROSS_NIC=0 (what `rocetune env` writes there), or route between the rails",
    source="NVIDIA/nccl v2.5.6-1 src/init.cc:431 (NCCL_CROSS_NIC), v2.30.7-1 src/graph/search.cc:16; "
           "NCCL env docs (0 for rails without an inter-rail connection)",
)

declare(
    id="doctor-module-not-loaded", kind="doctor", severity="error",
    title="A module listed for boot is not loaded",
    checks="Every module in modules-load.d is loaded or built in.",
    reads="/usr/lib/modules-load.d/*.conf, /etc/modules-load.d/*.conf, /sys/module/NAME.",
    why="What depends on it (its RDMA devices, peer memory) is missing.",
    fix="`modprobe NAME`, and find why it did not load at boot: `journalctl -b -u systemd-modules-load`",
    source="modules-load.d(5); the rdma_core role persists the RDMA modules there",
)

declare(
    id="doctor-env-refused", kind="doctor", severity="error",
    title="The boot unit refused to replace the env with a degraded one",
    checks="Whether the last `rocetune env --no-degrade` (rocetune-env.service at boot) refused "
           "a plan that fell short of the expectations or of the env it would replace (fewer "
           "rails, a dropped traffic class), and left the previous env in place.",
    reads="/var/lib/rocetune/env-refused.json under the root (written by the refusal, removed "
          "by the next run that writes or keeps a plan that is not short).",
    why="The node runs on the env of its last good boot while what it shows now would plan less: "
        "a rail lost, a class dropped. Jobs on it may run degraded until it is repaired.",
    fix="repair what the reasons name, then `systemctl restart rocetune-env`; to accept the "
        "degraded node on purpose, run `rocetune env -o ...` once without --no-degrade",
    source="docs/roles/rocetune_env.md (the boot unit and what it leaves in place)",
)

declare(
    id="doctor-boot-unit-failed", kind="doctor", severity="error",
    also=("info",),
    severity_note=_NOT_CHECKED,
    title="A rocetune boot unit failed",
    checks="rocetune-env.service and rocetune-qos.service, where installed, succeeded at their "
           "last run.",
    reads="`systemctl show UNIT -p Id,LoadState,ActiveState,Result,ExecMainStatus`.",
    why="A failed env unit leaves the env of the previous boot (a moved GID index unfollowed); "
        "a failed QoS unit leaves the NIC's defaults (no PFC).",
    fix="`journalctl -b -u UNIT` says why; fix it, then `systemctl restart UNIT`",
    source="the roles' boot units (docs/roles/rocetune_env.md, roce_qos.md)",
)

declare(
    id="doctor-reader-failed", kind="doctor", severity="error",
    title="A reader crashed: its checks did not run",
    checks="Every probe source read the node without an exception.",
    reads="The Features' `sources.<name>.failed` (the exception class) and `reason`, set by the probe "
          "when a source raised (its section is then empty or absent), and the same in doctor's kernel-log "
          "reading.",
    why="A source that raises gives no data, and checks that see no data find nothing: a malformed line "
        "in the NVLink output once turned a failing fabric into a pass. Each such family is `not "
        "checked: reader failed` instead, an error, so no gate passes a node it did not read.",
    fix="read the reason (and `--debug`); report it with the command output it names. Where the crash "
        "is known and the node is otherwise judged, grade it in the check configuration "
        "(`grade: [{id: doctor-reader-failed, severity: warning, reason: ...}]`)",
    source="docs/gate.md (a reader that failed); rocetune.probe.collect",
)

# What doctor's expectations step leaves unchecked (doctor/checks.py expect_unchecked)
declare(
    id="expect-unchecked", kind="expect", severity="info",
    title="What the expectations do not check",
    checks="Which fields the expectations leave out, or that there are none.",
    reads=EXPECT_READS,
    why="A field left out checks nothing: `-v` says which, so a clean report is not read as "
        "more than it checked.",
    fix="declare the node in /etc/rocetune/expect.yml (`rocetune doctor --write-expect FILE` on "
        "a known-good node)",
    source=EXPECT_SOURCE,
)


# The NIC counters' checks (rocetune.doctor.nic_health makes their findings)
declare(
    id=RESET_ID, kind="doctor", severity="info",
    title="NIC counters were reset since the baseline",
    checks=REGISTRY[RESET_ID]["doc"],
    reads="NIC counters (docs/health.md) and the saved baseline",
    why=REGISTRY[RESET_ID]["why"],
    fix=REGISTRY[RESET_ID]["fix"],
    source="Linux ib_core port counters and mlx5 ethtool counters only ever grow, until a driver "
           "reload, a firmware reset, a clearing tool or a reboot",
)
for _id, _meta in sorted(REGISTRY.items()):
    if _id == RESET_ID:
        continue
    declare(
        id=_id, kind="doctor", severity="warning",
        also=("error", "info"),
        severity_note="error above its error threshold; info without a baseline or across a reset",
        title=f"NIC counters: {_meta['title'].lower()}",
        checks=_meta["doc"],
        reads="NIC counters, judged as rates against the saved baseline (docs/health.md)",
        why=_meta["why"],
        fix=_meta["fix"],
        source=_meta["source"],
    )
