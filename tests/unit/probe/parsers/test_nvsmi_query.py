"""nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader parser.

The corpus has no recorded query output; the lines below follow nvidia-smi's documented CSV
format (", " separated, 8-hex-digit PCI domain, upper-case hex).
"""

from __future__ import annotations

import pytest

from rocetune.errors import ParseError
from rocetune.probe.parsers.nvsmi_query import normalize_bus_id, parse_gpu_query

H100_NODE = "".join(f"{i}, 00000000:{bus}:00.0, NVIDIA H100 80GB HBM3\n"
                    for i, bus in enumerate(["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]))


def test_h100_node():
    rows = parse_gpu_query(H100_NODE)
    assert len(rows) == 8
    assert rows[0] == {"index": 0, "bus_id": "0000:18:00.0", "name": "NVIDIA H100 80GB HBM3"}
    assert rows[5]["bus_id"] == "0000:ab:00.0"


@pytest.mark.parametrize("raw,bdf", [
    ("00000000:0F:00.0", "0000:0f:00.0"),
    ("00000001:00:00.0", "0001:00:00.0"),  # Hyper-V style synthetic domain
    ("0000000A:00:00.0", "000a:00:00.0"),
    ("00010000:01:00.0", "10000:01:00.0"),  # VMD domain: sysfs prints it with 5 digits too
    ("0000:3b:00.1", "0000:3b:00.1"),
    ("3B:00.0", "0000:3b:00.0"),
    (" 00000000:0F:00.0 ", "0000:0f:00.0"),
    ("[N/A]", None), ("", None), ("0000:3b:00.8", None), ("zz:00.0", None), (None, None),
])
def test_normalize_bus_id(raw, bdf):
    assert normalize_bus_id(raw) == bdf


def test_header_line_blank_lines_and_order():
    text = ("index, pci.bus_id, name\n\n1, 00000000:3B:00.0, Tesla V100-SXM2-16GB\n"
            "0, 00000000:1A:00.0, Tesla V100-SXM2-16GB\n")
    rows = parse_gpu_query(text)
    assert [(r["index"], r["bus_id"]) for r in rows] == [(0, "0000:1a:00.0"), (1, "0000:3b:00.0")]


def test_names_with_commas_and_unavailable_values():
    warnings = []
    rows = parse_gpu_query("0, 00000000:01:00.0, Some, GPU\n1, [N/A], [N/A]\n", warnings)
    assert rows[0]["name"] == "Some, GPU"
    assert rows[1] == {"index": 1, "bus_id": None, "name": None}
    assert warnings == ["GPU 1: unreadable bus id '[N/A]'"]


def test_no_devices_found_is_an_empty_list():
    warnings = []
    assert parse_gpu_query("No devices were found\n", warnings) == []
    assert warnings == ["nvidia-smi: No devices were found"]


def test_junk_lines_and_duplicates_are_warnings():
    warnings = []
    rows = parse_gpu_query("garbage line\n0, 00000000:01:00.0, A\n0, 00000000:02:00.0, B\n", warnings)
    assert rows == [{"index": 0, "bus_id": "0000:01:00.0", "name": "A"}]
    assert warnings == ["ignored line 'garbage line'", "GPU 0 listed twice; kept the first"]


@pytest.mark.parametrize("text", [
    "", "  \n",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n",
    "Failed to initialize NVML: Driver/library version mismatch\n",
    "\x00\xff\xfe garbage",
])
def test_nothing_usable_raises(text, assert_not_bug):
    with pytest.raises(ParseError) as info:
        parse_gpu_query(text)
    assert_not_bug(info.value)


def test_cut_off_line_is_skipped():
    warnings = []
    rows = parse_gpu_query(H100_NODE + "8, 000000", warnings)
    assert len(rows) == 8 and warnings == ["ignored line '8, 000000'"]
