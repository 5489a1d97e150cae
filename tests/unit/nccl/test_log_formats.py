"""Formats that no fixture log shows, tested on lines built from NCCL's own format strings.

No real log at hand carries these lines; each test names the release and file:line whose printf
format it fills in (NVIDIA/nccl tags), so the text is what that release prints.
"""

from __future__ import annotations

from rocetune.nccl.log import read_log

# src/debug.cc: "%s:%d:%d [%d] NCCL INFO " (v2.18.3-1 :175, v2.21.5-1 :183; v2.28.9-1 :349+363)
INFO = "%s:%d:%d [%d] NCCL INFO " % ("gpu-a", 4100, 4150, 2)
# src/debug.cc: "\n%s:%d:%d [%d] %s:%d NCCL WARN " (v2.21.5-1 :179)
WARN = "\n%s:%d:%d [%d] %s:%d NCCL WARN " % ("gpu-a", 4100, 4150, 2, "transport/net_ib.cc", 1295)


def one(*messages: str):
    return read_log("".join(INFO + m + "\n" for m in messages)).processes[0]


def test_merged_devices_2_21_5():
    # transport/net_ib.cc v2.21.5-1 :521-538: " [%d]={" "[%d] %s:%d/%s%s" "}" and " [%d]%s:%d/%s"
    line = " [0]={" + "[0] %s:%d/%s%s" % ("mlx5_0", 1, "RoCE", ", ")
    line += "[1] %s:%d/%s%s" % ("mlx5_1", 1, "RoCE", "") + "}"
    line += " [%d]%s:%d/%s" % (2, "mlx5_2", 1, "IB")
    p = one("NET/IB : Using%s %s; OOB %s:%s" % (line, "", "eth0", "10.0.0.1<0>"))
    assert [(d.index, d.name, d.port, d.link_layer) for d in p.ib_devices] == [
        (0, "mlx5_0", 1, "RoCE"), (1, "mlx5_1", 1, "RoCE"), (2, "mlx5_2", 1, "IB")]
    assert p.ib_relaxed_ordering is False and p.oob_interface == "eth0"


def test_unspecified_link_layer_2_28_9():
    # transport/net_ib.cc v2.28.9-1 :116 NCCL_IB_LLSTR, :835-839
    p = one("NET/IB : Using%s %s; OOB %s:%s" % (" [%d]%s:%d/%s" % (0, "mlx5_4", 2, "UNSPECIFIED"), "[RO]",
                                                 "ens1f0", "fe80::1%ens1f0<0>"))
    assert [(d.name, d.port, d.link_layer) for d in p.ib_devices] == [("mlx5_4", 2, "UNSPECIFIED")]
    assert (p.oob_interface, p.oob_address) == ("ens1f0", "fe80::1%ens1f0")


def test_gdr_no_module_2_12():
    # transport/net_ib.cc v2.12.12-1 :290
    p = one("NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>",
            "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)" % (0, "mlx5_0"))
    d = p.ib_devices[0]
    assert (d.gdr, d.gdr_reason) == (False, "no module")


def test_queue_pair_lines_2_18_3_and_2_28_9():
    using = "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
    # v2.18.3-1 transport/net_ib.cc:674 (prints the configured ncclParamIbGidIndex())
    old = "NET/IB: Dev %d Port %d qpn %d mtu %d GID %d (%X/%X)" % (1, 1, 4660, 5, 3, 0, 0x1064A8C0FFFF0000)
    p = one(using, old)
    assert (p.ib_devices[1].gid_indexes, p.ib_devices[1].mtus) == ([3], [4096])
    # v2.28.9-1 transport/net_ib.cc:1490 (the GID index in use)
    new = ("NET/IB: %s %d IbDev %d Port %d qpn %d mtu %d GID %d (%X/%X) fifoRkey=0x%x fifoLkey=0x%x"
           % ("NCCL Dev", 0, 1, 1, 576, 3, 5, 0, 0x1064A8C0FFFF0000, 0x1b9e9c, 0x1b9e9c))
    p = one(using, new)
    assert (p.ib_devices[1].gid_indexes, p.ib_devices[1].mtus) == ([5], [1024])
    assert p.ib_devices[0].gid_indexes == [] and p.qp_gid_indexes == [5]


def test_gdr_per_gpu_and_hca_2_28_9():
    # graph/paths.cc v2.28.9-1 :473 and :483
    p = one("GPU Direct RDMA Disabled for GPU %d / HCA %x (distance %d > %d)" % (3, 0x1c000, 9, 5),
            "GPU Direct RDMA Enabled for GPU %d / HCA %x (distance %d <= %d), read %d mode %s"
            % (0, 0x1b000, 4, 5, 1, "Default"))
    assert sorted(g[:5] for g in p.gdr_paths) == [(False, "3", "1c000", 9, 5), (True, "0", "1b000", 4, 5)]
    assert sorted(g.mode or "" for g in p.gdr_paths) == ["", "Default"]


def test_channel_counts_2_18_3():
    # init.cc v2.18.3-1 :1113
    p = one("%d coll channels, %d nvls channels, %d p2p channels, %d p2p channels per peer" % (16, 0, 32, 2))
    assert p.channels == {"coll": 16, "nvls": 0, "p2p": 32, "p2p_per_peer": 2}


def test_variable_forms():
    p = one("%s set by environment to %d." % ("NCCL_IB_TC", 106),                 # misc/param.cc v2.28.9-1 :89
            "%s set by environment to %s" % ("NCCL_NET_GDR_LEVEL", "PXB"),        # graph/paths.cc v2.28.9-1 :247
            "%s set by environment to %d" % ("NCCL_P2P_DISABLE", 1),              # graph/paths.cc v2.28.9-1 :225
            "NCCL_OOB_NET_IFNAME set to %s" % "bond0",                            # bootstrap.cc v2.23.4-1 :487
            "NCCL_COLLNET_ENABLE set by environment to %s." % "0",                # init.cc v2.21.5-1 :1036
            "Invalid value %s for %s, using default %d." % ("4k", "NCCL_IB_QPS_PER_CONNECTION", 1))  # param.cc
    assert {k: (v.value, v.form) for k, v in p.env.items()} == {
        "NCCL_IB_TC": ("106", "set by environment"), "NCCL_NET_GDR_LEVEL": ("PXB", "set by environment"),
        "NCCL_P2P_DISABLE": ("1", "set by environment"), "NCCL_OOB_NET_IFNAME": ("bond0", "set to"),
        "NCCL_COLLNET_ENABLE": ("0", "set by environment")}
    value, default, _ = p.env_invalid["NCCL_IB_QPS_PER_CONNECTION"]
    assert (value, default) == ("4k", "1")


def test_external_plugin_2_28_9():
    # plugin/net.cc v2.28.9-1 :134, init.cc :428
    p = one("Successfully loaded external network plugin %s" % "libnccl-net-ofi.so",
            "Using network %s" % "AWS Libfabric")
    assert (p.net_plugin, p.network, p.transport) == ("libnccl-net-ofi.so", "AWS Libfabric", "plugin")


def test_version_as_info_line_2_28_9():
    # init.cc v2.28.9-1 :603-609 (INFO when NCCL_DEBUG=INFO)
    p = one("NCCL version %d.%d.%d%s+cuda%d.%d" % (2, 28, 9, "", 13, 0))
    assert (p.version, p.version_text, p.version_inferred) == ("2.28.9", "2.28.9+cuda13.0", False)


def test_warn_line_and_a_2_28_9_timestamp():
    # debug.cc v2.28.9-1: timestamps on for WARN by default (:137), format "[%F %T] " (:172), written
    # before the host name (:315-349)
    stamped = "[2026-01-05 10:11:12] " + "%s:%d:%d " % ("gpu-b", 77, 78) + "[%d] %s:%d NCCL WARN " % (
        0, "misc/socket.cc", 441) + "socketFinalizeAccept: wrong type 4 != 3"
    r = read_log(WARN + "NET/IB : Got completion from peer 10.0.0.2<55921> with status=12\n" + stamped + "\n")
    a, b = r.warnings
    assert (a.process, a.file, a.file_line) == ("gpu-a:4100", "transport/net_ib.cc", 1295)
    assert a.message.startswith("NET/IB : Got completion from peer")
    assert (b.process, b.file, b.file_line, b.message) == ("gpu-b:77", "misc/socket.cc", 441,
                                                            "socketFinalizeAccept: wrong type 4 != 3")


def test_launcher_prefixes_are_not_part_of_the_host_name():
    lines = ["[1,0]<stdout>:" + INFO + "Using network IB",       # Open MPI --tag-output
             "[rank3]:" + INFO.replace("gpu-a", "gpu-c") + "Using network Socket",   # torchrun --tee
             "[0] " + INFO.replace("gpu-a", "gpu-d") + "Using network IB"]
    r = read_log("\n".join(lines))
    assert [(p.key, p.network) for p in r.processes] == [("gpu-a:4100", "IB"), ("gpu-c:4100", "Socket"),
                                                         ("gpu-d:4100", "IB")]


def test_gdr_line_of_another_net_is_not_put_on_an_rdma_device():
    # graph/topo.cc v2.28.9-1 :1357 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'" with the Socket net
    p = one("NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>", "Using network Socket",
            "NET/%s : GPU Direct RDMA %s for HCA %d '%s'" % ("Socket", "Disabled", 0, "eth0"))
    assert p.ib_devices[0].gdr is None
