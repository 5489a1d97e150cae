"""Reading a topology file found under a root: safe, bounded, and one line when it is bad."""

from __future__ import annotations

import pytest

from rocetune.nccl.topo_read import MAX_BYTES, MAX_NODES, TopoReadError, from_nodes, parse_topology, to_nodes

GOOD = """<!-- a comment NCCL skips -->
<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="  Shanghai  " familyid="7" modelid="91">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0001:00:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
</system>
"""


def test_reads_the_tree_and_keeps_attribute_spaces():
    tree = parse_topology(GOOD)
    cpu = tree.find("cpu")[0]
    assert cpu.attrs["vendor"] == "  Shanghai  "
    assert cpu.children[0].children[0].attrs["busid"] == "0001:00:00.0"


def test_flat_nodes_round_trip():
    tree = parse_topology(GOOD)
    nodes = to_nodes(tree)
    assert [n["tag"] for n in nodes] == ["system", "cpu", "pci", "pci"] and nodes[0]["parent"] is None
    assert from_nodes(nodes) == tree


@pytest.mark.parametrize("nodes", [
    [{"tag": "system", "attrs": {}, "parent": None}, {"tag": "cpu", "attrs": {}, "parent": None}],
    [{"tag": "system", "attrs": {}, "parent": None}, {"tag": "cpu", "attrs": {}, "parent": 5}],
    [{"tag": "cpu", "attrs": {}, "parent": 0}],
])
def test_a_list_that_is_not_one_tree_is_refused(nodes):
    assert from_nodes(nodes) is None


@pytest.mark.parametrize("text,why", [
    ("<system version='1'><cpu></system>", "not well-formed"),
    ("", "not well-formed"),
    ("<cpu numaid='0'/>", "not <system>"),
    ('<!DOCTYPE x [<!ENTITY a "aaaa">]><system version="1">&a;</system>', "DOCTYPE"),
    ('<system version="1"><cpu arch="&lt;"/></system>'.replace("&lt;", "&amp;") + "", None),
])
def test_bad_files_are_one_line_errors(text, why):
    if why is None:
        parse_topology(text)  # a predefined entity is plain XML: read as it is
        return
    with pytest.raises(TopoReadError) as exc:
        parse_topology(text)
    assert why in str(exc.value) and "\n" not in str(exc.value)


def test_billion_laughs_is_refused_before_parsing():
    lol = '<!ENTITY lol "lol">' + "".join(f'<!ENTITY lol{i} "{"&lol;" * 10}">' for i in range(9))
    with pytest.raises(TopoReadError, match="DOCTYPE"):
        parse_topology(f"<!DOCTYPE system [{lol}]><system>&lol8;</system>")


def test_size_and_element_caps():
    with pytest.raises(TopoReadError, match="larger"):
        parse_topology("<system>" + " " * MAX_BYTES + "</system>")
    many = "<system version='1'>" + "<cpu numaid='0'/>" * MAX_NODES + "</system>"
    with pytest.raises(TopoReadError, match="elements"):
        parse_topology(many)
    deep = "<system>" + "<pci>" * 40 + "</pci>" * 40 + "</system>"
    with pytest.raises(TopoReadError, match="deeper"):
        parse_topology(deep)
