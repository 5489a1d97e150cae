"""Cabling and cross-rail reachability for real: Debian's lldpd on four namespace hosts and on a
"switch" namespace per rail (lab/rails_net.py), one host's two cables crossed on purpose,
then the rail subnets left apart and joined by a router.

Each host runs rocetune against a root built from the softroce-3nic spec (a Soft-RoCE host with
two rails, ens4 and ens5) with the host's own rail addresses, so the probe hands validate the
rails the lab wired; everything validate runs on the hosts (lldpctl, ping) is live. For the
gathered report the host's wrapper copies its live `lldpctl -f json0` output into its root first,
as `rocetune capture` would record it. Uses the session's lab4 hosts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab import netns
from lab.rails_net import HOST_IFS, LEAF, Rails, rail_ip, straight

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
# The hosts' replay roots, where every host sees them and writes its own lldpctl output into its
# overlay: not under the checkout, which a host sees read-only when it lies under /tmp (lab/netns.py).
ROOTS = Path("/var/tmp/rocetune-cabling-lab")
CROSSED = "node03"
WRAPPER = "/etc/rocetune-lab/rocetune-rails"


def build_roots(info) -> dict:
    """A root per host from the softroce-3nic spec, with that host's rail addresses."""
    sys.path.insert(0, str(FIXTURES))
    try:
        import hostspec
    finally:
        sys.path.remove(str(FIXTURES))
    shutil.rmtree(ROOTS, ignore_errors=True)
    roots = {}
    for name, ip in info.hosts:
        spec = hostspec.load_spec("softroce-3nic")
        spec["hostname"] = name
        spec["sysctl"] = {k.replace(".", "/"): v for k, v in Rails.ARP.items()}  # as the hosts are set
        for dev in spec["pci"]["devices"]:
            if dev.get("netdev") in HOST_IFS:
                dev["ipv4"] = [f"{rail_ip(HOST_IFS.index(dev['netdev']), ip)}/24"]
        host = hostspec.Host(spec, "softroce-3nic")
        host.build()
        host.emit(str(ROOTS / name))
        (ROOTS / name / "run").mkdir(exist_ok=True)
        roots[name] = ROOTS / name
    return roots


@pytest.fixture(scope="module")
def rails(lab4):
    roots = build_roots(lab4)
    agent = f"env PYTHONPATH={REPO / 'src'} {sys.executable} -m rocetune"
    for name, root in roots.items():
        # lldpctl's live output into the root (private to the host: its overlay), then the agent.
        script = (f"#!/bin/sh\n[ -w {root}/commands ] || {{ echo '{root}/commands is not writable' >&2; exit 3; }}\n"
                  f"lldpctl -f json0 > {root}/commands/lldpctl_-f_json0.txt 2>/dev/null "
                  f"&& : > {root}/run/lldpd.socket\nexec {agent} --root {root} \"$@\"\n")
        netns.run_on(name, f"mkdir -p /etc/rocetune-lab && cat > {WRAPPER} && chmod 0755 {WRAPPER}", input=script)
    net = Rails(lab4)
    net.add()
    try:
        net.start_lldpd()
        yield lab4, net, roots
    finally:
        net.remove()
        shutil.rmtree(ROOTS, ignore_errors=True)


def rocetune(info, tmp: Path, *args: str, timeout: float = 300):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), HOME=str(tmp))
    proc = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", *args, "--identity", str(info.key),
                           "--known-hosts", str(info.known_hosts), "--user", "root", "--command", WRAPPER],
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def validate(info, tmp: Path, *args: str):
    proc = rocetune(info, tmp, "validate", *[ip for _, ip in info.hosts], *args)
    doc = json.loads(proc.stdout)["data"]
    return proc.returncode, {ip: name for name, ip in info.hosts}, doc


def test_the_crossed_cable_is_named_live_and_in_the_gathered_report(rails, tmp_path):
    info, net, _ = rails
    net.cross(CROSSED)
    expected = straight(info)
    expected[CROSSED] = {HOST_IFS[0]: LEAF.format(1), HOST_IFS[1]: LEAF.format(0)}
    net.wait_cabling(expected)

    code, names, doc = validate(info, tmp_path, "--tests", "lldp")
    fleet = doc["fleet"]["lldp"]
    assert code == 1 and fleet["status"] == "fail", json.dumps(doc)[:3000]
    assert fleet["expected"] == ["leaf-rail0", "leaf-rail1"]
    assert [names[h] for h in fleet["suspects"]] == [CROSSED] and doc["summary"]["suspects"] == fleet["suspects"]
    odd = {(o["rail"], o["netdev"], o["switch"], o["switch_port"]) for o in fleet["odd"]}
    assert odd == {(0, "ens4", "leaf-rail1", "n03-ens4"), (1, "ens5", "leaf-rail0", "n03-ens5")}
    assert "rail 0 rxe1:1 (ens4) reaches leaf-rail1 port n03-ens4; rail 0 reaches leaf-rail0 (as 3 of 4 hosts)" \
        in fleet["why"]
    print("lldp:", fleet["why"])

    out = tmp_path / "gather"
    gather = rocetune(info, tmp_path, "gather", *[ip for _, ip in info.hosts], "-o", str(out))
    assert gather.returncode == 0, gather.stdout[-2000:]
    report = subprocess.run([sys.executable, "-m", "rocetune", "--json", "fleet", "report", str(out)],
                            env=dict(os.environ, PYTHONPATH=str(REPO / "src")), stdout=subprocess.PIPE, text=True)
    data = json.loads(report.stdout)["data"]
    differs = {names[h["host"]]: set(h["differs"]) for h in data["hosts"] if h["differs"]}
    assert report.returncode == 1 and differs == {CROSSED: {"rail.0.switch", "rail.1.switch"}}, differs
    cell = data["facts"]["rail.0.switch"]["values"][info.ip(CROSSED)]
    assert cell["value"] == "leaf-rail1" and cell["detail"] == "rxe1:1 (ens4) -> leaf-rail1 port n03-ens4"

    net.cross(CROSSED)  # put the cables back
    net.wait_cabling(straight(info))
    code, _, doc = validate(info, tmp_path, "--tests", "lldp")
    assert code == 0 and doc["fleet"]["lldp"]["status"] == "pass", json.dumps(doc["fleet"])


def test_cross_rail_reach_isolated_then_routed_and_the_rule_follows_it(rails, tmp_path):
    info, net, roots = rails
    evidence = tmp_path / "rail-reach.json"
    code, _, doc = validate(info, tmp_path, "--tests", "cross-rail", "--rail-reach-out", str(evidence))
    result = doc["fleet"]["cross-rail"]
    # 4 hosts: 6 pairs, each rail of a to the other rail of b: 12 paths, none answers; each rail
    # reaches its own rail. The hosts' plans already keep NCCL off other rails (rail addressing).
    assert code == 0 and result["verdict"] == "isolated" and (result["reached"], result["tested"]) == (0, 12)
    assert all(t["status"] == "pass" and all(r["reached"] == (r["from"] == r["to"]) for r in t["reach"])
               for p in doc["pairs"] for t in p["tests"]), json.dumps(doc["pairs"])[:3000]
    assert json.loads(evidence.read_text())["verdict"] == "isolated"

    # The evidence installed on a node decides its NCCL_CROSS_NIC, measured rather than inferred.
    root = tmp_path / "root"
    shutil.copytree(roots["node01"], root, symlinks=True)
    (root / "etc" / "rocetune").mkdir(parents=True, exist_ok=True)
    shutil.copy(evidence, root / "etc" / "rocetune" / "rail-reach.json")
    env = subprocess.run([sys.executable, "-m", "rocetune", "--json", "explain", "NCCL_CROSS_NIC", "--root", str(root)],
                         env=dict(os.environ, PYTHONPATH=str(REPO / "src")), stdout=subprocess.PIPE, text=True)
    explained = json.loads(env.stdout)["data"]
    assert "0 of 12 rail-to-other-rail paths answered (isolated)" in json.dumps(explained), env.stdout[:2000]

    net.route(True)
    try:
        code, _, doc = validate(info, tmp_path, "--tests", "cross-rail")
        result = doc["fleet"]["cross-rail"]
        assert code == 0 and result["verdict"] == "routed" and result["reached"] == result["tested"] == 12, \
            json.dumps(doc["pairs"])[:3000]
    finally:
        net.route(False)
