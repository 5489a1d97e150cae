"""The QoS plan file: one source for NCCL_IB_TC and the switch-facing configuration."""

from __future__ import annotations

import pytest

from rocetune.errors import ExitCode, RocetuneError
from rocetune.model.qos import QosPlan, default_plan, dump_yaml, load_file, load_text

FULL = """\
# fabric QoS for cluster A
version: 1
trust: dscp
data:
  dscp: 26        # AF31
  priority: 3
cnp:
  dscp: 48
  priority: 6
ecn: ect0
lossless_priorities: [3]
cts:
  dscp: null
"""


def test_defaults_are_the_common_convention():
    q = default_plan()
    assert (q.data.dscp, q.data.priority, q.cnp.dscp, q.cnp.priority) == (26, 3, 48, 6)
    assert q.traffic_class == 106 and q.lossless_priorities == (3,) and q.trust == "dscp"
    assert q.fifo_traffic_class is None


def test_full_file():
    q = load_text(FULL, "qos.yml")
    assert q.traffic_class == 106 and q.source == "qos.yml" and q.warnings == []


def test_dump_reads_back_identically():
    q = load_text("data:\n  dscp: 24\n  priority: 4\necn: 0\nlossless_priorities: [4, 5]\ncts:\n  dscp: 46\n", "a")
    again = load_text(dump_yaml(q), "b")
    assert dict(again.to_dict(), source="a") == q.to_dict()
    assert (again.traffic_class, again.fifo_traffic_class, again.lossless_priorities) == (96, 184, (4, 5))


def test_ansible_and_rocetune_read_the_same_numbers():
    """The roles read the plan with PyYAML (Ansible's from_yaml); rocetune must agree exactly."""
    import yaml

    for text in (FULL, dump_yaml(default_plan()), "data:\n  dscp: 0x1a\n", "data: {dscp: 24, priority: 4}\n"):
        doc = yaml.safe_load(text)
        q = load_text(text, "q")
        assert q.data.dscp == (doc.get("data") or {}).get("dscp", 26)


def test_leading_zero_is_refused_because_yaml_readers_disagree():
    with pytest.raises(RocetuneError) as e:
        load_text("data:\n  dscp: 010\n", "q.yml")
    assert "octal 8" in e.value.message and "line 2" in e.value.message


def test_block_lists_and_flow_mappings_are_yaml_too():
    q = load_text("data: {dscp: 24, priority: 4}\nlossless_priorities:\n  - 4\n", "q")
    assert (q.data.dscp, q.lossless_priorities) == (24, (4,))


def test_json_is_accepted():
    q = load_text('{"data": {"dscp": 34, "priority": 4}, "lossless_priorities": [4]}', "q.json")
    assert q.traffic_class == (34 << 2) | 2


@pytest.mark.parametrize("text,needle", [
    ("data:\n  dscp: 64\n", "data.dscp: 64 is out of range 0..63"),
    ("data:\n  priority: 8\n", "data.priority: 8 is out of range 0..7"),
    ("cnp:\n  dscp: -1\n", "cnp.dscp: -1 is out of range 0..63"),
    ("ecn: ce\n", "CE"),
    ("ecn: 3\n", "CE"),
    ("dscp: 26\n", "unknown key(s) dscp"),
    ("data:\n  dsp: 26\n", "data: unknown key(s) dsp"),
    ("data:\n  dscp: twenty-six\n", "expected an integer"),
    ("data:\n  dscp: 48\n", "both 48"),
    ("trust: l2\n", "trust"),
    ("data:\n\tdscp: 26\n", "not valid YAML"),
    ("data:\n  dscp: 26\n  dscp: 24\n", "duplicate key"),
    ("lossless_priorities: 3\n", "expected a list"),
    ("data: [26, 3]\n", "data: expected a mapping"),
    ("version: 2\n", "version"),
    ("lossless_priorities: [3, 9]\n", "0..7"),
])
def test_errors_are_clear_and_name_the_file(text, needle):
    with pytest.raises(RocetuneError) as e:
        load_text(text, "/etc/rocetune/qos.yml")
    assert needle in e.value.message and "/etc/rocetune/qos.yml" in e.value.message
    assert e.value.code == ExitCode.INPUT


def test_warnings_for_odd_but_legal_plans():
    assert any("share priority" in w for w in load_text("cnp:\n  dscp: 48\n  priority: 3\n", "q").warnings)
    assert any("lossy" in w for w in load_text("lossless_priorities: [4]\n", "q").warnings)
    assert any("ECN alone" in w for w in load_text("lossless_priorities: []\n", "q").warnings)


def test_missing_file(tmp_path):
    with pytest.raises(RocetuneError) as e:
        load_file(str(tmp_path / "nope.yml"))
    assert "no such file" in e.value.message


def test_plan_is_a_dataclass_with_a_dict_view():
    d = QosPlan().to_dict()
    assert d["traffic_class"] == 106 and d["data"] == {"dscp": 26, "priority": 3}


def test_fabric_description_is_read_checked_and_dumped():
    q = load_text("fabric:\n  tiers: 2\n  rail_optimised: true\n", "q")
    assert (q.fabric.tiers, q.fabric.rail_optimised, q.fabric.ecmp, q.fabric.hashes_flows) == (2, True, None, True)
    assert q.to_dict()["fabric"]["hashes_flows"] is True and not q.classes_stated
    again = load_text(dump_yaml(q), "b")
    assert again.fabric == q.fabric
    assert load_text("fabric:\n  tiers: 1\n", "q").fabric.hashes_flows is False
    assert load_text("fabric:\n  rail_optimised: false\n", "q").fabric.hashes_flows is None
    assert default_plan().fabric is None and load_text(FULL, "q").classes_stated


@pytest.mark.parametrize("text,needle", [
    ("fabric:\n  tiers: 0\n", "fabric.tiers: 0 is out of range 1..4"),
    ("fabric:\n  tiers: two\n", "fabric.tiers: expected an integer"),
    ("fabric:\n  rail_optimized: true\n", "fabric: unknown key(s) rail_optimized"),
    ("fabric:\n  ecmp: 1\n", "fabric.ecmp: expected true or false"),
    ("fabric:\n  tiers: 1\n  ecmp: true\n", "tiers 1 with ecmp true"),
    ("fabric: leaf-spine\n", "fabric: expected a mapping"),
])
def test_fabric_errors_name_the_key(text, needle):
    with pytest.raises(RocetuneError) as e:
        load_text(text, "/etc/rocetune/qos.yml")
    assert needle in e.value.message and e.value.code == ExitCode.INPUT


# One contract: the agent and the roce_qos role read the plan through one validator --------------
PLANS = [
    "", "version: 1\n", "trust: pcp\n", "data: {dscp: 24, priority: 4}\nlossless_priorities: [4]\n",
    "cnp: {dscp: 46, priority: 7}\necn: ect1\n", "ecn: not-ect\n", "ecn: 0\n", "ecn: ce\n", "ecn: 3\n",
    "lossless_priorities: []\n", "lossless_priorities: [4]\n", "lossless_priorities: [8]\n",
    "lossless_priorities: 3\n", "data: {dscp: af31}\n", "data: {dscp: 99}\n", "data: {dscp: 48}\n",
    "data: {priority: 6}\n", "data: 26\n", "data: {dscp: 26, prio: 3}\n", "version: 2\n", "trust: vlan\n",
    "lossles_priorities: [3]\n", "cts: {dscp: 46}\n", "cts: {dscp: 99}\n", "cts: {tos: 1}\n",
    "fabric: {tiers: 2}\n", "fabric: {tiers: 2, ecmp: false, rail_optimised: true}\n",
    "fabric: {tiers: 1, ecmp: true}\n", "fabric: {tiers: 5}\n", "fabric: {tier: 2}\n", "fabric: {ecmp: yes}\n",
    "fabric: 2\n", "- 1\n", "data: {dscp: true}\n",
    "buffer: {cable_length: 30}\n", "buffer: {cable_length: 1000}\n", "buffer: {cable_len: 30}\n",
    "buffer: {prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0], buffer_size: [32768, 229120, 0, 0, 0, 0, 0, 0]}\n",
    "buffer: {prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0], buffer_size: [32768, 0, 0, 0, 0, 0, 0, 0]}\n",
    "buffer: {prio_buffer: [0, 0, 0, 1]}\n", "buffer: {}\n", "buffer: 30\n",
    "lossless_priorities: []\nbuffer: {cable_length: 5, prio_buffer: [1, 1, 1, 1, 1, 1, 1, 1]}\n",
]


def _agent(text):
    try:
        plan = load_text(text, "qos.yml")
    except RocetuneError as exc:
        message = exc.message.split("QoS plan qos.yml: ", 1)[1]
        if exc.hint and not exc.hint.startswith("see docs/qos.md"):  # the role shows the hint in the line
            message += f" ({exc.hint})"
        return ("refused", message)
    return ("ok", {"trust": plan.trust, "data": [plan.data.dscp, plan.data.priority],
                   "cnp": [plan.cnp.dscp, plan.cnp.priority], "ecn": plan.ecn,
                   "lossless": list(plan.lossless_priorities), "cts": plan.cts_dscp,
                   "fabric": None if plan.fabric is None else [plan.fabric.tiers, plan.fabric.rail_optimised,
                                                               plan.fabric.ecmp],
                   "buffer": None if plan.buffer is None else plan.buffer.to_dict(),
                   "tos": plan.traffic_class, "warnings": plan.warnings})


def _role(text):
    import yaml

    from tests.unit.roles import load_module_utils

    Q = load_module_utils("roce_qos", "roce_qos_state")
    try:
        p = Q.parse_plan(text, yaml.safe_load, "qos.yml")
    except Q.QosError as exc:
        return ("refused", str(exc).split("qos.yml: ", 1)[1])
    fab = p["fabric"]
    return ("ok", {"trust": p["trust"], "data": [p["data"]["dscp"], p["data"]["priority"]],
                   "cnp": [p["cnp"]["dscp"], p["cnp"]["priority"]], "ecn": p["ecn"],
                   "lossless": p["lossless_priorities"], "cts": p["cts_dscp"],
                   "fabric": None if fab is None else [fab["tiers"], fab["rail_optimised"], fab["ecmp"]],
                   "buffer": p["buffer"], "tos": Q.traffic_class(p), "warnings": p["warnings"]})


@pytest.mark.parametrize("text", PLANS)
def test_the_agent_and_the_role_read_every_plan_alike(text):
    assert _agent(text) == _role(text)


def test_they_read_it_with_the_same_code():
    import os

    from rocetune.core import qos_plan

    repo = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    copy = os.path.join(repo, "plugins", "module_utils", "rocetune_qos_plan.py")
    with open(copy) as fh:
        head, body = fh.read().split("\n", 1)
    with open(qos_plan.__file__) as fh:  # the role's file is the generated copy of the agent's
        assert body == fh.read() and head.endswith("from src/rocetune/core/qos_plan.py; edit that file.")
    assert {_agent(t)[0] for t in PLANS} == {"ok", "refused"}  # the corpus exercises both outcomes


# ---------------------------------------------------------------------------------------------
# The lossless buffers (`buffer:`), which the roce_qos role applies and the agent carries

BUFFER = """\
lossless_priorities: [3]
buffer:
  cable_length: 30
  prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]
  buffer_size: [19872, 220896, 0, 0, 0, 0, 0, 0]
"""


def test_buffer_section_is_read_dumped_and_read_back():
    q = load_text(BUFFER, "q")
    assert q.buffer.cable_length == 30 and q.buffer.prio_buffer == (0, 0, 0, 1, 0, 0, 0, 0)
    assert q.buffer.buffer_size[1] == 220896 and q.warnings == []
    assert q.to_dict()["buffer"] == {"cable_length": 30, "prio_buffer": [0, 0, 0, 1, 0, 0, 0, 0],
                                     "buffer_size": [19872, 220896, 0, 0, 0, 0, 0, 0]}
    assert load_text(dump_yaml(q), "again").buffer == q.buffer
    partial = load_text("buffer:\n  cable_length: 5\n", "q").buffer
    assert (partial.cable_length, partial.prio_buffer, partial.buffer_size) == (5, None, None)


def test_plans_without_buffers_keep_their_dict_and_dump():
    # Env headers, explain and the goldens carry the plan's dict: a plan without `buffer` is unchanged.
    assert "buffer" not in default_plan().to_dict() and "buffer" not in load_text(FULL, "q").to_dict()
    assert "buffer" not in dump_yaml(load_text(FULL, "q"))


def test_a_file_with_only_buffers_states_no_classes():
    assert not load_text("version: 1\nbuffer: {cable_length: 7}\n", "q").classes_stated


@pytest.mark.parametrize("text, needle", [
    ("buffer: 30\n", "buffer: expected a mapping"),
    ("buffer: {cable_len: 30}\n", "buffer: unknown key(s) cable_len"),
    ("buffer: {}\n", "buffer: states none of cable_length, prio_buffer, buffer_size"),
    ("buffer: {cable_length: 0}\n", "buffer.cable_length: 0 is out of range 1..999"),
    ("buffer: {cable_length: 1000}\n", "buffer.cable_length: 1000 is out of range 1..999"),
    ("buffer: {cable_length: 30m}\n", "buffer.cable_length: expected an integer 1..999, got '30m'"),
    ("buffer: {cable_length: true}\n", "buffer.cable_length: expected an integer"),
    ("buffer: {prio_buffer: [0, 0, 0, 1, 0, 0, 0]}\n", "buffer.prio_buffer: expected a list of 8 integers"),
    ("buffer: {prio_buffer: 1}\n", "buffer.prio_buffer: expected a list of 8 integers"),
    ("buffer: {prio_buffer: [0, 0, 0, 8, 0, 0, 0, 0]}\n", "buffer.prio_buffer[3]: 8 is out of range 0..7"),
    ("buffer: {buffer_size: [0, 0, 0, -1, 0, 0, 0, 0]}\n", "buffer.buffer_size[3]: -1 is out of range"),
    ("buffer: {buffer_size: [0, 4294967296, 0, 0, 0, 0, 0, 0]}\n", "buffer.buffer_size[1]: 4294967296 is out"),
    ("buffer: {buffer_size: [0, 128K, 0, 0, 0, 0, 0, 0]}\n", "buffer.buffer_size[1]: expected an integer"),
    ("buffer:\n  prio_buffer: [0, 0, 0, 1, 0, 0, 0, 0]\n  buffer_size: [131072, 0, 0, 0, 0, 0, 0, 0]\n",
     "buffer.buffer_size[1] is 0 but lossless priority 3 is in buffer 1"),
])
def test_buffer_errors_name_the_key(text, needle):
    with pytest.raises(RocetuneError) as e:
        load_text(text, "qos.yml")
    assert needle in e.value.message, e.value.message


def test_buffer_warnings_say_what_the_nic_would_do():
    shared = load_text("buffer: {prio_buffer: [1, 1, 1, 1, 1, 1, 1, 1]}\n", "q").warnings
    assert shared == ["buffer 1 holds lossless and lossy priorities (0, 1, 2, 4, 5, 6, 7): PFC pauses the "
                      "lossy ones too"]
    alone = load_text("buffer: {cable_length: 30}\n", "q").warnings
    assert alone == ["buffer.cable_length alone: mlx5 resizes the PFC headroom from it only once the host "
                     "has set the port buffers (prio_buffer or buffer_size, docs/qos.md)"]
    no_pfc = load_text("lossless_priorities: []\nbuffer: {cable_length: 30, prio_buffer: [0, 0, 0, 0, 0, 0, 0, 0]}\n",
                       "q").warnings
    assert "buffer.cable_length with no lossless priority: the cable length only sizes PFC headroom" in no_pfc


def test_the_documented_format_is_a_valid_plan():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "qos.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    q = load_text(block, "docs/qos.md")
    assert q.buffer.cable_length == 30 and q.buffer.prio_buffer[3] == 1 and q.warnings == []
