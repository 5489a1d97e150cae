"""Property tests: whatever the input, a parser returns well-formed data or raises ParseError.

Inputs are arbitrary text and mutations of the recorded outputs (truncation at any point, lost
lines, inserted noise, flipped bytes, expanded tabs, CRLF). A ParseError that carries the guard's
"unexpected parser failure" text counts as a failure: it means a parser crashed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocetune.errors import ParseError
from rocetune.probe.parsers._common import BUG_PREFIX
from rocetune.probe.parsers.ibstat import parse_ibstat, parse_ibstatus
from rocetune.probe.parsers.ibv_devinfo import parse_ibv_devinfo
from rocetune.probe.parsers.ip_addr import parse_ip_addr
from rocetune.probe.parsers.nvsmi_query import parse_gpu_query
from rocetune.probe.parsers.nvsmi_topo import gpu_nic_paths, nvlink_pairs, parse_topo_matrix

# Same place as conftest.CORPUS_DIR; computed here because the inputs are needed at collection time.
CORPUS_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
TOPO_FILES = sorted(CORPUS_DIR.glob("*/topo.txt"))


def read_corpus(rel):
    return (CORPUS_DIR / rel).read_bytes().decode("utf-8")


FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

QUERY_SAMPLE = "".join(f"{i}, 00000000:{b}:00.0, NVIDIA H100 80GB HBM3\n"
                       for i, b in enumerate(["18", "2A", "3A"]))
SNIPPETS = ["X", "NV", "\t", " ", "\n", "PIX", "GPU9", "NIC", ":", "'", "hca_id:", "port:", "CA '", "\x1b[4m",
            "[", "{", "\"", "-1"]


def _opt_str(value):
    return value is None or isinstance(value, str)


def check_topo(result):
    assert set(result) == {"gpus", "nics", "links", "warnings"}
    for g in result["gpus"]:
        assert isinstance(g["index"], int)
        assert all(_opt_str(g[k]) for k in ("cpu_affinity", "numa_affinity", "gpu_numa_id"))
    for n in result["nics"]:
        assert isinstance(n["index"], int) and _opt_str(n["name"])
    for row, cells in result["links"].items():
        assert row[:3] in ("GPU", "NIC") and isinstance(cells, dict)
        assert all(c[:3] in ("GPU", "NIC") and isinstance(v, str) and v for c, v in cells.items())
    assert all(isinstance(w, str) for w in result["warnings"])
    assert isinstance(nvlink_pairs(result), dict)
    assert isinstance(gpu_nic_paths(result), dict)


def check_query(result):
    for row in result:
        assert isinstance(row["index"], int) and _opt_str(row["bus_id"]) and _opt_str(row["name"])


def check_ibstat(result):
    for ca in result:
        assert isinstance(ca["name"], str) and isinstance(ca["ports"], list)
        for p in ca["ports"]:
            assert isinstance(p["port"], int) and _opt_str(p["state"]) and _opt_str(p["link_layer"])


def check_ibv(result):
    devices, warnings = result
    assert all(isinstance(w, str) for w in warnings)
    for d in devices:
        for p in d["ports"]:
            assert isinstance(p["port"], int)
            assert p["active_mtu"] is None or isinstance(p["active_mtu"], int)


def check_ip(result):
    for name, addrs in result.items():
        assert isinstance(name, str)
        for a in addrs:
            assert a["family"] in ("inet", "inet6") and isinstance(a["prefixlen"], int)


PARSERS = {
    "topo": (parse_topo_matrix, check_topo, [p.read_bytes().decode("utf-8") for p in TOPO_FILES]),
    "query": (parse_gpu_query, check_query, [QUERY_SAMPLE]),
    "ibstat": (parse_ibstat, check_ibstat, [read_corpus("h20-8gpu-cx6lx-2port-only/ibstat.txt")]),
    "ibstatus": (parse_ibstatus, check_ibstat, [read_corpus("hgx-h100-ib-mlx5ib-naming/ibstatus-partial.txt"),
                                                read_corpus("ibstatus-cx3-fdr-2port/ibstatus.txt")]),
    "ibv_devinfo": (parse_ibv_devinfo, check_ibv, [
        read_corpus("ibv_devinfo-cx3-roce-2port/ibv_devinfo.txt"),
        read_corpus("ibv_devinfo-cx3-ib-2dev/ibv_devinfo.txt"),
        read_corpus("ibv_devinfo-cx3-ib-2dev/ibv_devinfo-d-i2-v.txt"),
        read_corpus("ibv_devinfo-softroce-rxe-verbose/ibv_devinfo-v.txt")]),
    "ip_addr": (parse_ip_addr, check_ip, [read_corpus("ip-addr-debian12-build-host/ip-j-addr-show.json")]),
}


def run(name, data):
    parser, check, _ = PARSERS[name]
    try:
        result = parser(data)
    except ParseError as exc:
        assert BUG_PREFIX not in str(exc), f"{name} crashed: {exc}"
        return
    check(result)
    json.dumps(result if name != "ibv_devinfo" else list(result))  # results are plain JSON data


@st.composite
def mutated(draw, texts):
    """A recorded output after 1-4 random edits; sometimes as bytes with flipped bytes."""
    text = draw(st.sampled_from(texts))
    for op in draw(st.lists(st.sampled_from(["truncate", "drop_lines", "insert", "replace", "dup_line",
                                             "expandtabs", "crlf", "strip_lines"]), min_size=1, max_size=4)):
        if op == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif op == "drop_lines":
            lines = text.splitlines(True)
            for _ in range(draw(st.integers(1, 5))):
                if lines:
                    del lines[draw(st.integers(0, len(lines) - 1))]
            text = "".join(lines)
        elif op == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.text(max_size=30)) + text[at:]
        elif op == "replace":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at + draw(st.integers(0, 5)):]
        elif op == "dup_line":
            lines = text.splitlines(True)
            if lines:
                k = draw(st.integers(0, len(lines) - 1))
                lines.insert(draw(st.integers(0, len(lines))), lines[k])
            text = "".join(lines)
        elif op == "expandtabs":
            text = text.expandtabs(draw(st.sampled_from([1, 4, 8])))
        elif op == "crlf":
            text = text.replace("\n", "\r\n")
        elif op == "strip_lines":
            text = "\n".join(line.strip() for line in text.splitlines())
    if draw(st.booleans()):
        return text
    raw = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(0, 8))):
        if raw:
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
    return bytes(raw)


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(text=st.text(max_size=3000))
def test_arbitrary_text(name, text):
    run(name, text)


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_mutated_recorded_outputs(name, data):
    run(name, data.draw(mutated(PARSERS[name][2])))


@FUZZ
@given(lines=st.lists(st.lists(st.sampled_from(["GPU0", "GPU1", "NIC0", "mlx5_0", "X", "NV12", "PIX", "SYS",
                                                "0-3", "N/A", "CPU", "Affinity", "", " "]), max_size=8),
                      max_size=8),
       sep=st.sampled_from(["\t", " ", "  "]))
def test_topo_made_of_plausible_tokens(lines, sep):
    run("topo", "\n".join(sep.join(cells) for cells in lines))


@FUZZ
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                              st.sampled_from(["ifname", "addr_info", "family", "local", "prefixlen"]),
                              inner, max_size=5), max_leaves=30))
def test_ip_addr_arbitrary_json(value):
    run("ip_addr", json.dumps(value))
