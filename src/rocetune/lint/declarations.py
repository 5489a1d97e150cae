"""The checks of `rocetune lint` (and of `--set`/`--config` overrides): settings in env files,
nccl.conf, job scripts and notes that do not do what their author meant."""

from __future__ import annotations

from ..checks import declare

_SETTING = "The setting's name and value as the file's consumer reads them (line, key, value)."
_CATALOG = ("rocetune's NCCL catalog (src/rocetune/nccl/data/nccl_vars.json): the names, kinds and "
            "limits NCCL reads, and the names it used to read")
_PARAM = ("NVIDIA/nccl v2.28.9-1 src/include/param.h (NCCL_PARAM) and src/misc/param.cc: NCCL "
          "reads each variable it knows by name; any other name is ignored without a message")
_CONF = ("NVIDIA/nccl v2.28.9-1 src/misc/param.cc:36-67: each line of $NCCL_CONF_FILE (or "
         "~/.nccl.conf), then /etc/nccl.conf, is split at the first '=' and set with "
         "setenv(name, value, 0), nothing trimmed or unquoted")
_LIST = ("NVIDIA/nccl v2.28.9-1 src/misc/utils.cc parseStringList/matchIfList: '^' excludes, '=' "
         "asks for exact names, otherwise each entry is a prefix")
_DOCKER = ("Docker documentation, `docker run --env-file`: one NAME=value per line, the value taken "
           "verbatim")
_DEEPSPEED = ("microsoft/DeepSpeed deepspeed/launcher/runner.py: .deepspeed_env lines are split at "
              "'=' and exported to every node")
_K8S = "Kubernetes API reference, ConfigMap: `data` is a map of string to string"
_BASH = "GNU Bash Reference Manual: Definitions (name), Quoting, Bourne Shell Builtins (export)"
_QOS = ("The QoS plan (--qos FILE, or /etc/rocetune/qos.yml under --root): its data DSCP, ECN "
        "bits, CTS DSCP, trust mode and data priority.")
_QOS_SOURCE = ("NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:129 (NCCL_IB_TC is the queue pairs' "
               "traffic class: DSCP in the upper six bits, ECN in the lower two); RFC 2474 (DSCP), "
               "RFC 3168 (ECN)")
_HOST = ("The target host's RDMA devices, ports and interfaces from a Features document "
         "(--features FILE, or a probe of --root).")


# --- names ---------------------------------------------------------------------------------------
declare(
    id="nonexistent-name", kind="lint", severity="error",
    title="A name NCCL never read",
    checks="NCCL_* names that no NCCL release reads though they look plausible (NCCL_TOPOLOGY_AWARE, "
           "NCCL_IB_MTU, NCCL_IB_DSCP, NCCL_USE_ROCE).",
    reads=_SETTING,
    why="NCCL ignores the setting without a word, so what the author meant (an MTU, a DSCP) is "
        "never applied.",
    fix="use the variable the finding names, or remove the line",
    source=_PARAM + "; " + _CATALOG + ".",
)

declare(
    id="misspelled-name", kind="lint", severity="error",
    title="A misspelled NCCL variable",
    checks="NCCL_* names that are a known misspelling (NCCL_IB_RETRY_COUNT for NCCL_IB_RETRY_CNT) or one "
           "or two edits from a real name (NCCL_MIN_CHANNELS for NCCL_MIN_NCHANNELS).",
    reads=_SETTING,
    why="NCCL ignores a name it does not know: the setting silently does nothing.",
    fix="rename it as the finding suggests",
    source=_PARAM + "; " + _CATALOG + ".",
)

declare(
    id="removed-name", kind="lint", severity="error",
    title="A variable NCCL removed or renamed",
    checks="NCCL_* names earlier releases read and current ones do not (NCCL_IB_GDR_LEVEL, "
           "NCCL_IB_CUDA_SUPPORT, NCCL_LL_THRESHOLD, NCCL_TREE_THRESHOLD ...).",
    reads=_SETTING,
    why="The setting has no effect on the NCCL the job loads; its replacement, if any, is unset.",
    fix="use the replacement the finding names (NCCL_NET_GDR_LEVEL for NCCL_IB_GDR_LEVEL), or remove it",
    source="NVIDIA/nccl release notes (the renames and removals); " + _CATALOG + ".",
)

declare(
    id="pytorch-name", kind="lint", severity="warning",
    title="A PyTorch setting under its old NCCL_ name",
    checks="NCCL_ASYNC_ERROR_HANDLING, NCCL_BLOCKING_WAIT and other PyTorch ProcessGroupNCCL settings "
           "in NCCL's namespace.",
    reads=_SETTING,
    why="libnccl never read them; current PyTorch reads the TORCH_NCCL_* names and only warns about "
        "the old ones, which later releases drop.",
    fix="rename it to the TORCH_NCCL_* name the finding gives",
    source="PyTorch torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp (TORCH_NCCL_ASYNC_ERROR_HANDLING, "
           "TORCH_NCCL_BLOCKING_WAIT and their deprecated NCCL_ aliases).",
)

declare(
    id="unknown-name", kind="lint", severity="warning",
    title="An NCCL_ name this release does not read",
    checks="NCCL_* names that neither the catalog's NCCL release, a known plugin, nor a near spelling "
           "accounts for.",
    reads=_SETTING,
    why="It may be a plugin's, an older or newer release's, or a typo: NCCL itself ignores it.",
    fix="check the name against the NCCL documentation of the release the job loads",
    source=_PARAM + "; " + _CATALOG + ".",
)

declare(
    id="plugin-name", kind="lint", severity="info",
    title="A variable of an NCCL plugin",
    checks="Names read by a net, tuner or profiler plugin (NCCL_GPUDIRECTTCPX_*, NCCL_FASTRAK_*, "
           "NCCL_OFI_*, NCCL_TUNER_*), not by libnccl.",
    reads=_SETTING,
    why="It works only where that plugin is loaded; rocetune does not check its value.",
    fix="nothing where the plugin is installed; otherwise remove it",
    source="aws/aws-ofi-nccl (NCCL_OFI_*), GoogleCloudPlatform/nccl-plugin-gpudirecttcpx "
           "(NCCL_GPUDIRECTTCPX_*), NVIDIA/nccl ext-tuner (NCCL_TUNER_*).",
)

# --- values --------------------------------------------------------------------------------------
declare(
    id="not-a-number", kind="lint", severity="error",
    title="An integer variable that is not a plain integer",
    checks="Values of integer variables: a whole string strtoll reads (decimal, 0x.. hex, 0.. octal).",
    reads=_SETTING,
    why="NCCL reads the number strtoll finds at the start and drops the rest: 4M becomes 4, abc 0.",
    fix="write a plain integer (0x.. for hex)",
    source="NVIDIA/nccl v2.28.9-1 src/misc/param.cc:84 (strtoll(str, nullptr, 0)).",
)

declare(
    id="out-of-range", kind="lint", severity="error",
    also=("warning",),
    severity_note="warning for NCCL_IB_TIMEOUT=0, which is accepted but disables the timeout",
    title="A value outside what NCCL accepts",
    checks="Integer values against the variable's range: NCCL_IB_TIMEOUT 0..31, NCCL_IB_RETRY_CNT 0..7, "
           "NCCL_IB_TC 0..255, NCCL_IB_SL 0..15, NCCL_SOCKET_NTHREADS 1..16 ...; NCCL_IB_TIMEOUT=0.",
    reads=_SETTING,
    why="Out of range, the verbs call fails or the value wraps into another one; NCCL_IB_TIMEOUT=0 "
        "turns the transport timeout off, so a lost peer hangs the job forever.",
    fix="use a value in the range the finding gives (NCCL_IB_TIMEOUT: NCCL's default 20, about 4 s, or more)",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:124-129 (IB_TIMEOUT, IB_RETRY_CNT, IB_TC) "
           "and src/transport/net_socket.cc:135 (MAX_THREADS 16); InfiniBand spec (5-bit local ACK "
           "timeout, 3-bit retry count).",
)

declare(
    id="bad-value", kind="lint", severity="error",
    title="A value NCCL does not recognise",
    checks="Enumerations (NCCL_IB_ADDR_FAMILY, NCCL_PROTO ...), path levels (LOC, PIX, PXB, PHB, SYS) "
           "and NCCL_IB_ADDR_RANGE (a CIDR range).",
    reads=_SETTING,
    why="NCCL falls back without an error: NCCL_IB_ADDR_FAMILY=inet6 silently means AF_INET, an "
        "NCCL_IB_ADDR_RANGE without '/' is ignored.",
    fix="use one of the values the finding lists",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:269-274 (NCCL_IB_ADDR_FAMILY), :291-296 "
           "(NCCL_IB_ADDR_RANGE) and src/graph/paths.cc:217 (ncclGetLevel).",
)

declare(
    id="legacy-level", kind="lint", severity="info",
    title="A path level written as a number",
    checks="NCCL_NET_GDR_LEVEL and NCCL_P2P_LEVEL given as 0..5 instead of a name.",
    reads=_SETTING,
    why="The numbers are NCCL's old scale (5 = SYS); they still work but read ambiguously.",
    fix="write the level's name (LOC, PIX, PXB, PHB, SYS)",
    source="NVIDIA/nccl v2.28.9-1 src/graph/paths.cc:216 (levelsOldToNew: LOC, PIX, PXB, PHB, SYS, SYS).",
)

declare(
    id="empty-value", kind="lint", severity="warning",
    title="A variable set to nothing",
    checks="NCCL_X= with no value.",
    reads=_SETTING,
    why="NCCL treats an empty value as unset: the line does nothing, which its author probably did "
        "not mean.",
    fix="remove the line or give a value",
    source="NVIDIA/nccl v2.28.9-1 src/misc/param.cc:82 (ncclLoadParam reads a value only when "
           "strlen(str) > 0: an empty one leaves the default).",
)

declare(
    id="ifname-ignored", kind="lint", severity="error",
    title="NCCL_SOCKET_IFNAME of one character",
    checks="NCCL_SOCKET_IFNAME values of length 0 or 1.",
    reads=_SETTING,
    why="NCCL uses the value only when it is longer than one character, so the sockets go over "
        "whatever interface NCCL picks itself.",
    fix="give the full interface name",
    source="NVIDIA/nccl v2.28.9-1 src/misc/socket.cc:363 (env && strlen(env) > 1).",
)

declare(
    id="prefix-match", kind="lint", severity="info",
    also=("warning",),
    severity_note="warning when the host at hand has devices the prefix selects besides the one named",
    title="Device or interface names matched as prefixes",
    checks="NCCL_IB_HCA and NCCL_SOCKET_IFNAME entries without '=': each is a prefix; with the host at "
           "hand, the extra devices a prefix selects.",
    reads=_SETTING,
    why="mlx5_1 also selects mlx5_10..mlx5_19, bond0 also bond0.2973: traffic may leave on devices "
        "the author did not name (NCCL #177).",
    fix="write '=' before the list for exact names",
    source=_LIST + "; NCCL #177, PR #236.",
)

declare(
    id="gloo-ifname-syntax", kind="lint", severity="error",
    title="GLOO_SOCKET_IFNAME written in NCCL's syntax",
    checks="GLOO_SOCKET_IFNAME values starting with '=' or '^'.",
    reads=_SETTING,
    why="Gloo takes exact interface names split on ',': '=eth0' names an interface called '=eth0', "
        "and PyTorch fails to create the Gloo process group.",
    fix="write the plain interface names",
    source="PyTorch torch/csrc/distributed/c10d (GLOO_SOCKET_IFNAME: one Gloo device per ','-separated "
           "interface name).",
)

declare(
    id="forced-algorithm", kind="lint", severity="info",
    title="A forced NCCL algorithm or protocol",
    checks="NCCL_ALGO and NCCL_PROTO set to a fixed choice.",
    reads=_SETTING,
    why="The choice applies to every collective and message size; NCCL otherwise tunes per size, "
        "and a setting that helped one benchmark can slow the rest.",
    fix="keep it only if a benchmark on this fabric shows a gain",
    source="NCCL documentation, Environment Variables (NCCL_ALGO, NCCL_PROTO); NCCL #754 (the tuning "
           "model moves between algorithms and protocols with message size, node count and bandwidth).",
)

declare(
    id="gid-index-pinned", kind="lint", severity="info",
    also=("warning",),
    severity_note="warning for index 0 (the link-local GID)",
    title="A pinned RoCE GID index",
    checks="NCCL_IB_GID_INDEX set to a number; 0 is a warning: in the GID table of every RoCE port (mlx5, "
           "rxe, bnxt_re) index 0 is the link-local fe80 GID, RoCE v1 on mlx5, which does not cross a "
           "router.",
    reads=_SETTING,
    why="Right while every node's GID table has that layout; per-pod tables in Kubernetes differ, "
        "and NCCL 2.21.5 and later select the IPv4 RoCE v2 GID themselves (NCCL #718, #890).",
    fix="leave it unset on NCCL >= 2.21.5; otherwise derive it per node (rule nccl-ib-gid-index)",
    source="NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc:80 (IB_GID_INDEX default -1) and "
           "ncclIbGetGidIndex; v2.20.5-1 net_ib.cc:80 (default 0, the link-local GID); Linux "
           "drivers/infiniband/core/roce_gid_mgmt.c (the default GIDs from the netdev's MAC come first); "
           "NCCL #718, #890.",
)

declare(
    id="socket-threads-product", kind="lint", severity="error",
    title="Too many sockets per connection",
    checks="NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD in one file.",
    reads=_SETTING,
    why="NCCL allows at most 64 sockets per connection and cuts the count down, so the setting does "
        "not give what it asks for.",
    fix="lower one of them so the product is 64 or less",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_socket.cc:134 and :330-331 (MAX_SOCKETS 64).",
)

declare(
    id="ib-vars-ignored", kind="lint", severity="warning",
    title="NCCL_IB_* settings beside NCCL_IB_DISABLE=1",
    checks="NCCL_IB_DISABLE=1 and other NCCL_IB_* variables in one file.",
    reads=_SETTING,
    why="With the verbs transport off, the NCCL_IB_* settings do nothing: either the disable or the "
        "tuning is a mistake.",
    fix="drop the NCCL_IB_* settings, or drop NCCL_IB_DISABLE",
    source="NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:507 (NCCL_IB_DISABLE).",
)

declare(
    id="duplicate", kind="lint", severity="warning",
    title="A variable set twice with different values",
    checks="Names set more than once in one scope of a file.",
    reads=_SETTING,
    why="Only one value takes effect: the first in nccl.conf (setenv without overwrite), the last "
        "in a script; the other line misleads whoever reads the file.",
    fix="keep one: the message says which value takes effect",
    source=_CONF + ".",
)

declare(
    id="dynamic-value", kind="lint", severity="info",
    title="A value from shell expansion or a template",
    checks="Values that depend on the shell ($VAR, $(cmd), backticks, ~) or a template placeholder ({{ x }}).",
    reads=_SETTING,
    why="The value is known only when the file is used, so it is not checked.",
    fix="nothing here; lint the rendered file to check the value",
    source="POSIX Shell Command Language, 2.6 Word Expansions.",
)

declare(
    id="ucx-port-missing", kind="lint", severity="warning",
    also=("error",),
    severity_note="error when the host at hand has an RDMA device of that name",
    title="An RDMA device in UCX_NET_DEVICES without its port",
    checks="UCX_NET_DEVICES entries that name an RDMA device (mlx5_*, irdma*, bnxt_re*, efa*, rxe* ..., "
           "or any RDMA device of the host at hand) without ':port'.",
    reads=_SETTING,
    why="UCX lists RDMA devices as device:port; a bare name selects only a network interface of "
        "that name, so UCX does not use the RDMA device.",
    fix="write device:port (mlx5_0:1)",
    source="OpenUCX documentation, UCX_NET_DEVICES (`ucx_info -d` lists RDMA devices as device:port).",
)

# --- QoS and the host -----------------------------------------------------------------------------
declare(
    id="tc-contradicts-qos", kind="lint", severity="error",
    title="A traffic class off the QoS plan",
    checks="NCCL_IB_TC, NCCL_GIN_IB_TC (2.30.7+: GPU-Initiated Networking's class; -1 takes NCCL_IB_TC's) and "
           "UCX_IB_TRAFFIC_CLASS (DSCP = value >> 2) against the plan's data DSCP, "
           "NCCL_IB_FIFO_TC against its CTS DSCP, NCCL_IB_SL against its data priority under PCP trust.",
    reads=_SETTING + " " + _QOS,
    why="RoCE traffic marked for another class than the one with PFC goes lossy: drops become "
        "retransmissions and timeouts under load.",
    fix="set the value the finding gives (from the QoS plan)",
    source=_QOS_SOURCE + ".",
)

declare(
    id="tc-ecn-differs", kind="lint", severity="warning",
    title="A traffic class with other ECN bits than the QoS plan",
    checks="NCCL_IB_TC, NCCL_GIN_IB_TC and UCX_IB_TRAFFIC_CLASS whose DSCP matches the plan but whose ECN bits "
           "(value & 3) do not.",
    reads=_SETTING + " " + _QOS,
    why="ECN-capable marking is what lets switches signal congestion to DCQCN; without it the "
        "fabric falls back to PFC pauses alone.",
    fix="set the value the finding gives (from the QoS plan)",
    source=_QOS_SOURCE + ".",
)

declare(
    id="tc-lossy-on-nics", kind="lint", severity="warning",
    title="A traffic class the host's NICs carry without PFC",
    checks="Without a QoS plan: NCCL_IB_TC, NCCL_GIN_IB_TC and UCX_IB_TRAFFIC_CLASS against the QoS state the "
           "host's RoCE ports recorded (mlnx_qos or dcb): under DSCP trust, the priority the value's DSCP maps to "
           "must have PFC on.",
    reads=_SETTING + " " + _HOST,
    why="RoCE traffic in a class without PFC goes lossy: drops become retransmissions and timeouts under "
        "load. rule traffic-class warns of the same for the env it plans.",
    fix="use the DSCP the NICs give a PFC priority, or apply the fabric's QoS plan (roce_qos role)",
    source="NVIDIA MLNX_OFED documentation, mlnx_qos (trust dscp, dscp2prio, pfc).",
)

declare(
    id="hca-selects-non-rail", kind="lint", severity="error",
    title="NCCL_IB_HCA selects ports that are not compute rails",
    checks="With the host at hand: the ACTIVE ports NCCL_IB_HCA selects (a bare prefix such as `mlx5` "
           "selects every device whose name starts with it, a `^` list every port it does not name) "
           "against the compute rails rocetune plans there; each other port is named with why it is not "
           "a rail (the front end, a storage NIC, no address).",
    reads=_SETTING + " " + _HOST,
    why="NCCL uses every ACTIVE port the list selects: the job's traffic goes out on the management "
        "bond or a storage NIC too, and a port without a routable GID fails its connections.",
    fix="name the rails exactly ('=mlx5_0:1,...', what `rocetune env` writes)",
    source=_LIST + "; NVIDIA/nccl v2.28.9-1 src/transport/net_ib.cc:704-740.",
)

declare(
    id="hca-not-found", kind="lint", severity="error",
    also=("warning",),
    severity_note="warning in a '^' exclude list, where a missing name excludes nothing",
    title="NCCL_IB_HCA names a device the host does not have",
    checks="Each NCCL_IB_HCA entry against the host's RDMA devices (exact or prefix, as NCCL matches).",
    reads=_SETTING + " " + _HOST,
    why="NCCL finds no matching device and, with no device left, falls back to TCP sockets "
        "('NET/IB : No device found').",
    fix="use a device the host has (`rocetune topo` lists them)",
    source=_LIST + "; v2.28.9-1 src/transport/net_ib.cc:826.",
)

declare(
    id="hca-port-not-found", kind="lint", severity="error",
    also=("warning",),
    severity_note="warning in a '^' exclude list",
    title="NCCL_IB_HCA names a port the device does not have",
    checks="The ':port' of NCCL_IB_HCA entries against the matched devices' ports.",
    reads=_SETTING + " " + _HOST,
    why="A port that does not exist matches nothing, so that device is not used.",
    fix="fix the port number",
    source=_LIST + ".",
)

declare(
    id="ucx-device-not-found", kind="lint", severity="error",
    title="UCX_NET_DEVICES names a device:port the host does not have",
    checks="Each device:port entry of UCX_NET_DEVICES against the host's RDMA devices and ports.",
    reads=_SETTING + " " + _HOST,
    why="UCX skips devices it does not find; with none left it fails to create its transports.",
    fix="use device:port of a device the host has",
    source="OpenUCX documentation, UCX_NET_DEVICES.",
)

declare(
    id="ifname-not-found", kind="lint", severity="error",
    title="An interface the host does not have",
    checks="Interfaces named in NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, OMPI_MCA_btl_tcp_if_include "
           "and UCX_NET_DEVICES against the host's interfaces.",
    reads=_SETTING + " " + _HOST,
    why="NCCL fails bootstrap with no usable socket interface; Gloo and Open MPI fail to start.",
    fix="use one of the interfaces the finding lists",
    source="NVIDIA/nccl v2.28.9-1 src/misc/socket.cc:361-366 (NCCL_SOCKET_IFNAME); Open MPI btl_tcp "
           "documentation (btl_tcp_if_include).",
)

# --- dialects ------------------------------------------------------------------------------------
declare(
    id="conf-quoted-value", kind="lint", severity="error",
    title="Quotes in nccl.conf",
    checks="nccl.conf values wrapped in quotes.",
    reads=_SETTING,
    why="NCCL keeps the quotes as part of the value: NCCL_SOCKET_IFNAME=\"eth0\" names an interface "
        "called \"eth0\" with its quotes.",
    fix="remove the quotes",
    source=_CONF + ".",
)

declare(
    id="conf-whitespace", kind="lint", severity="error",
    title="Whitespace NCCL keeps in nccl.conf",
    checks="nccl.conf lines with spaces around '=' or around the value (a CRLF line ending included).",
    reads=_SETTING,
    why="NCCL keeps it: 'NCCL_X = 1' sets a variable named 'NCCL_X ' to ' 1'.",
    fix="write NAME=value with no spaces around '='",
    source=_CONF + ".",
)

declare(
    id="conf-bad-name", kind="lint", severity="error",
    title="An nccl.conf line NCCL cannot use",
    checks="nccl.conf lines whose part before '=' is not a variable name (an 'export', a comment not "
           "in column 1).",
    reads=_SETTING,
    why="NCCL sets a variable of that odd name, which nothing reads.",
    fix="each line is NAME=value; comments start with '#' in column 1",
    source=_CONF + ".",
)

declare(
    id="conf-ignored-line", kind="lint", severity="info",
    title="An nccl.conf line without '='",
    checks="nccl.conf lines that have no '='.",
    reads=_SETTING,
    why="NCCL skips them: whatever they meant is not applied.",
    fix="remove the line or make it a '#' comment",
    source=_CONF + ".",
)

declare(
    id="conf-not-nccl", kind="lint", severity="warning",
    title="A non-NCCL variable in nccl.conf",
    checks="UCX_*, GLOO_*, TORCH_NCCL_* and OMPI_MCA_* settings in an NCCL config file.",
    reads=_SETTING,
    why="Only NCCL reads the file, when a communicator starts; UCX, Gloo and MPI have read their "
        "settings by then.",
    fix="set it in the job environment",
    source=_CONF + ".",
)

declare(
    id="docker-quoted-value", kind="lint", severity="error",
    title="Quotes in a docker env file",
    checks="docker --env-file values wrapped in quotes.",
    reads=_SETTING,
    why="docker keeps the quotes as part of the value.",
    fix="remove the quotes",
    source=_DOCKER + ".",
)

declare(
    id="docker-whitespace", kind="lint", severity="error",
    title="Whitespace docker keeps in an env file",
    checks="docker --env-file values with surrounding whitespace.",
    reads=_SETTING,
    why="docker takes the value verbatim: ' eth0' is not eth0.",
    fix="remove it (and convert CRLF line endings)",
    source=_DOCKER + ".",
)

declare(
    id="docker-bad-name", kind="lint", severity="error",
    title="A line docker refuses",
    checks="docker --env-file lines whose name holds whitespace.",
    reads=_SETTING,
    why="docker refuses the file and the container does not start.",
    fix="each line is NAME=value",
    source=_DOCKER + ".",
)

declare(
    id="deepspeed-blank-line", kind="lint", severity="error",
    title="A blank line in .deepspeed_env",
    checks=".deepspeed_env blank lines.",
    reads=_SETTING,
    why="DeepSpeed's launcher fails on a line without '='.",
    fix="remove blank lines from .deepspeed_env",
    source=_DEEPSPEED + ".",
)

declare(
    id="deepspeed-no-equals", kind="lint", severity="error",
    title="A .deepspeed_env line without '='",
    checks=".deepspeed_env lines with no '=' (comments included).",
    reads=_SETTING,
    why="DeepSpeed's launcher fails on them: the file allows NAME=value lines only.",
    fix="only NAME=value lines: .deepspeed_env allows no comments",
    source=_DEEPSPEED + ".",
)

declare(
    id="deepspeed-bad-name", kind="lint", severity="error",
    title="A .deepspeed_env name that is not a variable name",
    checks=".deepspeed_env lines whose part before '=' is not a variable name.",
    reads=_SETTING,
    why="The launcher exports it on each node's command line, where the shell rejects it.",
    fix="each line is NAME=value",
    source=_DEEPSPEED + ".",
)

declare(
    id="k8s-unreadable", kind="lint", severity="error",
    title="A ConfigMap that is not readable YAML",
    checks="Files read as Kubernetes manifests: YAML syntax, duplicate keys, `data` not a mapping.",
    reads=_SETTING,
    why="kubectl refuses the manifest, or keeps one of two duplicate keys.",
    fix="write data entries as NAME: \"value\"",
    source=_K8S + "; YAML 1.2 (unique keys).",
)

declare(
    id="k8s-not-a-string", kind="lint", severity="error",
    title="A ConfigMap value that is not a string",
    checks="ConfigMap data values YAML reads as a number, boolean, list or mapping.",
    reads=_SETTING,
    why="The API server refuses the ConfigMap: every data value must be a string.",
    fix="quote the value: NAME: \"value\"",
    source=_K8S + ".",
)

declare(
    id="k8s-whitespace", kind="lint", severity="error",
    title="A ConfigMap value with surrounding whitespace",
    checks="ConfigMap data values with leading or trailing whitespace, such as the final newline a '|' "
           "block keeps.",
    reads=_SETTING,
    why="The container gets the whitespace in the variable: 'eth0\\n' is not eth0.",
    fix="use '|-' or '>-', or a quoted string",
    source=_K8S + "; YAML 1.2 block chomping.",
)

declare(
    id="k8s-no-configmap", kind="lint", severity="warning",
    title="A k8s file without a ConfigMap",
    checks="Files read as k8s that hold no `kind: ConfigMap` document.",
    reads=_SETTING,
    why="Nothing in the file reaches a container's environment as settings.",
    fix="a ConfigMap has kind: ConfigMap and its settings under data:",
    source=_K8S + ".",
)

declare(
    id="json-invalid", kind="lint", severity="error",
    title="Not a flat JSON object of strings",
    checks="Files read as json: valid JSON, an object of string values.",
    reads=_SETTING,
    why="The consumer of a JSON env (a job launcher reading NAME: value pairs) cannot use it.",
    fix="write a flat JSON object of strings",
    source="RFC 8259 (JSON); docs/env-formats.md (the json dialect).",
)

declare(
    id="sh-syntax", kind="lint", severity="warning",
    title="An unterminated quote or here-document",
    checks="Shell files: quotes and here-documents that run to the end of the file.",
    reads=_SETTING,
    why="bash reads the rest of the file as one word or as input to a command, so the settings after "
        "it are lost or the script fails.",
    fix="close the quote or the here-document",
    source=_BASH + ".",
)

declare(
    id="sh-bad-name", kind="lint", severity="error",
    title="Not a name bash accepts",
    checks="Assignments whose name is not ASCII letters, digits and '_' not starting with a digit.",
    reads=_SETTING,
    why="bash runs the line as a command (and `export` refuses it), so the setting is lost.",
    fix="names are ASCII letters, digits and '_', not starting with a digit",
    source=_BASH + ".",
)

declare(
    id="sh-unexported", kind="lint", severity="warning",
    title="A variable taken out of the environment",
    checks="`export -n VAR` and `declare +x VAR`.",
    reads=_SETTING,
    why="The variable stays in the shell but no longer reaches the programs it starts, NCCL included.",
    fix="drop the line, or export the variable if the job needs it",
    source=_BASH + ".",
)

declare(
    id="crlf-line-endings", kind="lint", severity="error",
    also=("info",),
    severity_note="info for an nccl.conf when the host's NCCL (--features, --root) is 2.30.3 or later, "
                  "which drops the carriage return",
    title="CRLF line endings the reader keeps",
    checks="CRLF line endings in a sh or nccl.conf file (not raised for systemd, docker, .deepspeed_env, "
           "YAML or JSON, whose readers drop the CR).",
    reads=_SETTING,
    why="bash and NCCL keep the carriage return in the value: =bond0 becomes '=bond0\\r', which "
        "matches nothing.",
    fix="convert the file to LF line endings (dos2unix)",
    source=_BASH + "; " + _CONF + "; NVIDIA/nccl v2.30.3-1 src/misc/param.cc:36-37 drops the CR (release "
           "table entry conf-keeps-cr, docs/nccl-releases.md).",
)

declare(
    id="var-not-in-release", kind="lint", severity="warning",
    title="A variable the host's NCCL release does not read",
    checks="NCCL_* names rocetune's catalog knows against the NCCL release of the target host (--features "
           "FILE or a probe of --root: the Features `kernel.nccl.version`).",
    reads=_SETTING + " " + _HOST,
    why="NCCL reads each variable it knows by name and ignores the others without a message: a setting "
        "of a newer release (NCCL_IB_SUBNET_AWARE_ROUTING, NCCL_IB_RESILIENCY_*) does nothing on an "
        "older one, and one that was removed does nothing on a newer one.",
    fix="remove it, or give the jobs an NCCL release that reads it",
    source="src/rocetune/nccl/data/nccl_var_releases.json: the first and last release whose source reads "
           "each variable, from NVIDIA/nccl's source at every tag v2.3.5-5 .. 2.31.0 "
           "(tools/nccl_var_releases.py, docs/nccl-releases.md).",
)

declare(
    id="hca-rail-ids-ignored", kind="lint", severity="info",
    title="Rail ids in NCCL_IB_HCA that the host's NCCL skips",
    checks="NCCL_IB_HCA entries of the form dev:port:rail[:plane] against the host's NCCL release.",
    reads=_SETTING + " " + _HOST,
    why="NCCL reads rail and plane ids from 2.30.7 (NCCL_CROSS_NIC=0 then keeps a channel on one rail by "
        "rail id); older releases skip what follows the port, so sibling ports of one adapter count as "
        "one rail again (NVIDIA/nccl#2097).",
    fix="keep them for NCCL 2.30.7 and later, or upgrade",
    source="NVIDIA/nccl v2.30.7-1 src/misc/utils.cc:203-207, src/graph/search.cc:605-606 (release table "
           "entry rail-ids-in-ib-hca, docs/nccl-releases.md).",
)

declare(
    id="format-differs-from-name", kind="lint", severity="info",
    also=("warning",),
    severity_note="warning for an nccl.conf read as sh, or a .deepspeed_env read as another dialect",
    title="Named like one dialect, read as another",
    checks="Files whose name suggests another dialect than their content.",
    reads=_SETTING,
    why="If the named dialect's reader takes the file, it reads it differently: NCCL reads "
        "'export NCCL_X=1' in an nccl.conf as a variable named 'export NCCL_X'.",
    fix="check with --format of the named dialect, or rename the file",
    source="docs/lint.md (how lint tells the dialects apart); " + _CONF + ".",
)

declare(
    id="unreadable-file", kind="lint", severity="error",
    title="A file lint cannot read",
    checks="Each file given: readable, text, not a directory, at most 16 MiB.",
    reads="The file itself.",
    why="What it holds is not checked; the other files still are.",
    fix="check the path and its permissions",
    source="open(2) errors; docs/lint.md.",
)
