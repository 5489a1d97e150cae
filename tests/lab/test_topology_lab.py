"""`fleet topology` against the real slurmctld (Debian's Slurm 22.05, lab/slurm.py) with the cabling
lab's lldpd (lab/rails_net.py: a switch namespace per rail, lldpd on hosts and switches).

Each case gathers the four hosts' results over SSH (the inventory names them as Slurm does), makes
topology.conf with `rocetune fleet topology`, loads it into slurmctld (`scontrol reconfigure`) and
reads both `scontrol show topology` and what slurmctld logged while it read the file: a file
slurmctld accepts with a warning shows nothing wrong in `scontrol`, only in the log.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab import netns, slurm
from lab.rails_net import HOST_IFS, HOST_PIDFILE, LEAF, straight
from tests.lab.test_cabling_lab import WRAPPER, rails  # noqa: F401 - the cabling lab, as a fixture

REPO = Path(__file__).resolve().parents[2]
# What slurmctld 22.05 logs about a topology it takes with a fault (src/plugins/topology/tree/
# switch_record.c): each a warning, none a refusal.
WARNINGS = (
    "Multiple leaf switches contain nodes",
    "switches lack access to",
    "Invalid node name",
    "no switch can reach all nodes",
    "has no nodes",
    "Invalid hostnames in switch configuration",
)


@pytest.fixture(scope="module")
def ctld(rails):  # noqa: F811 - the imported fixture
    info, _, _ = rails
    nodes = ",".join(info.names)
    first = f"SwitchName=lab Nodes={nodes}\n"
    with slurm.cluster(info, topology=first) as c:
        yield c


def rocetune(info, tmp: Path, cluster, *args: str) -> subprocess.CompletedProcess:
    env = dict(cluster.env, PYTHONPATH=str(REPO / "src"), HOME=str(tmp))
    proc = subprocess.run(
        [sys.executable, "-m", "rocetune", "--json", "fleet", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def gather(info, tmp: Path, cluster) -> Path:
    out = tmp / "fleet"
    proc = rocetune(
        info,
        tmp,
        cluster,
        "gather",
        "--inventory",
        str(info.inventory),
        "--limit",
        "all",
        "--known-hosts",
        str(info.known_hosts),
        "--identity",
        str(info.key),
        "--command",
        WRAPPER,
        "-o",
        str(out),
    )
    assert sorted(p.name for p in out.iterdir()) == [f"{n}.json" for n in info.names], proc.stdout[-2000:]
    return out


def make(info, tmp: Path, cluster, results: Path, *args: str):
    conf = tmp / "topology.conf"
    if conf.exists():
        conf.unlink()
    proc = rocetune(info, tmp, cluster, "topology", str(results), "-o", str(conf), *args)
    doc = json.loads(proc.stdout)
    return proc.returncode, doc, conf


def faults(log: str):
    """slurmctld's topology warnings, without the time stamp and the level (22.05 logs them as
    `error: WARNING: ...` or `warning: ...`)."""
    found = [line for line in log.splitlines() if any(w in line for w in WARNINGS)]
    return [re.sub(r"^\[[^]]*\] (?:error: |warning: )?(?:WARNING: )?", "", line) for line in found]


def show(cluster) -> str:
    return cluster.run(["scontrol", "show", "topology"]).stdout


def test_good_cabling_gives_a_file_slurmctld_takes_without_a_warning(rails, ctld, tmp_path):  # noqa: F811
    info, net, _ = rails
    net.wait_cabling(straight(info))
    results = gather(info, tmp_path, ctld)
    code, doc, conf = make(info, tmp_path, ctld, results, "--nodes", "node[01-04]")
    assert code == 0, doc
    leaf = f"{LEAF.format(0)}+{LEAF.format(1)}"
    assert conf.read_text().splitlines()[3:] == [f"SwitchName={leaf} Nodes=node[01-04]"]
    log = ctld.load_topology(conf.read_text())
    assert faults(log) == [], log
    shown = show(ctld)
    assert f"SwitchName={leaf} Level=0" in shown and "Nodes=node[01-04]" in shown, shown
    print("scontrol show topology:", shown.strip())

    # The premise: the naive file (one Slurm leaf per rail switch) is taken and shown as if right;
    # only the log tells.
    naive = "".join(f"SwitchName={LEAF.format(r)} Nodes=node[01-04]\n" for r in range(2))
    log = ctld.load_topology(naive)
    assert faults(log) == ["Multiple leaf switches contain nodes: node[01-04]"], log
    assert "Nodes=node[01-04]" in show(ctld)


def test_a_crossed_cable_keeps_the_topology_and_is_named(rails, ctld, tmp_path):  # noqa: F811
    info, net, _ = rails
    net.cross("node03")
    try:
        expected = straight(info)
        expected["node03"] = {HOST_IFS[0]: LEAF.format(1), HOST_IFS[1]: LEAF.format(0)}
        net.wait_cabling(expected)
        results = gather(info, tmp_path, ctld)
        code, doc, conf = make(info, tmp_path, ctld, results, "--nodes", "node[01-04]")
        assert code == 0, doc
        assert [w for w in doc["warnings"] if w.startswith("node03: rails crossed")] == [
            f"node03: rails crossed (rail 0 -> {LEAF.format(1)}, rail 1 -> {LEAF.format(0)}); the leaf set is the "
            "same, so the topology holds (`fleet report` and `fleet validate --tests lldp` name the cables)"
        ]
        log = ctld.load_topology(conf.read_text())
        assert faults(log) == [], log
    finally:
        net.cross("node03")
        net.wait_cabling(straight(info))


def test_a_missing_node_is_refused_where_slurmctld_would_only_log_it(rails, ctld, tmp_path):  # noqa: F811
    info, net, _ = rails
    net.wait_cabling(straight(info))
    results = gather(info, tmp_path, ctld)
    (results / "node04.json").unlink()  # a node with no result at all
    code, doc, conf = make(info, tmp_path, ctld, results, "--nodes", "node[01-04]")
    assert (
        code == 1
        and not conf.exists()
        and doc["data"]["refused"] == ["no result for 1 of the scheduler's nodes: node04"]
    ), doc
    # What would have been written without the scheduler's list: slurmctld takes it and logs it.
    code, doc, conf = make(info, tmp_path, ctld, results)
    assert code == 0
    log = ctld.load_topology(conf.read_text())
    assert faults(log) == [
        "switches lack access to 1 nodes: node04",
        "topology/tree: _validate_switches: TOPOLOGY: warning -- no switch can reach all nodes through its "
        "descendants. If this is not intentional, fix the topology.conf file.",
    ], log

    # A node whose lldpd is gone: its rails tell no switch, so it is refused, named.
    netns.run_on("node04", f"kill $(cat {HOST_PIDFILE})")
    try:
        results = gather(info, tmp_path / "again", ctld)
        code, doc, conf = make(info, tmp_path, ctld, results, "--nodes", "node[01-04]")
        assert code == 1 and not conf.exists(), doc
        assert [r.split(",")[0] for r in doc["data"]["refused"]] == ["node04: left out"], doc
        print("refused:", doc["data"]["refused"])
    finally:
        netns.run_on(
            "node04",
            f"mkdir -p /run/lldpd && lldpd -p {HOST_PIDFILE} -I {','.join(HOST_IFS)} && "
            "sleep 0.5 && lldpcli configure lldp tx-interval 1 >/dev/null",
        )
        net.wait_cabling(straight(info))


def test_srun_gathers_and_pushed_results_read_as_gathered_ones(rails, ctld, tmp_path):  # noqa: F811
    info, net, _ = rails
    net.wait_cabling(straight(info))
    by_ssh = gather(info, tmp_path, ctld)
    # The cabling's topology first: under the one that left node04 out (the test before), Slurm
    # cannot give a job both node04 and the others ("Requested node configuration is not available").
    code, doc, conf = make(info, tmp_path, ctld, by_ssh, "--nodes", "node[01-04]")
    assert code == 0 and faults(ctld.load_topology(conf.read_text())) == [], doc
    out = tmp_path / "srun"
    proc = rocetune(
        info,
        tmp_path,
        ctld,
        "gather",
        "--via",
        "srun",
        "node[01-04]",
        "--command",
        WRAPPER,
        "--timeout",
        "240",
        "-o",
        str(out),
    )
    hosts = json.loads(proc.stdout)["data"]["hosts"]
    assert proc.returncode == 0 and [(h["host"], h["error"]) for h in hosts] == [(n, None) for n in info.names], hosts

    # Each node keeps its own result (the gate's --push); the directories are collected from the
    # hosts' own file systems, as a site without a shared one would.
    pushed = tmp_path / "pushed"
    pushed.mkdir()
    for name in info.names:
        netns.run_on(
            name,
            f"mkdir -p /var/lib/rocetune-push && {WRAPPER} doctor --gate prolog --no-counters "
            f"--node {name} --push /var/lib/rocetune-push",
            check=False,
        )
        (pushed / f"{name}.json").write_text(netns.run_on(name, f"cat /var/lib/rocetune-push/{name}.json").stdout)

    def report(d: Path) -> dict:
        done = rocetune(info, tmp_path, ctld, "report", str(d))
        data = json.loads(done.stdout)["data"]
        return {
            f: {h: c["value"] for h, c in v["values"].items()}
            for f, v in data["facts"].items()
            if f.startswith(("rail.", "hca.", "mtu", "gid_index"))
        }

    by_srun, by_push = report(out), report(pushed)
    assert by_srun == by_push == report(by_ssh), (by_srun, by_push)
    assert by_srun["rail.0.switch"] == {n: LEAF.format(0) for n in info.names}
