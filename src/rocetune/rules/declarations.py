"""The checks rules leave through ctx.finding: something a decision found that a person should act
on. The rule's own page (docs/rules/<rule>.md) says how it decides; the check's page what to do."""

from __future__ import annotations

from ..checks import declare

_OVERRIDE = ("pass --nccl-version X.Y.Z (role variable rocetune_env_nccl_version) with the NCCL the "
             "jobs load (python -c 'import torch; print(torch.cuda.nccl.version())')")
_NCCL_LIBS = ("The NCCL libraries the probe found: system library directories, /etc/ld.so.cache, "
              "Python environments' nvidia-nccl wheels and conda envs (the Features `kernel.nccl`).")

declare(
    id="declared-contradicted", kind="rule", severity="warning",
    by=("nccl-ib-hca", "nccl-ib-gid-index", "traffic-class"),
    title="A value the host's owner declared is contradicted by the host",
    checks="A declared NCCL_IB_HCA, NCCL_IB_GID_INDEX or NCCL_IB_TC (in /etc/nccl.conf or a "
           "vendor's env script) against the host's evidence: the ports it selects, a RoCE v2 "
           "GID on every compute port, the DSCP's priority having PFC on the NICs.",
    reads="The declared files (the Features `declared.files`) and the facts the rule behind the key "
          "reads: RDMA ports and their state, GID tables, the NICs' recorded QoS (mlnx_qos).",
    why="rocetune keeps every declared value (vendors encode what no probe sees), so a value that "
        "selects a port that is down, a GID that is not RoCE v2, or a class without PFC stays in "
        "force until someone replaces it.",
    fix="correct the declaration where it lives, or replace it with --set KEY=VALUE "
        "(rocetune_env_set) once the evidence is confirmed",
    source="NVIDIA/nccl v2.30.7-1 src/misc/param.cc (config files: setenv without overwrite, so "
           "the first declaration wins); the deciding rule's page names its NCCL source.",
)

declare(
    id="declared-topo-missing", kind="rule", severity="warning",
    by=("declared-settings",),
    title="A declared NCCL_TOPO_FILE does not exist",
    checks="The file a declared NCCL_TOPO_FILE names.",
    reads="The declared NCCL_TOPO_FILE (the Features `declared.topology_files[]`) and whether "
          "that path exists under the root.",
    why="NCCL only logs 'Could not open XML topology file' at INFO level and detects the topology "
        "itself: on a VM whose PCI tree is flattened, that silently loses the GPU-NIC pairing and "
        "GPUDirect RDMA the file was there to give.",
    fix="install the file (a cloud image's topology package, e.g. Azure's /opt/microsoft/ndv4/topo.xml) "
        "or remove the declaration so rule nccl-topo-file can plan one",
    source="NVIDIA/nccl v2.30.7-1 src/graph/xml.cc (ncclTopoGetXmlFromFile: a missing file is an "
           "INFO message, not an error).",
)

declare(
    id="qos-plan-nic-mismatch", kind="rule", severity="warning",
    by=("traffic-class",),
    title="A NIC's QoS does not match the QoS plan",
    checks="Each compute NIC's recorded trust mode, DSCP-to-priority map and PFC priorities "
           "against the QoS plan's data class.",
    reads="The recorded `mlnx_qos -i <if>` output per interface (the Features `qos.interfaces`) "
          "and the QoS plan (--qos, /etc/rocetune/qos.yml, or the default).",
    why="NCCL_IB_TC marks RoCE data with the plan's DSCP; a NIC that trusts PCP, maps that DSCP to "
        "another priority or has no PFC on it sends RoCE lossy: drops become go-back-N "
        "retransmissions and timeouts under load.",
    fix="apply the QoS plan to the NIC with the roce_qos role (trust dscp, the DSCP map, PFC on "
        "the data priority), and the same plan on the switches",
    source="NVIDIA MLNX_OFED documentation, mlnx_qos; NVIDIA/nccl v2.28.9-1 "
           "src/transport/net_ib.cc (NCCL_IB_TC sets the traffic class of each queue pair).",
)

declare(
    id="nccl-not-found", kind="rule", severity="info",
    by=("nccl-version",),
    title="No NCCL library found on the host",
    checks="Whether any NCCL library is on the host for the version-gated rules to plan for.",
    reads=_NCCL_LIBS,
    why="Version-gated settings (GID index, QP split, IB timeout, the peer-memory check) then "
        "take their safe side for an unknown release, which may set more than the jobs' NCCL needs.",
    fix=_OVERRIDE,
    source="NVIDIA/nccl release notes (per-release defaults); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-version-unreadable", kind="rule", severity="warning",
    by=("nccl-version",),
    title="An NCCL library's version could not be read",
    checks="Each NCCL library found: whether its own 'NCCL version' string was read (a file name's or "
           "wheel METADATA's version is kept as a claim, never counted alone).",
    reads=_NCCL_LIBS,
    why="A library of unknown version may be older than every other one found; the rules then "
        "plan for an unknown release, each on its safe side.",
    fix=_OVERRIDE,
    source="NVIDIA/nccl v2.28.9-1 src/init.cc:603 (VERSION_STRING, the 'NCCL version X.Y.Z' "
           "string in the library); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-other-user-library", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when libraries outside other users' control were found too (those are planned for)",
    by=("nccl-version",),
    title="An NCCL library in a place another user controls",
    checks="Each NCCL library found: under /home/<user>, or below a directory (or in a file) writable by a "
           "group or by everyone (not a sticky directory), or owned by a user other than root.",
    reads=_NCCL_LIBS + " Their paths, and the owners and modes of the directories above them (the live "
          "host's, or what a capture recorded).",
    why="Such a library is what that user's jobs load, and anyone who can write there can change it: "
        "planning the whole host's env from it would let one user's choice (or a planted file) set "
        "everyone's release-gated settings.",
    fix="plan for the system's NCCL with --nccl-version X.Y.Z (rocetune_env_nccl_version), or install "
        "NCCL where only root writes; a user's own env can be planned from his probe",
    source="docs/rules/nccl-version.md; rocetune.probe.sources.nccl_libs (controlled_by).",
)

declare(
    id="nccl-not-a-library", kind="rule", severity="info",
    by=("nccl-version",),
    title="A file named like an NCCL library is none",
    checks="Files named libnccl.so*, libnccl-<kind>*.so* that are not ELF shared objects (their first 20 bytes).",
    reads=_NCCL_LIBS,
    why="A name is no version: a truncated copy, a placeholder or a planted file named libnccl.so.2.12.12 "
        "must not decide the release the host is planned for.",
    fix="remove the file, or replace it with the library it is named after",
    source="ELF header (e_ident magic, class, byte order; e_type ET_DYN); docs/rules/nccl-version.md.",
)

declare(
    id="nccl-search-bounded", kind="rule", severity="warning",
    by=("nccl-version",),
    title="The NCCL library search stopped at its bound",
    checks="How many library files the search looked at, the bytes it read inside them and its time.",
    reads=_NCCL_LIBS,
    why="A directory full of files named like libraries (or sparse ones) must not make a plan take "
        "minutes; what the search did not read is planned for as an unknown release.",
    fix="remove the stray files, or give the release with --nccl-version X.Y.Z",
    source="rocetune.probe.sources.nccl_libs (MAX_LIBRARIES, SCAN_BUDGET, SCAN_SECONDS).",
)

declare(
    id="nccl-versions-differ", kind="rule", severity="info",
    by=("nccl-version",),
    title="Several NCCL releases on the host",
    checks="Whether the NCCL libraries found are of different releases.",
    reads=_NCCL_LIBS,
    why="A PyTorch job loads its wheel's NCCL, an MPI job what the loader finds: the env is "
        "planned for the lowest release so it holds for all of them, which may leave a newer "
        "release's better default unused.",
    fix=_OVERRIDE + " to plan for one release; or align the releases",
    source="NVIDIA/nccl release notes; PyTorch wheels depend on nvidia-nccl-cu11/cu12/cu13.",
)

declare(
    id="nccl-wheel-not-seen", kind="rule", severity="info",
    by=("nccl-version",),
    title="Only the system's NCCL was found",
    checks="Whether any Python environment or conda env on the host carries its own NCCL.",
    reads=_NCCL_LIBS,
    why="PyTorch jobs load their wheel's NCCL, often another release than the system's; one in a "
        "place not searched or in a container image cannot be seen from here, and the plan may be "
        "for the wrong release.",
    fix=_OVERRIDE + "",
    source="PyTorch's nvidia-nccl-cu12 wheel dependency (site-packages/nvidia/nccl/lib/libnccl.so.2); "
           "docs/rules/nccl-version.md.",
)

_GDR_SOURCE = ("NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:872-874 and v2.30.7-1 "
               "src/transport/net_ib/gdr.cc:18-20 (the peer-memory paths each release checks); "
               "NCCL #1676 (GDR off: 180 -> 10 GB/s all-reduce)")

declare(
    id="gdr-unavailable", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when no GPU-NIC pair is PIX/PXB: NCCL would not use GPUDirect RDMA there "
                  "at its default level anyway",
    by=("gpudirect-rdma",),
    title="GPUDirect RDMA is unavailable",
    checks="Whether NCCL can register GPU memory with the NICs: a peer-memory path the planned "
           "release checks, or every DMA-BUF condition (open GPU kernel module, kernel >= 5.12, "
           "rdma-core >= 34, NCCL >= 2.13.4).",
    reads="/sys/kernel/mm/memory_peers/*/version, /sys/module/nvidia_peermem/version, "
          "/proc/driver/nvidia/version, the kernel release, the libibverbs file name, the NCCL "
          "release planned for, and the GPU-NIC path types.",
    why="Without GPUDirect RDMA every transfer is staged through host memory: NCCL #1676 measured "
        "all-reduce falling from 180 to 10 GB/s.",
    fix="load nvidia-peermem and persist it in /etc/modules-load.d/ (the rdma_core role), or use "
        "the open GPU kernel modules with DMA-BUF",
    source=_GDR_SOURCE + "; v2.30.7-1 src/init.cc (NCCL_DMABUF_ENABLE).",
)

declare(
    id="gdr-not-detected", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when no GPU-NIC pair is PIX/PXB",
    by=("gpudirect-rdma",),
    title="Peer memory is registered where this NCCL does not look",
    checks="Whether the peer-memory module registers at a path the planned NCCL release checks "
           "(releases up to 2.22.3 do not check /sys/module/nvidia_peermem/version).",
    reads="/sys/kernel/mm/memory_peers/*/version, /sys/module/nvidia_peermem/version and the NCCL "
          "release planned for.",
    why="NCCL then disables GPUDirect RDMA although the module is loaded: NCCL #1676 measured "
        "all-reduce falling from 180 to 10 GB/s.",
    fix="use an NCCL release that checks the path (2.23.4 or later), or DMA-BUF",
    source=_GDR_SOURCE + "; NCCL #1537, #1939.",
)

declare(
    id="gdr-peermem-unregistered", kind="rule", severity="warning",
    by=("gpudirect-rdma",),
    title="nvidia_peermem is loaded but registered nowhere",
    checks="Whether a loaded (or built-in) nvidia_peermem module left any of the peer-memory "
           "paths NCCL checks.",
    reads="/proc/modules, modules.builtin, /sys/kernel/mm/memory_peers/*/version and "
          "/sys/module/nvidia_peermem/version.",
    why="A module built against another OFED or driver than the one running registers no peer "
        "memory client: NCCL finds none of its paths and disables GPUDirect RDMA.",
    fix="rebuild the NVIDIA driver (or its DKMS nvidia-peermem) after installing OFED, or use DMA-BUF",
    source=_GDR_SOURCE + ".",
)

declare(
    id="rdma-ports-share-subnet", kind="rule", severity="warning",
    also=("info",),
    severity_note="info when the ports' ARP sysctls are not in the Features, so they cannot be judged",
    by=("arp-isolation",),
    title="RDMA ports share a subnet with ARP at kernel defaults",
    checks="RDMA ports whose interfaces have addresses in one IPv4 subnet: their arp_ignore, "
           "arp_announce and rp_filter sysctls.",
    reads="The interfaces' addresses (`ip -j addr`) and /proc/sys/net/ipv4/conf/<if>/{arp_ignore,"
          "arp_announce,rp_filter} (the Features `net.interfaces`, `kernel.sysctl`).",
    why="With kernel defaults any port answers ARP for every address of the host, so peers send "
        "one port's RoCE traffic to another: NCCL sees one NIC carrying the load, or cross-rail "
        "failures (NCCL #1109, #1348).",
    fix="set arp_ignore=1, arp_announce=2, rp_filter=2 per interface and a routing table per port "
        "(the roce_net role, roce_net_arp_isolation); or give each rail its own subnet",
    source="NCCL #1109, #1348; Linux Documentation/networking/ip-sysctl.rst (arp_ignore, "
           "arp_announce, rp_filter).",
)

_KNOWN = ("The NCCL release planned for (rule nccl-version) against the release table "
          "(rocetune.nccl.releases, which `rocetune explain` cites), and the host facts named.")
for _id, _sev, _title, _checks, _why, _fix, _fact in (
    ("nccl-ece-roce", "warning", "This NCCL's ECE exchange can slow RoCE down",
     "RoCE compute ports with an NCCL from 2.19.1 up to 2.26.3.",
     "NCCL 2.26.3's release notes fix 'the exchange of enhanced connection establishment (ECE) options to "
     "address potential slowdowns on networks utilizing RoCE'; NVIDIA/nccl#1403 saw unstable bandwidth.",
     "NCCL_IB_ECE_ENABLE=0 (2.23.4 and later), or NCCL 2.26.3 or later", "ece-roce-slowdown"),
    ("nccl-roce-port-recovery", "warning", "Port recovery on RoCE may not complete",
     "A declared NCCL_IB_RESILIENCY_PORT_RECOVERY=1 on RoCE ports with NCCL 2.30.3 or later: a warning up to "
     "2.31.2; from 2.31.2 info, or a warning where one HCA has several chosen ports.",
     "After a port flap the kernel may register the port's GIDs at other indexes; up to 2.31.2 NCCL reuses "
     "the index it cached at connect time, so the recovery's queue pairs do not come up and bandwidth stays "
     "degraded. 2.31.2 reads the GID again on a GID-change event, but on an HCA with several ports the event "
     "may be taken by another port's thread (NVIDIA/nccl#1819).",
     "NCCL 2.31.2 or later; before it, leave port recovery off on RoCE or pin NCCL_IB_GID_INDEX on a GID "
     "table that does not move", "roce-port-recovery"),
    ("nccl-mnnvl-stack", "warning", "Unlimited stack size on a multi-node NVLink system",
     "The probing process's soft stack limit on hosts with GB200, GB300 or GH200 GPUs.",
     "With 'ulimit -s unlimited' glibc gives new threads 2 MiB stacks, less than NCCL's background threads "
     "need on MNNVL systems: crashes (NCCL 2.27.6 release notes).",
     "ulimit -s 8192 in the job's launcher, propagated to every node", "mnnvl-stack-unlimited"),
    ("nccl-c2c-gdr-off", "warning", "GPUDirect RDMA off by default on a C2C superchip",
     "Grace superchips (GB200, GB300, GH200) with RDMA ports and an NCCL before 2.27.3.",
     "Before 2.27.3 NCCL disables GPUDirect RDMA for NICs reached through the Grace CPU; "
     "NVIDIA/nccl#1579 measured all-reduce 79.7 -> 96.1 GB/s with it on.",
     "NCCL_NET_GDR_C2C=1 (2.26.2 and later) or NCCL_NET_GDR_LEVEL=SYS, or NCCL 2.27.3 or later",
     "c2c-gdr-off-by-default"),
    ("nccl-gin-peer-memory", "info", "GPU-Initiated Networking cannot register GPU memory here",
     "Hosts whose only peer-memory module is the legacy nv_peer_mem, with NCCL 2.28.7 or later.",
     "GIN's GDAKI transport needs nvidia-peermem or DMA-BUF (kernel >= 6.1); jobs using NCCL's device API "
     "fail to register memory.",
     "load nvidia-peermem (the GPU driver's module) instead of nv_peer_mem, or use DMA-BUF on a kernel "
     ">= 6.1 with the open GPU module", "gin-needs-peermem-or-dmabuf"),
    ("nccl-ignore-net-mismatch", "info", "NCCL runs on when ranks see different numbers of NICs",
     "RDMA hosts with NCCL 2.30.3 or later and NCCL_IGNORE_NET_MISMATCH not declared 0.",
     "A rank that cannot open one NIC (permissions, a container without the device, a port down) no longer "
     "fails init: the job runs and can hang without an error (NVIDIA/nccl#2428).",
     "run preflight ('rocetune fleet validate --tests nccl' sets NCCL_IGNORE_NET_MISMATCH=0); jobs that "
     "must fail fast can set it too", "ignore-net-mismatch-default-on"),
):
    from ..nccl.releases import fact as _release_fact

    _also = ("info",) if _id == "nccl-roce-port-recovery" else ()
    _note = ("info from 2.31.2 (which refreshes a port's GID on a GID-change event), unless one HCA has "
             "several chosen ports" if _also else "")
    declare(
        id=_id, kind="rule", severity=_sev,
        also=_also,
        severity_note=_note,
        by=("nccl-known-issues",),
        title=_title,
        checks=_checks,
        reads=_KNOWN,
        why=_why,
        fix=_fix,
        source=f"{_release_fact(_fact).source} (release table entry `{_fact}`: "
               f"{_release_fact(_fact).span()})",
    )


for _id, _sev, _also, _title, _checks, _why, _fix in (
    ("nccl-env-plugin", "warning", (), "NCCL loads an env plugin",
     "An env plugin (libnccl-env.so, or what NCCL_ENV_PLUGIN names) where NCCL's dlopen finds it, for NCCL "
     "2.28.7 and later.",
     "The env plugin answers every variable NCCL reads: the env file and nccl.conf rocetune writes may not be "
     "what NCCL uses, and no NCCL log line says which value came from where.",
     "check what the plugin returns for the plan's variables (doctor --nccl-log shows what NCCL read), or set "
     "NCCL_ENV_PLUGIN=none for jobs that must run with the plan"),
    ("nccl-net-plugin", "warning", ("info",), "A net plugin takes the traffic the plan gives NCCL's IB transport",
     "A net plugin NCCL loads (libnccl-net.so by default, or what NCCL_NET_PLUGIN names) on a host whose plan runs "
     "NCCL over its own IB/RoCE transport.",
     "The plugin carries every network byte: NCCL_IB_* settings apply only if it reads them, and a plugin "
     "present on some nodes only has hung jobs (NVIDIA/nccl#1634).",
     "keep NCCL_NET_PLUGIN=none from the env (info: the env sets it), or plan for the plugin and --set "
     "NCCL_NET_PLUGIN=<path>"),
    ("nccl-plugin-other-user", "warning", (), "An NCCL plugin in a place another user controls",
     "Each NCCL plugin found: under /home/<user>, below a directory writable by a group or everyone, or owned "
     "by another user than root.",
     "A plugin is code NCCL runs inside every job that loads it; whoever can write it runs code in everyone's jobs.",
     "install plugins where only root writes, or keep them out of the loader's path (LD_LIBRARY_PATH, "
     "ld.so.cache) of other users' jobs"),
):
    declare(
        id=_id, kind="rule", severity=_sev,
        also=_also,
        severity_note="info where the env sets NCCL_NET_PLUGIN=none" if _also else "",
        by=("nccl-plugins",),
        title=_title,
        checks=_checks,
        reads="The plugins the probe found (Features `kernel.nccl.plugins`, `plugin_env`) and the "
              "NCCL_<KIND>_PLUGIN the host's owner declared.",
        why=_why,
        fix=_fix,
        source="NVIDIA/nccl v2.30.7-1 src/plugin/plugin_open.cc:79-125 (names tried), src/plugin/net.cc"
               ":258-301 (NCCL_NET_PLUGIN, 'none'), src/plugin/env.cc:40-48 (NCCL_ENV_PLUGIN); "
               "docs/rules/nccl-plugins.md.",
    )
