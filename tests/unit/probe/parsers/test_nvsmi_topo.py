"""nvidia-smi topo -m parser: every recorded output, the SOURCES.md conclusions, bad input."""

from __future__ import annotations

from itertools import combinations

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers.nvsmi_topo import gpu_nic_paths, nvlink_pairs, parse_topo_matrix


def parse(corpus, name):
    return parse_topo_matrix(corpus(f"{name}/topo.txt"))


def local_nics(matrix, gpu, kinds=("PIX", "PXB")):
    return {nic for (g, nic), path in gpu_nic_paths(matrix).items() if g == gpu and path in kinds}


def affinity(matrix):
    return {g["index"]: (g["cpu_affinity"], g["numa_affinity"]) for g in matrix["gpus"]}


def mlx5(*numbers):
    return {f"mlx5_{n}" for n in numbers}


# --------------------------------------------------------------------------------------------
# Every recorded output


def test_every_corpus_matrix_parses_cleanly(topo_file):
    m = parse_topo_matrix(topo_file.read_bytes().decode("utf-8"))
    assert set(m) == {"gpus", "nics", "links", "warnings"}
    assert m["gpus"], "at least one GPU"
    assert [g["index"] for g in m["gpus"]] == list(range(len(m["gpus"])))
    assert set(m["warnings"]) <= {"no NIC legend in the output: NIC names unknown",  # h20 post
                                  "old nvidia-smi: SOC reported as SYS"}  # 2017 TensorFlow README
    labels = {f"GPU{g['index']}" for g in m["gpus"]} | {f"NIC{n['index']}" for n in m["nics"]}
    assert set(m["links"]) == labels, "one row per device"
    for row, cells in m["links"].items():
        assert row not in cells, "the X self cell is left out"
        assert set(cells) == labels - {row}, f"{row} has every other column"
        for col, value in cells.items():
            assert m["links"][col][row] == value, f"{row}-{col} symmetric"


def test_gpu_counts(corpus):
    counts = {p: len(parse(corpus, p)["gpus"]) for p in [
        "oci-bm-gpu-a100-v2-8", "h800-4gpu-container-17nic", "hgx-h100-ib-mlx5ib-naming",
        "a100-8gpu-16x-roce-bond-frontend", "h20-8gpu-cx6lx-2port-only",
        "pcie-asus-esc8000a-e12-4xrtx6000ada-2xcx7", "pcie-puget-wrx90-2gpu-1xcx7", "pcie-4xa10-2nic-all-sys",
        "workstation-3xa6000-nvlink-bridge-pair", "workstation-2gpu-nvlink-bridge-nv2",
        "workstation-2gpu-phb-no-nvlink", "a100-8gpu-no-nic-visible", "h100-8gpu-no-nic-visible",
        "desktop-2x1080ti-no-nic", "pcie-4xk40m-mlx4-old-nvsmi-soc"]}
    assert counts == {
        "oci-bm-gpu-a100-v2-8": 8, "h800-4gpu-container-17nic": 4, "hgx-h100-ib-mlx5ib-naming": 8,
        "a100-8gpu-16x-roce-bond-frontend": 8, "h20-8gpu-cx6lx-2port-only": 8,
        "pcie-asus-esc8000a-e12-4xrtx6000ada-2xcx7": 4, "pcie-puget-wrx90-2gpu-1xcx7": 2,
        "pcie-4xa10-2nic-all-sys": 4, "workstation-3xa6000-nvlink-bridge-pair": 3,
        "workstation-2gpu-nvlink-bridge-nv2": 2, "workstation-2gpu-phb-no-nvlink": 2,
        "a100-8gpu-no-nic-visible": 8, "h100-8gpu-no-nic-visible": 8, "desktop-2x1080ti-no-nic": 2,
        "pcie-4xk40m-mlx4-old-nvsmi-soc": 4}


# --------------------------------------------------------------------------------------------
# SOURCES.md "Expect:" conclusions


def test_oci_a100_v2_compute_nics_and_affinity(corpus):
    m = parse(corpus, "oci-bm-gpu-a100-v2-8")
    assert [n["name"] for n in m["nics"]] == [f"mlx5_{i}" for i in range(18)]
    expected = {0: mlx5(5, 6, 7, 8), 1: mlx5(5, 6, 7, 8), 2: mlx5(1, 2, 3, 4), 3: mlx5(1, 2, 3, 4),
                4: mlx5(14, 15, 16, 17), 5: mlx5(14, 15, 16, 17),
                6: mlx5(9, 10, 11, 12), 7: mlx5(9, 10, 11, 12)}
    for gpu, nics in expected.items():
        assert local_nics(m, gpu) == nics
        assert local_nics(m, gpu, ("PXB",)) == nics, "GPU-NIC is PXB on this shape"
    compute = set().union(*expected.values())
    assert compute == mlx5(*range(1, 13), *range(14, 18))
    paths = gpu_nic_paths(m)
    for gpu in range(8):
        assert paths[(gpu, "mlx5_0")] == "SYS"
        assert paths[(gpu, "mlx5_13")] == "SYS"
    # port pairs of a dual-port card are PIX to each other (NIC1-NIC2, ..., NIC16-NIC17)
    for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (14, 15), (16, 17)]:
        assert m["links"][f"NIC{a}"][f"NIC{b}"] == "PIX"
    assert affinity(m) == {0: ("48-63", "3"), 1: ("48-63", "3"), 2: ("16-31", "1"), 3: ("16-31", "1"),
                           4: ("112-127", "7"), 5: ("112-127", "7"), 6: ("80-95", "5"), 7: ("80-95", "5")}
    assert {g["gpu_numa_id"] for g in m["gpus"]} == {"N/A"}
    assert nvlink_pairs(m) == {pair: 12 for pair in combinations(range(8), 2)}


def test_oci_a100_v2_run_together_affinity_row(corpus):
    """'112-127 7' (tab expanded to one space) still splits into CPU and NUMA affinity."""
    text = corpus("oci-bm-gpu-a100-v2-8/topo.txt")
    assert "PXB     112-127 7               N/A" in text
    gpu4 = parse_topo_matrix(text)["gpus"][4]
    assert gpu4 == {"index": 4, "cpu_affinity": "112-127", "numa_affinity": "7", "gpu_numa_id": "N/A"}


def test_h800_container_pix_pairs_and_empty_affinity(corpus):
    m = parse(corpus, "h800-4gpu-container-17nic")
    assert len(m["nics"]) == 17
    assert {g: local_nics(m, g, ("PIX",)) for g in range(4)} == {
        0: mlx5(4, 13), 1: mlx5(6, 14), 2: mlx5(7, 15), 3: mlx5(8, 16)}
    assert {g: local_nics(m, g) for g in range(4)} == {
        0: mlx5(4, 13), 1: mlx5(6, 14), 2: mlx5(7, 15), 3: mlx5(8, 16)}
    # NICs of the GPUs outside the container, and mlx5_5, are not local to any visible GPU
    paths = gpu_nic_paths(m)
    for nic in mlx5(0, 1, 2, 3, 5, 9, 10, 11, 12):
        assert {paths[(g, nic)] for g in range(4)} == {"SYS"}
    assert set(m["links"]["NIC5"].values()) == {"SYS"}, "mlx5_5 is SYS to everything"
    for g in m["gpus"]:
        assert (g["cpu_affinity"], g["numa_affinity"], g["gpu_numa_id"]) == (None, None, "N/A")
    assert nvlink_pairs(m) == {pair: 8 for pair in combinations(range(4), 2)}
    assert m["warnings"] == []


def test_hgx_ib_naming_one_pix_ib_port_per_gpu(corpus):
    m = parse(corpus, "hgx-h100-ib-mlx5ib-naming")
    names = [n["name"] for n in m["nics"]]
    assert names == [f"mlx5_ib{i}" for i in range(8)] + [f"mlx5_eth{i}" for i in range(5)]
    for gpu in range(8):
        assert local_nics(m, gpu, ("PIX",)) == {f"mlx5_ib{gpu}"}
    paths = gpu_nic_paths(m)
    for eth in (f"mlx5_eth{i}" for i in range(5)):
        assert {paths[(g, eth)] for g in range(4)} == {"SYS"}
        assert {paths[(g, eth)] for g in range(4, 8)} == {"NODE"}
        assert not any(paths[(g, eth)] in ("PIX", "PXB") for g in range(8))
    assert affinity(m) == {**{g: ("0-55,112-167", "0") for g in range(4)},
                           **{g: ("56-111,168-223", "1") for g in range(4, 8)}}
    assert set(nvlink_pairs(m).values()) == {18}


def test_a100_bond_frontend_is_sys_everywhere(corpus):
    m = parse(corpus, "a100-8gpu-16x-roce-bond-frontend")
    assert m["nics"][-1] == {"index": 16, "name": "mlx5_bond_0"}
    paths = gpu_nic_paths(m)
    assert {paths[(g, "mlx5_bond_0")] for g in range(8)} == {"SYS"}
    expected = {0: mlx5(2, 3, 4, 5), 2: mlx5(6, 7, 8, 9), 4: mlx5(10, 11, 12, 13), 6: mlx5(14, 15, 16, 17)}
    for first, nics in expected.items():
        assert local_nics(m, first) == local_nics(m, first + 1) == nics
    assert set().union(*expected.values()) == mlx5(*range(2, 18))
    assert set(affinity(m).values()) == {("0-103", "0")}


def test_h20_cx6lx_without_legend_has_no_gpu_local_nic(corpus):
    m = parse(corpus, "h20-8gpu-cx6lx-2port-only")
    assert m["nics"] == [{"index": 0, "name": None}, {"index": 1, "name": None}]
    assert any("no NIC legend" in w for w in m["warnings"])
    paths = gpu_nic_paths(m)
    assert set(paths) == {(g, n) for g in range(8) for n in ("NIC0", "NIC1")}, "labels stand in for names"
    assert {g for (g, _), p in paths.items() if p == "PHB"} == {6}
    assert not [k for k, p in paths.items() if p in ("PIX", "PXB")]
    assert {paths[(g, "NIC0")] for g in (4, 5, 7)} == {"NODE"}
    assert {paths[(g, "NIC0")] for g in range(4)} == {"SYS"}
    assert affinity(m) == {**{g: ("0-95,192-287", "0") for g in range(4)},
                           **{g: ("96-191,288-383", "1") for g in range(4, 8)}}


def test_pcie_asus_no_pix_pxb_nic_and_socket_pairing(corpus):
    m = parse(corpus, "pcie-asus-esc8000a-e12-4xrtx6000ada-2xcx7")
    paths = gpu_nic_paths(m)
    assert not [k for k, p in paths.items() if p in ("PIX", "PXB")]
    for g in (0, 1):
        assert local_nics(m, g, ("NODE",)) == mlx5(0, 1)
        assert local_nics(m, g, ("SYS",)) == mlx5(2, 3)
    for g in (2, 3):
        assert local_nics(m, g, ("NODE",)) == mlx5(2, 3)
    assert m["links"]["NIC0"]["NIC1"] == m["links"]["NIC2"]["NIC3"] == "PIX"
    assert affinity(m) == {0: ("0-31", "0"), 1: ("0-31", "0"), 2: ("32-63", "1"), 3: ("32-63", "1")}
    assert nvlink_pairs(m) == {}


def test_pcie_puget_single_numa_node_paths(corpus):
    m = parse(corpus, "pcie-puget-wrx90-2gpu-1xcx7")
    assert m["links"]["GPU0"]["GPU1"] == "PHB"
    assert set(gpu_nic_paths(m).values()) == {"NODE"}
    assert set(affinity(m).values()) == {("0-23", "0")}


def test_pcie_4xa10_everything_sys(corpus):
    m = parse(corpus, "pcie-4xa10-2nic-all-sys")
    assert {v for g in range(4) for v in m["links"][f"GPU{g}"].values()} == {"SYS"}
    assert set(affinity(m).values()) == {("0-127", "0")}


def test_3xa6000_nvlink_bridge_pair_only(corpus):
    m = parse(corpus, "workstation-3xa6000-nvlink-bridge-pair")
    assert nvlink_pairs(m) == {(0, 1): 4}
    assert m["links"]["GPU2"] == {"GPU0": "NODE", "GPU1": "NODE"}
    assert m["nics"] == []
    assert set(affinity(m).values()) == {("0-31,64-95", "0")}
    assert m["warnings"] == []


@pytest.mark.parametrize("name,link,pairs,cpus", [
    ("workstation-2gpu-nvlink-bridge-nv2", "NV2", {(0, 1): 2}, "0-23"),
    ("workstation-2gpu-phb-no-nvlink", "PHB", {}, "0-11"),
    ("desktop-2x1080ti-no-nic", "PHB", {}, "0-11"),
])
def test_two_gpu_workstations(corpus, name, link, pairs, cpus):
    m = parse(corpus, name)
    assert m["links"]["GPU0"] == {"GPU1": link}
    assert nvlink_pairs(m) == pairs
    assert m["nics"] == []
    assert set(affinity(m).values()) == {(cpus, "N/A")}


@pytest.mark.parametrize("name,nv,cpus", [
    ("a100-8gpu-no-nic-visible", 12, ("0-23", "24-47")),
    ("h100-8gpu-no-nic-visible", 18, ("0-51", "52-103")),
])
def test_no_nic_hosts(corpus, name, nv, cpus):
    m = parse(corpus, name)
    assert m["nics"] == []
    assert gpu_nic_paths(m) == {}
    assert nvlink_pairs(m) == {pair: nv for pair in combinations(range(8), 2)}
    assert affinity(m) == {**{g: (cpus[0], "0") for g in range(4)},
                           **{g: (cpus[1], "1") for g in range(4, 8)}}
    assert {g["gpu_numa_id"] for g in m["gpus"]} == {None}, "no GPU NUMA ID column in this output"


def test_old_nvidia_smi_names_nic_in_header_and_says_soc(corpus):
    m = parse(corpus, "pcie-4xk40m-mlx4-old-nvsmi-soc")
    assert m["nics"] == [{"index": 0, "name": "mlx4_0"}]
    assert gpu_nic_paths(m) == {(0, "mlx4_0"): "SYS", (1, "mlx4_0"): "SYS",
                                (2, "mlx4_0"): "PHB", (3, "mlx4_0"): "PHB"}
    assert m["links"]["GPU0"] == {"GPU1": "PHB", "GPU2": "SYS", "GPU3": "SYS", "NIC0": "SYS"}
    assert any("SOC" in w for w in m["warnings"])
    assert affinity(m) == {0: ("0-5", None), 1: ("0-5", None), 2: ("6-11", None), 3: ("6-11", None)}


# --------------------------------------------------------------------------------------------
# Variants of real outputs: same answer


@pytest.mark.parametrize("name", ["hgx-h100-ib-mlx5ib-naming", "h800-4gpu-container-17nic",
                                  "workstation-3xa6000-nvlink-bridge-pair"])
def test_crlf_and_indented_copies_parse_the_same(corpus, name):
    text = corpus(f"{name}/topo.txt")
    base = parse_topo_matrix(text)
    assert parse_topo_matrix(text.replace("\n", "\r\n")) == base
    indented = parse_topo_matrix("".join("    " + line for line in text.splitlines(True)))
    assert indented["links"] == base["links"]
    assert indented["nics"] == base["nics"]


def test_tab_expanded_container_output_keeps_links(corpus):
    text = corpus("h800-4gpu-container-17nic/topo.txt")
    expanded = parse_topo_matrix(text.expandtabs(8))
    base = parse_topo_matrix(text)
    assert expanded["links"] == base["links"]
    assert expanded["gpus"] == base["gpus"], "empty affinity cells leave no token; N/A is the GPU NUMA ID"
    assert expanded["warnings"], "the missing affinity values are reported"


def test_bytes_input_is_decoded(corpus):
    text = corpus("pcie-puget-wrx90-2gpu-1xcx7/topo.txt")
    assert parse_topo_matrix(text.encode()) == parse_topo_matrix(text)


def test_topo_mp_pcie_only_matrix():
    # Shape of `nvidia-smi topo -mp` (no NV# cells; PCIe path types between GPUs). Synthetic.
    text = ("\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tPIX\tPXB\tSYS\tPIX\t0-31\t0\t\tN/A\n"
            "GPU1\tPIX\t X \tPXB\tSYS\tPIX\t0-31\t0\t\tN/A\n"
            "GPU2\tPXB\tPXB\t X \tSYS\tPXB\t0-31\t0\t\tN/A\n"
            "GPU3\tSYS\tSYS\tSYS\t X \tSYS\t32-63\t1\t\tN/A\n"
            "NIC0\tPIX\tPIX\tPXB\tSYS\t X \n\nLegend:\n\n  X    = Self\n  PIX  = ...\n\n"
            "NIC Legend:\n\n  NIC0: mlx5_0\n")
    m = parse_topo_matrix(text)
    assert nvlink_pairs(m) == {}
    assert m["links"]["GPU0"] == {"GPU1": "PIX", "GPU2": "PXB", "GPU3": "SYS", "NIC0": "PIX"}
    assert gpu_nic_paths(m)[(2, "mlx5_0")] == "PXB"
    assert m["gpus"][3] == {"index": 3, "cpu_affinity": "32-63", "numa_affinity": "1", "gpu_numa_id": "N/A"}
    assert m["warnings"] == []


def test_nv_with_any_count_and_unknown_tokens_are_kept(corpus):
    text = corpus("workstation-3xa6000-nvlink-bridge-pair/topo.txt").replace("NV4", "NV123", 1)
    text = text.replace("NODE", "C2C", 1)
    m = parse_topo_matrix(text)
    assert m["links"]["GPU0"]["GPU1"] == "NV123"
    assert m["links"]["GPU0"]["GPU2"] == "C2C"
    assert any("unknown link type 'C2C'" in w for w in m["warnings"])
    assert any("GPU0-GPU1" in w for w in m["warnings"]), "NV123 one way, NV4 the other"
    assert nvlink_pairs(m) == {(0, 1): 123}


# --------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("text", [
    "", "   \n\t\n", "\x00\x01\x02\xff" * 20, "Legend:\n  X = Self\n",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
    "GPU0  X  NV12\nGPU1 NV12  X\n"])
def test_nothing_usable_raises_parse_error(text, assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_topo_matrix(text)
    assert_not_bug(info.value)
    assert info.value.what == "nvidia-smi topo -m"


def test_binary_garbage_raises_parse_error(assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_topo_matrix(bytes(range(256)) * 4)
    assert_not_bug(info.value)


@pytest.mark.parametrize("value", [None, 42, ["GPU0"]])
def test_non_text_input_raises_parse_error(value):
    with pytest.raises(ParseError):
        parse_topo_matrix(value)


def test_failure_message_quotes_the_first_line():
    with pytest.raises(ParseError) as info:
        parse_topo_matrix("Failed to initialize NVML: Driver/library version mismatch\n")
    assert "Driver/library version mismatch" in info.value.message


def test_header_only_gives_gpus_and_a_warning(corpus):
    header = corpus("hgx-h100-ib-mlx5ib-naming/topo.txt").splitlines()[0]
    m = parse_topo_matrix(header + "\n")
    assert [g["index"] for g in m["gpus"]] == list(range(8))
    assert {g["cpu_affinity"] for g in m["gpus"]} == {None}
    assert len(m["nics"]) == 13 and m["links"] == {}
    assert any("no matrix rows" in w for w in m["warnings"])


def test_cut_off_mid_row_gives_partial_matrix(corpus):
    text = corpus("hgx-h100-ib-mlx5ib-naming/topo.txt")
    cut = text[: text.index("GPU3    NV18") + 60]
    m = parse_topo_matrix(cut)
    assert len(m["gpus"]) == 8, "the header still names every GPU"
    assert m["links"]["GPU0"]["NIC0"] == "PIX"
    assert "NIC0" not in m["links"]["GPU3"]
    assert m["gpus"][3]["cpu_affinity"] is None
    assert any("GPU3" in w and "cut off" in w for w in m["warnings"])
    assert any("no row for GPU7" in w for w in m["warnings"])
    assert m["nics"][1] == {"index": 1, "name": None}, "the legend was cut off too"
    assert gpu_nic_paths(m)[(1, "NIC1")] == "PIX"


def test_row_with_missing_cells_is_reported(corpus):
    lines = corpus("h800-4gpu-container-17nic/topo.txt").split("\n")
    lines[2] = lines[2].replace("\tPIX", "\t", 1)  # GPU1 loses its PIX to NIC6: empty tab cell
    lines[3] = "\t".join(lines[3].split("\t")[:9])  # GPU2 row cut after NIC3
    m = parse_topo_matrix("\n".join(lines))
    assert "NIC6" not in m["links"]["GPU1"] and m["links"]["GPU1"]["NIC14"] == "PIX"
    assert any("GPU1" in w and "empty" in w for w in m["warnings"])
    assert any("GPU2" in w and "8 of 21" in w for w in m["warnings"])
    assert m["links"]["NIC7"]["GPU2"] == "PIX", "the NIC's row still has the cell"
    assert gpu_nic_paths(m)[(2, "mlx5_7")] == "PIX"


def test_space_separated_row_with_missing_cells(corpus):
    lines = corpus("a100-8gpu-no-nic-visible/topo.txt").split("\n")
    lines[3] = lines[3].replace("NV12  ", "", 1)  # GPU2 has 7 link tokens
    m = parse_topo_matrix("\n".join(lines))
    assert any("GPU2" in w and "7 of 8" in w for w in m["warnings"])
    assert m["gpus"][2]["cpu_affinity"] == "0-23", "affinity still found by its shape"


def test_junk_lines_duplicates_and_stray_legend(corpus):
    text = corpus("pcie-puget-wrx90-2gpu-1xcx7/topo.txt")
    lines = text.split("\n")
    lines.insert(2, "some garbage here")
    lines.insert(3, lines[1])  # GPU0 row twice
    m = parse_topo_matrix("\n".join(lines))
    assert any("ignored line 'some garbage here'" in w for w in m["warnings"])
    assert any("GPU0 appears twice" in w for w in m["warnings"])
    assert m["links"]["GPU0"]["GPU1"] == "PHB"


def test_legend_that_misses_a_nic(corpus):
    text = corpus("pcie-puget-wrx90-2gpu-1xcx7/topo.txt").replace("  NIC1: mlx5_1\n", "")
    m = parse_topo_matrix(text)
    assert m["nics"] == [{"index": 0, "name": "mlx5_0"}, {"index": 1, "name": None}]
    assert any("does not name NIC1" in w for w in m["warnings"])


def test_helpers_tolerate_partial_matrices():
    assert nvlink_pairs({}) == {}
    assert gpu_nic_paths({"gpus": [{"index": 0}], "nics": [{"index": 0, "name": None}], "links": {}}) == {}
