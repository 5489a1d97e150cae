# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The jumbo path check (roce_net_path), run by its action plugin: the pairs to ping worked out
on the controller, the pings run on the node by one shell command (no Python there: ping from
iputils, mktemp and od from coreutils), the answers read back here.

Every name and address in the command comes from a node's own report (its interfaces, its
peers' `ip -j addr show`): addresses are IPv4 addresses parsed by ipaddress, interface names
are checked as Linux checks them, and both are shell-quoted."""

from __future__ import absolute_import, division, print_function

import ipaddress
import json
import re
from shlex import quote

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.roce_net_fabric import (
        outside_peer,
        pair_message,
        path_pairs,
        ping_size,
        ping_verdict,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_ip_addr import parse_entries
except ImportError:  # unit tests import the files as plain modules
    from roce_net_fabric import outside_peer, pair_message, path_pairs, ping_size, ping_verdict  # pylint: disable=import-error
    from rocetune_ip_addr import parse_entries  # pylint: disable=import-error

__metaclass__ = type

ARGUMENT_SPEC = dict(
    host=dict(type="str", required=True),
    interfaces=dict(type="dict", required=True),
    peer_names=dict(type="list", elements="str", required=True),
    peer_results=dict(type="list", elements="dict", required=True),
    outside=dict(type="list", elements="dict", default=[]),
    outside_interfaces=dict(type="dict", default={}),
    later=dict(type="list", elements="str", default=[]),
    unchecked=dict(type="list", elements="str", default=[]),
    mtu=dict(type="int", required=True),
    on_failure=dict(type="str", choices=["fail", "warn"], default="fail"),
)

# At most this many pings at once on the node (a --limit can leave many peers outside).
WAVE = 16
MARK = "rocetune-ping"
_PATH = "PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # ping under any PATH


class PathError(Exception):
    pass


def valid_ifname(name):
    """What Linux's dev_valid_name() takes: 1-15 bytes, not . or .., no /, : or whitespace."""
    return (isinstance(name, str) and 0 < len(name.encode("utf-8")) < 16 and name not in (".", "..")
            and not re.search(r"[/:\s]", name))


def outside_peers(entries, interfaces):
    """(peers to ping, lines for those that could not be read) from I(outside)."""
    peers, unread = [], []
    for entry in entries:
        name = str(entry.get("item") or "?")
        if entry.get("unreachable") or entry.get("rc") != 0 or entry.get("skipped"):
            why = "unreachable" if entry.get("unreachable") else (
                entry.get("stderr") or entry.get("msg") or "no answer")
            unread.append("%s (outside this run): not checked: %s" % (name, " ".join(str(why).split())[:200]))
            continue
        try:
            links = parse_entries(json.loads(entry.get("stdout") or "[]"))
        except ValueError as exc:
            unread.append("%s (outside this run): not checked: unreadable ip -j addr show (%s)" % (name, exc))
            continue
        peers.append(outside_peer(name, interfaces.get(name) or [], links))
    return peers, unread


def ping_command(probes, size):
    """One shell command that pings every (interface, address) of `probes`, WAVE at a time, and
    prints per probe a line MARK, its index and ping's exit status, then its output as od prints
    it in hex. Two processes per probe (ping, od): the exit status comes from `wait`, not a file."""
    # ping's messages in English: ping_verdict reads them (the route MTU).
    lines = [_PATH, "LC_ALL=C; export LC_ALL", "command -v ping >/dev/null 2>&1 || { echo '%s none'; exit 0; }" % MARK,
             "d=$(mktemp -d) || exit 1", "trap 'rm -rf \"$d\"' EXIT"]
    wave = []
    for i, probe in enumerate(probes):
        if not valid_ifname(probe["interface"]):
            raise PathError("interface name %r is not one Linux takes" % (probe["interface"],))
        address = str(ipaddress.IPv4Address(probe["address"]))
        lines.append("ping -n -M do -s %d -c 1 -W 1 -I %s %s >\"$d/%d\" 2>&1 & p%d=$!"
                     % (size, quote(probe["interface"]), quote(address), i, i))
        wave.append(i)
        if len(wave) == WAVE or i == len(probes) - 1:
            lines.append("; ".join("wait \"$p%d\"; r%d=$?" % (j, j) for j in wave))
            wave = []
    for i in range(len(probes)):
        lines.append("printf '%s %d %%s\\n' \"$r%d\"; od -An -v -tx1 \"$d/%d\" 2>/dev/null" % (MARK, i, i, i))
    return "\n".join(lines)


_HEX_LINE = re.compile(r"^(?: [0-9a-f]{2})+$")


def read_answers(stdout, count):
    """{index: (rc, output)} from what ping_command printed (anything else the node printed is
    left out); PathError without ping on the node."""
    answers, current, hexed = {}, None, []
    for line in stdout.splitlines() + [MARK]:  # the last MARK closes the last probe
        line = line.rstrip("\r")
        fields = line.split(" ")
        if fields[0] != MARK:
            if current is not None and _HEX_LINE.match(line):
                hexed.append(line.replace(" ", ""))
            continue
        if current is not None:
            answers[current[0]] = (current[1], bytes.fromhex("".join(hexed)).decode("utf-8", "replace"))
        current, hexed = None, []
        if fields[1:] == ["none"]:
            raise PathError("ping (iputils) is not installed on this node")
        if len(fields) < 2 or not fields[1].isdigit() or int(fields[1]) >= count:
            continue
        current = (int(fields[1]), int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else None)
    return answers


def check(params, run):
    """The module's result for `params` (validated); `run(command)` runs a shell command on the
    node and returns (rc, stdout, stderr)."""
    p = params
    try:  # what the nodes reported (their roce_net_links results, ip -j addr show)
        mine = dict((name, (info or {}).get("addresses", [])) for name, info in p["interfaces"].items())
        peers = [{"name": name, "interfaces": (res or {}).get("interfaces") or {}}
                 for name, res in zip(p["peer_names"], p["peer_results"])]
        more, unread = outside_peers(p["outside"], p["outside_interfaces"])
        pairs = path_pairs(mine, peers + more)
    except ValueError as exc:
        raise PathError("an address the nodes reported is not one: %s" % exc) from None
    except (AttributeError, KeyError, TypeError) as exc:
        raise PathError("a node's report of its fabric interfaces is malformed (%s: %s)"
                        % (type(exc).__name__, exc)) from None
    size = ping_size(p["mtu"])
    probes = [pair for pair in pairs if "skip" not in pair]
    verdicts = {}
    todo = list(range(len(probes)))
    # One echo; a pair that fails is tried once more, so one lost packet is not a finding.
    for dummy in range(2):
        if not todo:
            break
        rc, out, err = run(ping_command([probes[i] for i in todo], size))
        answers = read_answers(out, len(todo))
        if rc != 0 and not answers:
            raise PathError("the pings could not run on this node (exit %s): %s"
                            % (rc, " ".join((err or out or "no output").split())[:300]))
        again = []
        for n, i in enumerate(todo):
            code, output = answers.get(n, (None, ""))
            if code is None:
                ok, reason = False, "ping did not finish"
            else:
                ok, reason = ping_verdict(code, output)
            verdicts[i] = (ok, reason)
            if not ok and "route MTU" not in reason:
                again.append(i)
        todo = again
    done, index = [], 0
    for pair in pairs:
        if "skip" in pair:
            done.append(pair)
            continue
        ok, reason = verdicts[index]
        done.append(dict(pair, ok=ok, reason=reason))
        index += 1
    failed = [pair_message(p["host"], d, p["mtu"], d["reason"]) for d in done if d.get("ok") is False]
    # A peer that could not be checked is not a pass.
    failed += ["%s -> %s: not checked: %s" % (p["host"], d["peer"], d["skip"]) for d in done if "skip" in d]
    failed += ["%s -> %s" % (p["host"], line) for line in unread]
    result = dict(changed=False, pairs=done, failed_pairs=failed, later=p["later"], unchecked=p["unchecked"])
    warnings = []
    if p["unchecked"]:
        warnings.append("jumbo path from %s not checked against: %s" % (p["host"], "; ".join(p["unchecked"])))
    if not peers and not more and not unread:
        warnings.append("jumbo path from %s not checked: no peer has its fabric up yet%s" % (
            p["host"], " (the %d host(s) of later batches check against this node when they run)" % len(p["later"])
            if p["later"] else ""))
    if failed:
        msg = "jumbo path check (%d-byte packets, don't fragment) failed for %d pair(s): %s" % (
            p["mtu"], len(failed), " | ".join(failed))
        if p["on_failure"] == "fail":
            result.update(failed=True, msg=msg)
        else:
            warnings.append(msg)
    if warnings:
        result["warnings"] = warnings
    return result
