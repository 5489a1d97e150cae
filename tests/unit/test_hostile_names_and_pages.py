"""What a node says of itself, written into other files and commands: the expectations header
(one comment line whatever the host name holds), the fleet HTML pages (controls shown as escapes),
the fleet result directory (its owner checked), and the node names put on `srun -w` and into the
rendezvous map (one DNS label, the whole value)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from rocetune.errors import RocetuneError
from rocetune.fleet import nccl_multi, results
from rocetune.fleet.endpoints import HostEndpoints, SocketIf
from rocetune.model import expect
from rocetune.model.yamlread import load_yaml
from rocetune.render import fleet_html, validate_html


def test_a_host_name_with_a_newline_stays_one_comment_line_of_the_expectations():
    text = expect.dump({"version": 1}, ["written on gpu03\nnccl_version: 2.18.1\x85env: {NCCL_IB_HCA: x}"])
    assert text.splitlines()[0].startswith("# written on gpu03?nccl_version: 2.18.1?env")
    assert load_yaml(text) == {"version": 1}


@pytest.mark.parametrize("page", [fleet_html, validate_html])
def test_html_pages_show_controls_and_bidi_overrides_as_escapes(page):
    shown = page._e("gpu01\x1b]0;owned\x07\u202egnp.exe\x9b2J<b>")
    assert shown == "gpu01\\x1b]0;owned\\x07\\u202egnp.exe\\x9b2J&lt;b&gt;"


def test_a_result_directory_another_user_owns_or_may_write_is_refused(tmp_path):
    d = tmp_path / "fleet"
    d.mkdir()
    (d / "gpu01.json").write_text("{}")
    os.chmod(d, 0o777)
    with pytest.raises(RocetuneError, match="lets everyone write it: another user could remove or swap"):
        results.load_dir(str(d))
    os.chmod(d, 0o775)
    with pytest.raises(RocetuneError, match="lets its group write it"):
        results.load_dir(str(d))
    os.chmod(d, 0o1777)  # sticky: no one removes or renames what root wrote
    assert results.load_dir(str(d))[0].host == "gpu01"
    os.chmod(d, 0o755)
    if os.geteuid() == 0:
        os.chown(d, 4242, 4242)
        with pytest.raises(RocetuneError, match="belongs to uid 4242"):
            results.load_dir(str(d))


def node(name, hostname, ipv4="10.0.0.1/24"):
    return SimpleNamespace(name=name, remote=None, plan_env={}, features={"host": {"hostname": hostname}},
                           endpoints=HostEndpoints(name, socket=[SocketIf("ens3", ipv4, None)]))


def test_a_node_reported_name_that_is_not_a_host_name_never_reaches_srun():
    hosts = {"gpu03": node("gpu03", "gpu03,gpu01=attacker-host"), "gpu04": node("gpu04", "gpu04")}
    # the name the node was reached by stands in for a name it reports badly
    assert nccl_multi.node_name(hosts["gpu03"]) == "gpu03"
    bad = {"x": node("x y", "a b\nc"), "gpu04": node("gpu04", "gpu04")}
    doc = nccl_multi.run_fleet(bad, nccl_multi.Settings(variants=("env",)))
    assert doc["status"] == "error" and "is not a host name" in doc["error"]
    assert nccl_multi.master_address(node("n1", "n1", ipv4="10.0.0.1,evil=1.2.3.4/24")) == "n1"
