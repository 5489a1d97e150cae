"""What the planner could not decide cleanly: a doubt about the compute ports, a GPU without a
rail of its own, a GID or traffic class left unset, a topology file not planned. Each is a
finding of its own id (a rule leaves it through ctx.finding), graded by doctor like any other:
no plan warning lives in a side list."""

from __future__ import annotations

from ..checks import declare

_PORTS_READ = ("The RDMA ports (/sys/class/infiniband/DEV/ports/N: state, link_layer, rate, GID "
               "table), their netdevs' addresses and routes, and each port's PCI path to each GPU "
               "(the Features `rdma`, `net`, `topology.gpu_nic`).")
_NCCL_IB = ("NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc ncclIbInit (every ACTIVE IB/RoCE port, "
            "filtered by NCCL_IB_HCA); NCCL user guide, NCCL_IB_HCA")


declare(
    id="compute-ports-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="The choice of compute ports is uncertain",
    checks="Whether the compute (rail) ports could be told from the front end and storage without "
           "doubt: the default route's owner, as many ports of two fabrics, every port on the "
           "management subnet, GPUs seeing different numbers of local ports, no RoCE port with "
           "an address.",
    reads=_PORTS_READ,
    why="NCCL_IB_HCA names the rails; a doubtful choice may give NCCL a storage or front-end "
        "port, or leave a rail out.",
    fix="check the ports with `ibdev2netdev` and `ip addr`; state the rails in the expectations "
        "(rails.devices) or set NCCL_IB_HCA with --set",
    source=_NCCL_IB,
)

declare(
    id="rail-port-unusable", kind="rule", severity="error",
    by=("nccl-ib-hca",),
    title="A GPU's own RDMA port cannot be used",
    checks="A port at PIX/PXB to a GPU that the plan leaves out because it is not ACTIVE or has "
           "no IPv4/IPv6 RoCE v2 GID, where that GPU has no other rail of its own.",
    reads=_PORTS_READ,
    why="The port is there, next to its GPU, and broken: the GPU's traffic crosses to another "
        "GPU's NIC, halving what both get, while a plan re-derived without it looks consistent.",
    fix="bring the link up (cable, switch port, `ip link set IF up`) or give the netdev its "
        "address (the roce_net role); then rerun the env (the boot unit: `systemctl restart "
        "rocetune-env`)",
    source=_NCCL_IB + "; NCCL_NET_GDR_LEVEL (PIX/PXB: GPUDirect RDMA at its default level)",
)

declare(
    id="gpu-without-rail", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="A GPU has no compute port of its own",
    checks="Every GPU has a compute port at PIX/PXB (behind its PCIe switch) where other GPUs "
           "have one.",
    reads=_PORTS_READ,
    why="That GPU's traffic crosses the CPU to another GPU's NIC: it shares that rail's "
        "bandwidth and loses GPUDirect RDMA at NCCL's default level. On a rail design, a "
        "vanished NIC looks exactly like this once the env is re-derived.",
    fix="find the missing NIC (`rdma link`, `lspci`, `dmesg`); where the hardware has no NIC per "
        "GPU, state the rails in the expectations (rails.per_gpu: false)",
    source="NCCL user guide, NCCL_NET_GDR_LEVEL; NVIDIA DGX H100 user guide (one ConnectX-7 "
           "per GPU)",
)

declare(
    id="rail-slower", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="A compute port runs slower than the others",
    checks="Every chosen compute port runs at the fastest compute port's rate (ports at half "
           "of it or less are left out as storage).",
    reads=_PORTS_READ,
    why="A collective runs at the pace of its slowest rail: one port that trained at a lower "
        "speed or width holds back every GPU.",
    fix="check the cable, transceiver and switch port of the slow port (`ethtool IF`, "
        "`mlxlink -d DEV`)",
    source="/sys/class/infiniband/DEV/ports/N/rate (Linux drivers/infiniband/core/sysfs.c); "
           "NCCL ring and tree algorithms (the slowest link bounds the bus bandwidth)",
)

declare(
    id="converged-port", kind="rule", severity="warning",
    by=("nccl-ib-hca",),
    title="The only RDMA port is the front end too",
    checks="Whether the one usable RDMA port also carries the host's default route.",
    reads=_PORTS_READ,
    why="Collectives, SSH, storage and the job's own TCP share one link, and the lossless class "
        "set for RoCE governs that port too.",
    fix="a separate compute NIC; or run NCCL over sockets with --set NCCL_IB_DISABLE=1",
    source=_NCCL_IB,
)

declare(
    id="no-compute-port", kind="rule", severity="warning",
    by=("no-rdma",),
    title="RDMA devices exist but no port is usable",
    checks="Whether any RDMA port is usable now (ACTIVE, addressed, not the front end).",
    reads=_PORTS_READ,
    why="NCCL falls back to TCP sockets until a port is usable: a fraction of the bandwidth.",
    fix="bring the ports up and give them addresses; the env follows at the next run or boot",
    source=_NCCL_IB,
)

declare(
    id="socket-ifname-uncertain", kind="rule", severity="warning",
    by=("socket-ifname",),
    title="NCCL's socket interface is uncertain or unknown",
    checks="Whether one interface is plainly the network every node reaches (the default route's).",
    reads="The interfaces, their addresses and the default routes (the Features `net`).",
    why="NCCL's bootstrap and Gloo's rendezvous need an interface every node reaches; a wrong "
        "one hangs the job at start.",
    fix="set it with --set NCCL_SOCKET_IFNAME=IF (and GLOO_SOCKET_IFNAME)",
    source="NCCL user guide, NCCL_SOCKET_IFNAME; NVIDIA/nccl src/misc/socket.cc (interface choice)",
)

declare(
    id="declared-not-nccl", kind="rule", severity="warning",
    by=("declared-settings",),
    title="Declared variables NCCL does not read",
    checks="Variables in the host's own NCCL files (/etc/nccl.conf, a vendor env script) that "
           "libnccl does not read.",
    reads="The declared files (the Features `declared.files`) and NCCL's variables (nccl_vars.json).",
    why="They stay in the vendor's file: an nccl.conf written by rocetune would not carry them.",
    fix="add them with --set if they belong to a plugin or the job",
    source="NVIDIA/nccl v2.28.9-1 src/misc/param.cc (what libnccl reads)",
)

declare(
    id="local-rank-no-affinity", kind="rule", severity="warning",
    by=("local-rank",),
    title="No CPU affinity known for a GPU",
    checks="Whether the GPU of the requested local rank has local CPUs in the Features.",
    reads="/sys/bus/pci/devices/BDF/local_cpulist, nvidia-smi topo -m (CPU Affinity).",
    why="Without it a rank cannot be bound next to its GPU and NIC; NCCL's proxy threads then "
        "cross the CPU interconnect.",
    fix="probe the host itself (a container may hide NUMA); bind ranks by hand",
    source="NCCL user guide, NCCL_IGNORE_CPU_AFFINITY",
)

declare(
    id="qos-plan-questionable", kind="rule", severity="warning",
    by=("traffic-class",),
    title="The QoS plan puts RoCE in a questionable class",
    checks="Whether the plan's data priority is lossless, data and CNPs have their own "
           "priorities, and some priority is lossless.",
    reads="The QoS plan (/etc/rocetune/qos.yml or --qos).",
    why="RoCE data outside the lossless priorities drops under congestion; CNPs that queue "
        "behind data slow DCQCN down.",
    fix="correct the plan (docs/qos.md) and apply it with the roce_qos role",
    source="NVIDIA, 'RoCE configuration for ConnectX' (PFC on the RoCE priority, CNP priority 6)",
)

declare(
    id="tc-not-derived", kind="rule", severity="warning",
    by=("traffic-class",),
    title="The NICs' QoS gives no traffic class",
    checks="Where the NICs show QoS state and no QoS plan is given: whether every RoCE port "
           "trusts one field and has one PFC priority in common.",
    reads="`mlnx_qos -i IF` or `dcb` on each compute port (the Features `qos.interfaces`).",
    why="Without a common lossless class NCCL_IB_TC is left unset and RoCE goes out in traffic "
        "class 0: lossy wherever the switches give it no PFC. One rail with PFC off is enough.",
    fix="apply the fabric's QoS to every rail (the roce_qos role), or give the plan with --qos",
    source="NVIDIA/nccl v2.26.2 src/transport/net_ib.cc (NCCL_IB_TC, NCCL_IB_SL); IEEE 802.1Qbb",
)

declare(
    id="gid-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="The RoCE GID could not be planned with certainty",
    checks="Whether every RoCE compute port has a RoCE v2 GID of one address family, readable "
           "types, a GID table that holds what the Features list, and one GID that is plainly "
           "the compute address.",
    reads="/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types (the Features `rdma`).",
    why="NCCL then picks a GID itself, or the link-local one on older releases: connections "
        "fail or go unrouted.",
    fix="give every compute netdev its IPv4 address; or find the index with show_gids and pass "
        "--set NCCL_IB_GID_INDEX=N",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc ncclIbGetGidIndex; NCCL #1333, #1573, #2157",
)

declare(
    id="gid-range-uncertain", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="NCCL_IB_ADDR_RANGE cannot single out the compute addresses",
    checks="Whether one address range holds each compute port's address and no other GID that "
           "comes first.",
    reads="The compute ports' GID tables and addresses.",
    why="NCCL takes the first RoCE v2 GID inside the range: another address there wins.",
    fix="give the compute ports their own subnets, or pass --set NCCL_IB_GID_INDEX=N",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc (NCCL_IB_ADDR_RANGE)",
)

declare(
    id="gid-nccl-too-old", kind="rule", severity="warning",
    by=("nccl-ib-gid-index",),
    title="The NCCL release predates GID auto-selection",
    checks="Whether the NCCL planned for reads NCCL_IB_ADDR_FAMILY and NCCL_IB_ADDR_RANGE (2.21.5 and later).",
    reads="The NCCL release (the Features `kernel.nccl`).",
    why="Older releases use GID index 0 (link-local) unless NCCL_IB_GID_INDEX is set.",
    fix="upgrade NCCL, or pass --nccl-version with the release the jobs load",
    source="NVIDIA/nccl v2.21.5-1 release notes (RoCE GID auto-selection)",
)

declare(
    id="gid-index-odd-port", kind="rule", severity="error",
    by=("nccl-ib-gid-index",),
    title="One RoCE port's GID sits at another index, and this NCCL pins one index for all",
    checks="Below NCCL 2.21.5, whether the first IPv4 RoCE v2 GID sits at one index on every "
           "compute port; the index most ports share is pinned, and each port where it is not is "
           "named.",
    reads="/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types; the NCCL release planned for.",
    why="NCCL before 2.21.5 queries the one NCCL_IB_GID_INDEX on every device and has no "
        "NCCL_IB_ADDR_RANGE: on the odd port the pinned index is a link-local, RoCE v1 or empty "
        "GID, and connections over that rail fail.",
    fix="give the odd port its address back at the index the others use (remove and re-add the "
        "addresses in the same order), or run the jobs with NCCL 2.21.5 or later",
    source="NVIDIA/nccl v2.20.5-1 src/transport/net_ib.cc:80 (IB_GID_INDEX), :838 and :1028 "
           "(ncclParamIbGidIndex() queried on every device); NCCL_IB_ADDR_RANGE from v2.21.5-1 "
           "src/transport/net_ib.cc:131",
)

declare(
    id="topo-file-uncertain", kind="rule", severity="warning",
    by=("nccl-topo-file",),
    title="The NCCL topology file could not be planned cleanly",
    checks="On a host whose PCI tree is flattened (a VM): whether one topology file can be "
           "chosen or generated that NCCL loads and that pairs each GPU with its NIC.",
    reads="The topology files found or declared (the Features `declared.topology_files`), the "
          "PCI addresses of GPUs and NICs.",
    why="Without the file NCCL sees every GPU-NIC pair as far apart and does not use GPUDirect "
        "RDMA at its default level.",
    fix="install the cloud image's topology file, or set NCCL_TOPO_FILE to the one of this VM's shape",
    source="NVIDIA/nccl v2.28.9-1 src/graph/xml.cc (NCCL_TOPO_FILE)",
)

