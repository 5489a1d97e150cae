"""read_log on real NCCL logs (tests/fixtures/nccl-logs, provenance in SOURCES.md): exact facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocetune.nccl.log import load_log, read_log

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-logs"


def text(name: str) -> str:
    return (LOGS / name).read_text()


def devices(p):
    return [(d.name, d.port, d.link_layer, d.gdr) for d in p.ib_devices]


def test_soft_roce_node_with_default_subsystems_2_20_5():
    r = load_log(str(LOGS / "rxe-2.20.5-nccl_node0.log"))
    assert r.versions == ["2.20.5+cuda12.4"]
    assert [p.key for p in r.processes] == ["node0:4222"]
    p = r.processes[0]
    assert (p.version, p.version_inferred) == ("2.20.5", True)  # printf'd without a prefix
    assert p.network == "IB" and p.transport == "ib"
    assert devices(p) == [("rxe0", 1, "RoCE", None)]  # the default subsystems do not log NET's GDR line
    assert p.ib_relaxed_ordering is True and (p.oob_interface, p.oob_address) == ("eth0", "172.30.0.25")
    assert {k: (v.value, v.form) for k, v in p.env.items()} == {
        "NCCL_SOCKET_IFNAME": ("eth0", "set by environment"), "NCCL_IB_HCA": ("rxe0", "set to"),
        "NCCL_MAX_NCHANNELS": ("1", "set by environment"), "NCCL_IB_GID_INDEX": ("1", "set by environment"),
        "NCCL_PROTO": ("Simple", "set by environment"), "NCCL_ALGO": ("Ring", "set by environment")}
    assert p.env["NCCL_IB_GID_INDEX"].evidence.line == 21
    assert p.channels == {"coll": 1, "collnet": 0, "nvls": 0, "p2p": 1, "p2p_per_peer": 1}
    assert (p.ranks, p.nranks, p.nnodes, p.init_complete) == ([0], 3, 3, True)
    assert p.rings == {0: [0, 1, 2]}
    assert (p.net_connections, p.gdrdma_connections) == (3, 0)
    (w,) = r.warnings
    assert (w.process, w.file, w.file_line) == ("node0:4222", "transport/net_ib.cc", 115)
    assert w.message == "Could not find real path of rxe0 (/sys/class/infiniband/rxe0/device)"
    assert w.evidence.line == 9
    assert (r.lines, r.nccl_lines, r.other_lines) == (32, 30, 1)  # plus one empty line before the WARN


def test_soft_roce_node_with_net_and_graph_2_20_5():
    r = read_log(text("rxe-2.20.5-ring2_node0.log"))
    p = r.processes[0]
    assert devices(p) == [("rxe0", 1, "RoCE", False)]
    d = p.ib_devices[0]
    assert (d.gid_indexes, d.mtus) == ([1], [1024])  # "mtu 3 ... GID 1": NCCL_IB_GID_INDEX=1 in use
    assert p.env.keys() == {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"}  # "set to" lines come with NET
    assert p.env_lines == 0  # no ENV subsystem: no "set by environment" line
    assert p.ring_neighbours == {0: (2, 1)} and p.trees == ["[0] 2/-1/-1->0->-1"]
    assert r.unrecognized_lines > 0  # topology dumps and timings are counted, not parsed


def test_roce_and_ib_ports_with_gdr_2_16_5():
    r = read_log(text("nccl-tests-350-2.16.5-roce-ib-gdr.log"))
    (p,) = r.processes
    assert p.key == "n013:101855" and p.version == "2.16.5"
    assert devices(p) == [("mlx5_0", 1, "RoCE", True), ("mlx5_2", 1, "IB", True)]
    assert p.ib_devices[1].mtus == [4096] and p.ib_devices[1].gid_indexes == []  # IB: "LID 37", no GID
    assert p.dmabuf_gpus == [0]
    assert p.env["NCCL_NET_GDR_LEVEL"].value == "SYS"
    paths = [g[:5] for g in p.gdr_paths]
    assert (True, "81000", "1", 6, 7) in paths and (True, "81000", "0", 7, 7) in paths
    assert p.channels == {"coll": 2, "p2p": 2, "p2p_per_peer": 2}  # 2.16: no collnet/nvls counts
    assert (p.net_connections, p.gdrdma_connections) == (4, 4)
    assert p.rings == {0: [0, 1], 1: [0, 1]}
    assert r.other_lines == 8  # nccl-tests' own "#" lines


def test_four_interleaved_processes_of_a_plugin_job_2_26_5():
    ranges = ["nccl-tests-321-2.26.5-plugin-4ranks-a-init.log", "nccl-tests-321-2.26.5-plugin-4ranks-b-graph.log",
              "nccl-tests-321-2.26.5-plugin-4ranks-c-env.log"]
    r = read_log("".join(text(n) for n in ranges))  # three ranges of one log, in their order
    assert [p.key for p in r.processes] == ["vm-host38:33957", "vm-host38:33958", "vm-host40:34001",
                                             "vm-host40:34002"]
    assert r.versions == ["2.26.5+cuda12.2"]
    for p, rank in zip(r.processes, (2, 3, 0, 1)):
        assert (p.version, p.version_inferred) == ("2.26.5", False)  # an INFO line of each process
        assert p.network == "NCCL RDMA Plugin v6" and p.transport == "plugin"
        assert p.net_plugin == "NCCL RDMA Plugin v6"
        assert devices(p) == [("mlx5_bond_6", 1, "RoCE", None), ("mlx5_bond_7", 1, "RoCE", None)]
        assert (p.ranks, p.nranks, p.nnodes) == ([rank], 4, 2)
        assert {k: v.value for k, v in p.env.items()} == {
            "NCCL_SOCKET_IFNAME": "bond0", "NCCL_P2P_LEVEL": "NVL", "NCCL_PXN_DISABLE": "0",
            "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_IB_QPS_PER_CONNECTION": "4", "NCCL_IB_GID_INDEX": "3",
            "NCCL_IB_TC": "160", "NCCL_IB_TIMEOUT": "21"}
    host40 = r.process("vm-host40:34001")
    assert host40.rings == {0: [0, 3, 2, 1], 1: [0, 1, 2, 3], 2: [0, 3, 2, 1], 3: [0, 1, 2, 3]}
    assert host40.channels == {"coll": 4, "collnet": 4, "nvls": 0, "p2p": 4, "p2p_per_peer": 2}
    assert r.process("vm-host40:34002").channels == {}  # its channel line is past the range


def test_gdr_disabled_on_two_roce_ports():
    (p,) = read_log(text("nccl-1537-roce-gdr-disabled.log")).processes
    assert devices(p) == [("mlx5_0", 1, "RoCE", False), ("mlx5_1", 1, "RoCE", False)]
    assert p.version is None and (p.ranks, p.nranks) == ([0], 16)
    assert (p.oob_interface, p.oob_address) == ("primaryip", "10.10.10.10")


def test_sockets_on_two_hosts_2_11_4():
    r = read_log(text("nccl-676-2.11.4-socket-two-hosts.log"))
    gpu01, gpu02 = r.processes
    assert gpu01.network == "Socket" and gpu01.transport == "socket"
    assert gpu01.socket_interfaces == [(0, "enp225s0f1", "10.10.10.2")]
    assert gpu01.env["NCCL_SOCKET_IFNAME"].value == "en"
    assert gpu02.network is None and gpu02.version == "2.11.4"  # the log's one version, inferred
    assert r.unrecognized_lines == 1  # "init.cc:290 Cuda Host Alloc Size 4 pointer ..."


def test_no_rdma_device_then_sockets_2_19_3():
    (p,) = read_log(text("nccl-1267-2.19.3-ib-no-device-socket.log")).processes
    assert p.ib_no_device is not None and p.ib_no_device.line == 6
    assert p.network == "Socket" and p.socket_interfaces == [(0, "ens7", "10.128.0.33")]
    assert p.ib_devices == [] and p.rings == {0: [0], 1: [0], 2: [0]}


def without_line_numbers(value):
    if isinstance(value, dict):
        return {k: without_line_numbers(v) for k, v in value.items() if k != "line"}
    if isinstance(value, list):
        return [without_line_numbers(v) for v in value]
    return value


def test_three_nodes_interleaved_line_by_line_read_as_each_alone():
    names = ["rxe-2.20.5-nccl_node0.log", "rxe-2.20.5-nccl_node1.log", "rxe-2.20.5-nccl_node2.log"]
    alone = {n: read_log(text(n)).processes[0].to_dict() for n in names}
    columns = [text(n).splitlines() for n in names]
    mixed = [c[i] for i in range(max(map(len, columns))) for c in columns if i < len(c)]
    r = read_log("\n".join(mixed))
    assert len(r.processes) == 3 and r.warn_count == 3
    for n, p in zip(names, r.processes):
        got, want = without_line_numbers(p.to_dict()), without_line_numbers(alone[n])
        # node1 and node2 print no version line of their own: the joined log's one version is theirs too
        for k in ("version", "version_text", "version_inferred"):
            got.pop(k), want.pop(k)
        assert got == want
    assert {p.version for p in r.processes} == {"2.20.5"}


def test_report_is_json_and_deterministic():
    t = text("nccl-tests-350-2.16.5-roce-ib-gdr.log")
    a, b = read_log(t).to_dict(), read_log(t.encode()).to_dict()
    assert a == b
    assert json.loads(json.dumps(a, sort_keys=True)) == a
    assert a["processes"][0]["ib_devices"][0] == {
        "index": 0, "name": "mlx5_0", "port": 1, "link_layer": "RoCE", "tag": None, "rail": None, "plane": None,
        "gdr": True, "gdr_reason": None, "gid_indexes": [], "mtus": []}


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_every_fixture_is_read_and_has_its_source(name):
    r = read_log(text(name))
    assert (r.processes or r.diag) and r.nccl_lines > 0  # NCCL DIAG lines carry no process prefix
    assert name.split("-")[0] in (LOGS / "SOURCES.md").read_text()


# --- the logs added for the 2.6-2.31 forms (SOURCES.md) ------------------------------------------------

def pairs(p):
    return sorted((x.gpu, x.netdev, x.state, x.connections) for x in p.net_pairs.values())


def test_ring_connection_lines_of_2_6_and_a_prefixed_warn():
    r = read_log(text("nccl-302-2.6.2-ring-net-ib.log"))
    (p,) = r.processes
    assert p.key == "crow-ib-new-nccl-262-b-7:7240" and p.network == "IB"
    assert devices(p) == [("mlx5_3", 1, "IB", None), ("mlx5_0", 1, "IB", None), ("mlx5_2", 1, "RoCE", None),
                          ("mlx5_4", 1, "IB", None)]
    assert p.transports == {"NET/IB": 1, "P2P/IPC": 1}
    assert pairs(p) == [("1a000", 2, "off", 1)]  # "Ring 00 : 51[3d000] -> 56[1a000] [receive] via NET/IB/2"
    (w,) = r.warnings
    assert (w.where, w.message) == ("misc/ibvwrap.cc:284", "Call to ibv_modify_qp failed with error Invalid argument")


def test_gdr_off_in_every_connection_and_no_module_2_7_to_2_11():
    r = read_log(text("nccl-899-no-module-channel.log"))
    a, b = r.processes
    assert [(d.name, d.gdr, d.gdr_reason) for d in a.ib_devices] == [
        ("mlx5_1", False, "no module"), ("mlx5_2", False, "no module"), ("mlx5_3", False, "no module")]
    assert pairs(a) == [("1a000", 0, "off", 6)] and pairs(b) == [("1a000", 0, "off", 5)]
    assert a.net_name == "IB" and a.network is None  # from the connection lines: no INIT line in the range
    assert any(t.startswith("no INIT line") for t in r.cannot_tell)


def test_gdr_off_from_connection_lines_with_default_subsystems():
    r = read_log(text("nccl-1412-ib-connections-no-gdrdma.log"))
    (p,) = r.processes
    assert p.transports == {"NET/IB": 4, "P2P/direct pointer": 10}
    assert pairs(p) == [("4", 3, "off", 2), ("5", 3, "off", 2)]
    assert (p.net_connections, p.gdrdma_connections) == (4, 0)
    assert any(t.startswith("no line that only the NET subsystem prints") and "connection lines ('/GDRDMA') alone"
               in t for t in r.cannot_tell)


def test_a_net_plugin_named_in_the_connection_lines():
    r = read_log(text("nccl-1814-ibext-v8-connections.log"))
    assert [(p.key, p.net_name, p.transport, pairs(p)) for p in r.processes] == [
        ("hostname-test:986", "IBext_v8", "ib", [("6", 1, "off", 6)]),
        ("hostname-test:987", "IBext_v8", "ib", [("7", 2, "off", 6)])]


def test_a_2_30_warn_after_its_default_timestamp():
    (w,) = read_log(text("nccl-2157-2.30-timestamped-warn.log")).warnings
    assert (w.process, w.where) == ("GPU-606:534134", "transport/net_ib/p2p_resiliency.cc:325")
    assert w.message.startswith("NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 0 marked as failed.")


def test_a_gpu_nic_pair_off_and_a_queue_pair_without_its_device_line_2_20():
    a = read_log(text("nccl-1657-a-gdr-distance.log")).processes[0]
    assert [g[:5] for g in a.gdr_paths] == [(False, "42000", "0", 6, 4)]
    b = read_log(text("nccl-1657-b-queue-pair.log")).processes[0]
    assert b.ib_devices == [] and (b.qp_mtus, b.qp_gid_indexes) == ([4096], [0])  # "mtu 5 ... GID 0"
    assert pairs(b) == [("0", 0, "off", 1)] and b.env["NCCL_IB_GID_INDEX"].value == "0"


def test_the_version_as_an_info_line_of_each_process_2_25_1():
    r = read_log(text("nccl-1646-2.25.1-version-info.log"))
    assert r.versions == ["2.25.1+cuda12.2"]
    told = {p.key: (p.version, p.version_inferred) for p in r.processes}
    assert told["d5618706-01:1106803"] == ("2.25.1", False) and told["d5618706-01:1106805"] == ("2.25.1", False)
    assert r.other_lines == 1  # PyTorch's own warning; the empty line is not counted


def test_a_plugin_job_on_irdma_2_21_5():
    r = read_log(text("nccl-tests-227-2.21.5-ibext-irdma.log"))
    assert r.versions == ["2.21.5+cuda12.4"]
    assert {p.key: (p.network, p.transport) for p in r.processes} == {
        "ai-worker01:5771": ("IBext_v8", "ib"), "ai-worker03:4940": ("IBext_v8", "ib")}
    assert devices(r.process("ai-worker01:5771")) == [("irdma0", 1, "RoCE", None), ("irdma3", 1, "RoCE", None)]


def test_host_prefixed_lines_and_three_warns():
    r = read_log(text("nccl-1029-ibext-sharp-warn-pdsh.log"))
    assert sorted((w.process, w.where) for w in r.warnings) == [
        ("rdma-test-gpu-worker-1:2914", "misc/cudawrap.cc:33"), ("rdma-test-gpu-worker-1:2918", "init.cc:263"),
        ("rdma-test-gpu-worker-1:2919", "misc/cudawrap.cc:33")]
    p = r.process("rdma-test-gpu-worker-0:4276")
    assert [(d.name, d.link_layer, d.tag) for d in p.ib_devices] == [("mlx5_50", "IB", "SHARP")]


def test_the_network_told_only_by_the_connection_lines_is_in_the_json():
    # nccl#1412's log has no "Using network" line: its four "via NET/IB/3" lines name the network
    r = read_log(text("nccl-1412-ib-connections-no-gdrdma.log"))
    d = r.to_dict()["processes"]
    assert {(p["network"], p["network_from"], p["transport"]) for p in d} == {("IB", "connections", "ib")}
    using = read_log(text("rxe-2.20.5-nccl_node0.log")).to_dict()["processes"][0]
    assert (using["network"], using["network_from"]) == ("IB", "using-network")
