"""A NIC's QoS state has one reader: plugins/module_utils/rocetune_qos_tools.py. The agent imports
it through the link src/rocetune/probe/parsers/qos_tools.py; the roce_qos role's module imports it
from the collection and its boot script from beside it. Every recorded output of the QoS tools
(tests/fixtures/qos/PROVENANCE.md, and the corpus's mlnx_qos outputs) is read here by both, to
the values the output shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocetune.probe.parsers import qos_tools as agent_tools
from rocetune.probe.sources import qos as qos_source
from tests.unit.roles import QOS_FIXTURES, REPO, load_module_utils

MODULE_UTILS = REPO / "plugins" / "module_utils"
ROLE_STATE = load_module_utils("roce_qos", "roce_qos_state")
ROLE_BUFFER = load_module_utils("roce_qos", "roce_qos_buffer")
role_tools = ROLE_STATE.tools  # what the role's module and boot script read with

RECORDED = sorted(QOS_FIXTURES.glob("*.txt")) + sorted((REPO / "tests" / "fixtures" / "corpus").glob("mlnx_qos-*/*.txt"))
READERS = ("parse_mlnx_qos", "parse_mlnx_qos_buffers", "dcb_app_dscp", "dcb_pfc", "dcb_pfc_delay", "dcb_ets",
           "parse_dcb_buffer", "parse_pause")

DEFAULT_DSCP_MAP = {d: d // 8 for d in range(64)}  # mlx5's: DSCP 8p..8p+7 to priority p
VENDOR_TCS = {"tc_tsa": ["vendor"] * 8, "tc_bw": [0] * 8, "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7]}
# What each recorded output says, read by the reader of its tool. The two stderr texts are what
# dcb prints for a NIC without DCB: the callers see its exit status and this text, no reader runs.
EXPECTED = {
    "dcb-app-show-N-after-replace-manpage.txt": {"dcb_app_dscp": {0: [0], 24: [4], 48: [6]}},
    "dcb-app-show-N-manpage.txt": {"dcb_app_dscp": {0: [0], 24: [2, 3], 48: [6]}},
    "dcb-ets-show-manpage.txt": {"dcb_ets": {"prio_tc": [0, 1, 2, 3, 4, 5, 6, 7],
                                             "tc_tsa": ["ets"] * 3 + ["strict"] * 5,
                                             "tc_bw": [33, 33, 34, 0, 0, 0, 0, 0]}},
    "dcb-pfc-show-manpage.txt": {"dcb_pfc": [0, 0, 0, 0, 0, 0, 1, 1], "dcb_pfc_delay": 4096},
    "dcb-j-buffer-show-virtio-not-supported.txt": {"not_supported": True},
    "dcb-show-veth-not-supported.txt": {"not_supported": True},
    "mlnx_qos-dscp-buffers-mlnx-tools-commit.txt": {
        "parse_mlnx_qos": dict(VENDOR_TCS, trust="dscp", dscp_prio=DEFAULT_DSCP_MAP, pfc=[0, 1, 1, 1, 1, 1, 0, 0]),
        "parse_mlnx_qos_buffers": {"cable_length": 7, "prio_buffer": [0, 1, 1, 1, 1, 1, 0, 0],
                                   "buffer_size": [32768, 229120, 0, 0, 0, 0, 0, 0], "total_size": None}},
    "mlnx_qos-i-eth2-buffers-mlnx-tools-commit.txt": {
        "parse_mlnx_qos": dict(VENDOR_TCS, trust="pcp", dscp_prio={}, pfc=[0] * 8),
        "parse_mlnx_qos_buffers": {"cable_length": 7, "prio_buffer": [1] * 8,
                                   "buffer_size": [0, 187200, 0, 0, 0, 0, 0, 0], "total_size": 2044224}},
    "mlnx_qos-i-eth2-community.txt": {
        "parse_mlnx_qos": {"trust": "dscp", "dscp_prio": DEFAULT_DSCP_MAP, "pfc": [1, 0, 1, 0, 0, 0, 1, 1],
                           "tc_tsa": ["ets"] * 6 + ["strict", "ets"], "tc_bw": [10] * 6 + [0, 40],
                           "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7]},
        "parse_mlnx_qos_buffers": None},  # MLNX_OFED 4.2 prints no buffers
    "mlnx_qos_-i_eth4.txt": {
        "parse_mlnx_qos": dict(VENDOR_TCS, trust="dscp", dscp_prio=DEFAULT_DSCP_MAP, pfc=[0, 0, 0, 1, 0, 0, 0, 0]),
        "parse_mlnx_qos_buffers": None},  # `Cable len: 7` and no buffer lines (2018)
}


def test_the_agent_and_the_role_read_with_one_file():
    link = REPO / "src" / "rocetune" / "probe" / "parsers" / "qos_tools.py"
    assert link.is_symlink()
    shared = os.path.realpath(MODULE_UTILS / "rocetune_qos_tools.py")
    assert os.path.realpath(agent_tools.__file__) == shared == os.path.realpath(role_tools.__file__)
    assert qos_source.qos_tools is agent_tools


def test_the_packed_agent_carries_the_file_behind_the_link():
    import io
    import zipfile

    from rocetune import agentpack

    data = agentpack.build()
    packed = zipfile.ZipFile(io.BytesIO(data[len(agentpack.shebang()):]))
    assert packed.read("rocetune/probe/parsers/qos_tools.py") == (MODULE_UTILS / "rocetune_qos_tools.py").read_bytes()


@pytest.mark.parametrize("module", [qos_source, ROLE_STATE, ROLE_BUFFER], ids=["probe", "role", "role-buffers"])
def test_no_second_reader_is_left_beside_it(module):
    # A reader of these outputs defined again in the probe or the role would drift from this one.
    for name in READERS + ("parse_dcb",):
        assert getattr(module, name, None) is None, f"{module.__name__}.{name}"


def test_every_recorded_output_has_its_expected_reading():
    assert sorted(p.name for p in RECORDED) == sorted(EXPECTED)


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_the_agent_and_the_role_read_every_recorded_output_alike(path):
    for reader, want in EXPECTED[path.name].items():
        if reader == "not_supported":
            assert (agent_tools.NOT_SUPPORTED in path.read_text()) is want
            continue
        text = path.read_text()
        assert getattr(agent_tools, reader)(text) == getattr(role_tools, reader)(text) == want, reader


@pytest.mark.parametrize("path", [p for p in RECORDED if "parse_mlnx_qos" in EXPECTED[p.name]],
                         ids=lambda p: p.name)
def test_what_the_probe_reports_is_what_the_role_reads(path):
    text = path.read_text()
    role = role_tools.parse_mlnx_qos(text)
    assert qos_source.mlnx_qos_state(text) == {"trust": role["trust"], "dscp_prio": role["dscp_prio"],
                                               "pfc_enabled": [p for p in range(8) if role["pfc"][p]]}


def test_the_probe_takes_the_first_priority_dcb_prints_for_a_dscp():
    app = (QOS_FIXTURES / "dcb-app-show-N-manpage.txt").read_text()  # 24:2 24:3
    pfc = (QOS_FIXTURES / "dcb-pfc-show-manpage.txt").read_text()
    assert qos_source.dcb_state(app, pfc) == {"trust": "dscp", "dscp_prio": {0: 0, 24: 2, 48: 6}, "pfc_enabled": [6, 7]}
    assert qos_source.dcb_state("", pfc)["trust"] is None  # no DSCP app entry: trust unknown


def test_the_boot_script_imports_it_from_the_files_installed_beside_it(tmp_path):
    # roles/roce_qos/vars/main.yml names what the role installs beside the script (and removes).
    boot = yaml.safe_load((REPO / "roles" / "roce_qos" / "vars" / "main.yml").read_text())["__roce_qos_boot"]
    names = [re.search(r"plugins/module_utils/(\w+\.py)", lib["content"]).group(1) for lib in boot["libs"]]
    assert {"rocetune_qos_tools.py", "roce_qos_state.py"} <= set(names)
    script = REPO / "roles" / "roce_qos" / "files" / "rocetune_qos_reapply.py"
    assert boot["script"]["path"].endswith("/" + script.name)
    (tmp_path / script.name).write_text(script.read_text())
    for name in names:
        (tmp_path / name).write_text((MODULE_UTILS / name).read_text())
    # -E -s: no PYTHONPATH or user site; the script's own directory is all it has, as at boot.
    proc = subprocess.run([sys.executable, "-E", "-s", str(tmp_path / script.name)], cwd="/",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: rocetune_qos_reapply.py"), proc.stderr


# ---------------------------------------------------------------------------------------------
# Outputs that are not what the tools print


@pytest.mark.parametrize("reader, text, message", [
    ("parse_mlnx_qos", "DCBX mode: OS controlled\n", "mlnx_qos: no 'Priority trust state' line"),
    ("dcb_app_dscp", "dscp-prio CS3:3\n", "run dcb with -N for numeric DSCPs"),
    ("dcb_app_dscp", "dscp-prio 26:x\n", "dcb app: unexpected entry '26:x'"),
    ("dcb_ets", "tc-bw 0:half\n", "dcb ets: tc-bw 0:'half' is not a number"),
    ("parse_dcb_buffer", "prio-buffer 0:0 1:0\n", "dcb -j buffer show: not JSON"),
    ("parse_dcb_buffer", '{"prio_buffer": [0, 0, 0, 0, 0, 0, 0, 0], "buffer_size": [0]}', "buffer_size is not 8 integers"),
])
def test_an_output_it_cannot_take_is_one_line_naming_the_tool(reader, text, message):
    with pytest.raises(agent_tools.QosOutputError, match=re.escape(message)):
        getattr(agent_tools, reader)(text)


def test_the_role_reports_an_unreadable_output_as_its_own_error():
    with pytest.raises(ROLE_STATE.QosError, match="numeric DSCPs"):
        ROLE_STATE.dcb_commands("eth0", ROLE_STATE.desired(ROLE_STATE.load_plan(None, yaml.safe_load)),
                                "", "dscp-prio CS3:3\n", "")


def _mutations():
    texts = [p.read_text() for p in RECORDED]
    whole = st.sampled_from(texts)
    cut = st.tuples(whole, st.integers(0, 4000)).map(lambda t: t[0][:t[1]])
    noisy = st.tuples(whole, st.integers(0, 4000), st.sampled_from(["9", "²", "٣", ":", ",", "\n", " 99", "-1", "x"]))
    return st.one_of(st.text(), cut, noisy.map(lambda t: t[0][:t[1]] + t[2] + t[0][t[1]:]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_no_other_exception_leaves_a_reader(text):
    for reader in READERS:
        try:
            getattr(agent_tools, reader)(text)
        except agent_tools.QosOutputError:
            pass
