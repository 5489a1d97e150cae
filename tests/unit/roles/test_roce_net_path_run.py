"""roce_net's jumbo path check (plugins/module_utils/roce_net_path_run.py): the pairs worked out
on the controller, the pings run by one shell command, here /bin/sh with a ping that answers as
iputils' does for each address."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.unit.roles import load_module_utils

R = load_module_utils("roce_net", "roce_net_path_run")

# A ping that answers by address: .12 replies, .13 loses its first echo (then replies), .14 never
# replies, .15's route is at 1500 (iputils 20211215's words); every call is logged.
FAKE_PING = r"""#!/bin/sh
for last; do :; done
echo "$*" >> "$LOG"
[ "$LC_ALL" = C ] || { echo "ping: localized: LC_ALL=$LC_ALL"; exit 2; }
case "$last" in
  *.12) echo "64 bytes from $last: icmp_seq=1 ttl=64"; exit 0 ;;
  *.13) if grep -q "try13" "$LOG.state" 2>/dev/null; then exit 0; fi; echo try13 >> "$LOG.state"; exit 1 ;;
  *.14) echo "1 packets transmitted, 0 received, 100% packet loss"; exit 1 ;;
  *.15) echo "ping: local error: message too long, mtu=1500"; exit 1 ;;
esac
exit 2
"""


def params(peers, **extra):
    p = dict(host="node01", interfaces={"rtf0": {"mtu": 9000, "addresses": ["198.19.0.11/24"]}},
             peer_names=[name for name, _ in peers],
             peer_results=[{"interfaces": {"rtf0": {"mtu": mtu, "addresses": ["198.19.0.%s/24" % name[-2:]]}}}
                           for name, mtu in peers],
             outside=[], outside_interfaces={}, later=[], unchecked=[], mtu=9000, on_failure="fail")
    p.update(extra)
    return p


@pytest.fixture
def node(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ping").write_text(FAKE_PING)
    (bin_dir / "ping").chmod(0o755)
    log = tmp_path / "calls"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(log), "LC_ALL": "de_DE.UTF-8"}
    commands = []

    def run(command):
        commands.append(command)
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, env=env, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    run.commands, run.log, run.env = commands, log, env
    return run


def test_each_pair_is_pinged_and_judged_a_lost_echo_is_tried_again(node):
    result = R.check(params([("node12", 9000), ("node13", 9000), ("node14", 1500), ("node15", 9000)]), node)
    verdicts = {d["peer"]: (d["ok"], d["reason"]) for d in result["pairs"]}
    assert verdicts["node12"] == (True, "") and verdicts["node13"] == (True, "")
    assert verdicts["node14"] == (False, "no reply to a don't-fragment jumbo ping")
    assert "route MTU is 1500" in verdicts["node15"][1]
    calls = node.log.read_text().splitlines()
    assert calls.count("-n -M do -s 8972 -c 1 -W 1 -I rtf0 198.19.0.14") == 2  # tried twice
    assert calls.count("-n -M do -s 8972 -c 1 -W 1 -I rtf0 198.19.0.15") == 1  # the route says why: once
    assert len(node.commands) == 2  # one shell command per round
    assert result["failed"] and "failed for 2 pair(s)" in result["msg"]
    assert "node14 rtf0 is at MTU 1500, not 9000" in result["msg"]


def test_warn_mode_reports_without_failing_and_no_peer_is_said(node):
    result = R.check(params([("node14", 9000)], on_failure="warn"), node)
    assert not result.get("failed") and "failed for 1 pair(s)" in result["warnings"][0]
    alone = R.check(params([], later=["node05"]), node)
    assert node.commands == node.commands[:2]  # nothing to ping: no command for the lone node
    assert alone["warnings"] == ["jumbo path from node01 not checked: no peer has its fabric up yet "
                                 "(the 1 host(s) of later batches check against this node when they run)"]


def test_more_pairs_than_a_wave_are_all_answered(node):
    peers = [("node12", 9000)] * (R.WAVE * 2 + 3)
    result = R.check(params(peers), node)
    assert len(result["pairs"]) == len(peers) and all(d["ok"] for d in result["pairs"])
    assert node.commands[0].count("\nwait") == 3


def test_an_interface_name_from_a_node_is_a_literal_argument_or_refused(node, tmp_path):
    odd = "r$(id)`id`>x"  # Linux takes it as a name: it reaches ping as one argument, never runs
    p = params([("node12", 9000)])
    p["interfaces"] = {odd: {"addresses": ["198.19.0.11/24"]}}
    p["peer_results"][0]["interfaces"] = {odd: {"mtu": 9000, "addresses": ["198.19.0.12/24"]}}
    result = R.check(p, node)
    assert result["pairs"][0]["ok"] and f"-I {odd} 198.19.0.12" in node.log.read_text()
    assert not os.path.exists("x") and not (tmp_path / "x").exists()
    for bad in ("a b", "../x", "a" * 16, "a:b"):
        with pytest.raises(R.PathError, match="not one Linux takes"):
            R.ping_command([{"interface": bad, "address": "198.19.0.12"}], 8972)


def test_a_node_without_ping_or_a_shell_that_fails_is_a_clear_error(node):
    p = params([("node12", 9000)])
    with pytest.raises(R.PathError, match="ping .iputils. is not installed"):
        R.check(p, lambda command: (0, "rocetune-ping none\n", ""))
    with pytest.raises(R.PathError, match="could not run on this node .exit 1.: mktemp: failed"):
        R.check(p, lambda command: (1, "", "mktemp: failed"))
    with pytest.raises(R.PathError, match="could not run on this node .exit None.: no output"):
        R.check(p, lambda command: (None, "", ""))


def test_answers_are_read_whatever_else_the_node_prints():
    out = ("BECOME-SUCCESS-x\nrocetune-ping 0 0\n 36 34\nnot hex\n 0a\nrocetune-ping 1 \nrocetune-ping 9 0\n 30\n"
           "rocetune-ping x 0\n 30\nrocetune-ping 2 1\n zz\n 3x\n")
    assert R.read_answers(out, 3) == {0: (0, "64\n"), 1: (None, ""), 2: (1, "")}
    assert R.read_answers("rocetune-ping 0 0\n 36\r\n 34\r\n", 1) == {0: (0, "64")}


def test_an_unreadable_outside_peer_is_not_a_pass(node):
    p = params([], outside=[{"item": "node30", "rc": 0, "stdout": "not json"},
                            {"item": "node31", "unreachable": True}],
               outside_interfaces={"node30": ["rtf0"], "node31": ["rtf0"]})
    result = R.check(p, node)
    assert result["failed"] and "node30 (outside this run): not checked: unreadable ip -j addr show" in result["msg"]
    assert "node31 (outside this run): not checked: unreachable" in result["msg"]


def test_a_malformed_report_from_a_node_is_a_clear_error(node):
    for interfaces in ({"rtf0": "198.19.0.11/24"}, {"rtf0": {"addresses": ["not-an-address"]}}):
        p = params([("node12", 9000)])
        p["interfaces"] = interfaces
        with pytest.raises(R.PathError, match="malformed|is not one"):
            R.check(p, node)
    p = params([("node12", 9000)])
    p["peer_results"][0]["interfaces"]["rtf0"] = ["198.19.0.12/24"]
    with pytest.raises(R.PathError, match="malformed"):
        R.check(p, node)


def test_each_probe_costs_the_node_two_processes_ping_and_od():
    command = R.ping_command([{"interface": "rtf0", "address": "198.19.0.%d" % i} for i in range(12, 15)], 8972)
    body = command.split("trap ", 1)[1]
    assert body.count("ping -n") == 3 and body.count("od -An") == 3
    # no subshell, command substitution or other command per probe: statuses come from `wait`
    assert "(" not in body and "$(" not in body and " cat " not in body and "| tr" not in body
    assert 'wait "$p0"; r0=$?; wait "$p1"; r1=$?; wait "$p2"; r2=$?' in body
