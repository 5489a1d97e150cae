"""Whose a Slurm drain is (core/drain_owner.py), as the health gate and the rollout's hooks read
it, and the rollout's slurm_batch module against a scripted scontrol: one query per batch, only
its own drains resumed, check mode never waits, a drain timeout leaves a clear state."""

from __future__ import annotations

import sys

import pytest

from rocetune.core import drain_owner as D
from rocetune.doctor import gate
from rocetune.model.finding import Finding
from tests.unit.roles import REPO

# `scontrol --oneliner show node node01,node02` as Slurm 22.05.8 (Debian 12) prints it on the lab
# (lab/slurm.py), the fields between State and Reason shortened.
ONELINE = (
    "NodeName=node01 Arch=x86_64 CoresPerSocket=1  CPUAlloc=2 CPUEfctv=2 CPUTot=2 CPULoad=0.41 AvailableFeatures=(null) "
    "ActiveFeatures=(null) Gres=(null) NodeAddr=198.18.0.11 NodeHostName=node01 Version=22.05.8 OS=Linux "
    "RealMemory=256 AllocMem=0 FreeMem=N/A Sockets=2 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=lab CfgTRES=cpu=2,mem=256M,billing=2 AllocTRES=cpu=2 "
    "CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=rocetune-rollout: fabric tuning [root@2026-12-07T03:23:49]\n"
    "NodeName=node02 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 NodeAddr=198.18.0.12 "
    "State=DOWN ThreadsPerCore=1 Partitions=lab Reason=Node unexpectedly rebooted [slurm@2026-12-07T03:20:01]\n"
)


def _f(severity):
    return Finding(
        id="doctor-rail-mtu-mismatch", severity=severity, subject="s", message="m", kind="doctor", source="", fix=""
    )


FAILING, HEALTHY = gate.judge([_f("error")]), gate.judge([])


def test_one_query_reads_every_node_of_a_batch_with_who_set_its_reason():
    nodes = D.parse_nodes(ONELINE)
    assert set(nodes) == {"node01", "node02"}
    one, two = nodes["node01"], nodes["node02"]
    assert (one.base, one.flags, one.reason, one.reason_by) == (
        "MIXED",
        {"DRAIN"},
        "rocetune-rollout: fabric tuning",
        "root",
    )
    assert one.busy and one.drained and D.owner(one) == D.ROLLOUT_OWNED
    assert (two.base, two.reason, two.reason_by) == ("DOWN", "Node unexpectedly rebooted", "slurm")
    assert D.owner(two) == D.SLURM_DOWN and not two.busy


@pytest.mark.parametrize(
    "state, flags, reason, who",
    [
        ("IDLE", set(), None, D.IN_SERVICE),
        ("ALLOCATED", set(), None, D.IN_SERVICE),
        ("IDLE", {"DRAIN"}, "rocetune: doctor-rail-mtu-mismatch s: m", D.GATE_OWNED),
        ("MIXED", {"DRAIN"}, "rocetune-rollout: fabric tuning", D.ROLLOUT_OWNED),
        ("MIXED", {"DRAIN"}, "rocetune: fabric tuning", D.ROLLOUT_OWNED),  # what the hook wrote before
        ("IDLE", {"DRAIN"}, "admin: GPU3 XID 79, RMA pending", D.OTHERS),
        ("IDLE", {"DRAIN"}, "Prolog error", D.OTHERS),
        ("DOWN", set(), "admin: PSU failure", D.OTHERS),
        ("DOWN", set(), "Not responding", D.OTHERS),
        ("DOWN", set(), "Node unexpectedly rebooted", D.SLURM_DOWN),
        ("DOWN", {"DRAIN"}, "rocetune: x", D.GATE_OWNED),
    ],
)
def test_whose_a_state_is(state, flags, reason, who):
    assert D.owner(D.NodeState("n", state, set(flags), reason)) == who


@pytest.mark.parametrize(
    "state, outcome, kind",
    [
        # the rollout's drain, new or old namespace, draining or drained: never the gate's to lift
        (D.NodeState("n", "MIXED", {"DRAIN"}, "rocetune: fabric tuning"), HEALTHY, "none"),
        (D.NodeState("n", "IDLE", {"DRAIN"}, "rocetune-rollout: fabric tuning"), HEALTHY, "none"),
        (D.NodeState("n", "IDLE", {"DRAIN"}, "rocetune-rollout: fabric tuning"), FAILING, "none"),
        # DOWN after a reboot Slurm did not expect, and failing: drained (issue: a RESUME of the DOWN
        # would otherwise put a broken node back); an operator's DOWN is left alone
        (D.NodeState("n", "DOWN", set(), "Node unexpectedly rebooted"), FAILING, "drain"),
        (D.NodeState("n", "DOWN", set(), "admin: PSU failure"), FAILING, "none"),
        (D.NodeState("n", "DOWN", set(), "Node unexpectedly rebooted"), HEALTHY, "none"),
        # the gate's own drain on a node that is DOWN: the DOWN is not the gate's to lift
        (D.NodeState("n", "DOWN", {"DRAIN"}, "rocetune: doctor-rail-mtu-mismatch s: m"), HEALTHY, "none"),
        (D.NodeState("n", "IDLE", {"DRAIN"}, "rocetune: doctor-rail-mtu-mismatch s: m"), HEALTHY, "resume"),
    ],
)
def test_the_gate_lifts_only_its_own_drains(state, outcome, kind):
    assert gate.node_action(outcome, state).kind == kind


def test_the_rollout_drains_only_nodes_in_service_and_resumes_only_its_own():
    idle = D.NodeState("n", "IDLE")
    admin = D.NodeState("n", "IDLE", {"DRAIN"}, "admin: GPU3 XID 79, RMA pending", "root")
    ours = D.NodeState("n", "IDLE", {"DRAIN"}, "rocetune-rollout: fabric tuning")
    gate_drain = D.NodeState("n", "IDLE", {"DRAIN"}, "rocetune: doctor-rail-mtu-mismatch s: m")
    assert D.rollout_drain(idle, "n").act == "drain"
    assert D.rollout_drain(ours, "n").act == "keep" and D.rollout_drain(ours, "n").ours
    for other in (admin, gate_drain, D.NodeState("n", "DOWN", set(), "admin: PSU failure")):
        step = D.rollout_drain(other, "n")
        assert step.act == "leave" and not step.ours, step
    assert "by root (admin: GPU3 XID 79, RMA pending)" in D.rollout_drain(admin, "n").why
    assert D.rollout_drain(None, "n").act == "fail"
    mine = "rocetune-rollout: fabric tuning"
    assert D.rollout_resume(ours, "n", mine, True, "OK").act == "resume"
    assert D.rollout_resume(ours, "n", mine, False, "FAIL n: x").act == "fail"
    assert D.rollout_resume(admin, "n", mine, True, "OK").act == "leave"  # an operator took it over
    assert D.rollout_resume(ours, "n", None, True, "OK").act == "none"  # not drained by the rollout
    downed = D.NodeState("n", "DOWN", {"DRAIN"}, mine)
    assert D.rollout_resume(downed, "n", mine, True, "OK").act == "leave"


def test_a_reason_is_one_printable_line_within_slurms_length():
    line = D.reason_in(D.ROLLOUT, "failed: a\nb\x1b[31m " + "x" * 300)
    assert line.startswith("rocetune-rollout: failed: a b [31m x") and len(line) == D.REASON_MAX
    assert "\n" not in line and "\x1b" not in line


# ---------------------------------------------------------------------------------------------
# The slurm_batch module against a scripted scontrol


class FakeSlurm:
    """scontrol as the module calls it: `--oneliner show node A,B` and `update NodeName=A,B ...`.
    A node's jobs end after `busy_for` queries."""

    def __init__(self, nodes, busy_for=0):
        self.nodes, self.busy_for, self.calls = nodes, busy_for, []

    def run_command(self, argv):
        self.calls.append(argv[1:])
        if argv[1:3] == ["--oneliner", "show"]:
            if self.busy_for:
                self.busy_for -= 1
            elif any(n.base == "MIXED" for n in self.nodes.values()):
                for n in self.nodes.values():
                    n.base = "IDLE" if n.base == "MIXED" else n.base
            lines = [
                f"NodeName={n.name} State={n.text} Partitions=lab"
                + (f" Reason={n.reason} [root@2026-12-07T03:00:00]" if n.reason else "")
                for name, n in self.nodes.items()
                if name in argv[4].split(",")
            ]
            return 0, "\n".join(lines) + "\n", ""
        names, state = argv[2][len("NodeName=") :].split(","), argv[3][len("State=") :]
        for name in names:
            node = self.nodes[name]
            if state == "DRAIN":
                node.flags.add("DRAIN")
                node.reason = argv[4][len("Reason=") :]
            elif state == "RESUME":
                node.flags.discard("DRAIN")
                node.reason = None
        return 0, "", ""

    @property
    def queries(self):
        return sum(1 for c in self.calls if c[:2] == ["--oneliner", "show"])


class Failed(Exception):
    pass


def _module():
    pytest.importorskip("ansible", reason="the slurm_batch module runs inside ansible-core")
    sys.path.insert(0, str(REPO / "collections"))
    from ansible_collections.rocetune.fabric.plugins.modules import slurm_batch

    return slurm_batch


def run(slurm, check_mode=False, **params):
    mod = _module()
    base = {
        "reason": "fabric tuning",
        "timeout": 3600,
        "poll": 1,
        "drained_with": {},
        "checks": {},
        "scontrol": "scontrol",
    }
    module = type(
        "M",
        (),
        {
            "params": dict(base, **params),
            "check_mode": check_mode,
            "run_command": lambda self, argv: slurm.run_command(argv),
            "fail_json": lambda self, **kw: (_ for _ in ()).throw(Failed(kw["msg"])),
        },
    )()
    s = mod.Slurm(module)
    out, changed = (mod.drained if params["state"] == "drained" else mod.resumed)(module, s, params["nodes"])
    return out, changed


def _cluster():
    return {
        "node01": D.NodeState("node01", "MIXED"),
        "node02": D.NodeState("node02", "IDLE"),
        "node03": D.NodeState("node03", "IDLE", {"DRAIN"}, "admin: GPU3 XID 79, RMA pending"),
        "node04": D.NodeState("node04", "DOWN", set(), "admin: PSU failure"),
    }


def test_a_batch_is_drained_with_one_update_and_resumed_only_where_the_rollout_drained(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    slurm = FakeSlurm(_cluster(), busy_for=2)
    nodes = {f"{n}.example.org": n for n in slurm.nodes}
    out, changed = run(slurm, state="drained", nodes=nodes)
    assert changed and {h: e["act"] for h, e in out.items()} == {
        "node01.example.org": "drain",
        "node02.example.org": "drain",
        "node03.example.org": "leave",
        "node04.example.org": "leave",
    }
    updates = [c for c in slurm.calls if c[0] == "update"]
    assert updates == [["update", "NodeName=node01,node02", "State=DRAIN", "Reason=rocetune-rollout: fabric tuning"]]
    assert slurm.queries == 3  # the first read (node01 busy), a poll (busy), a poll (its job ended)
    assert slurm.nodes["node03"].reason == "admin: GPU3 XID 79, RMA pending"
    drained_with = {h: e["drained_with"] for h, e in out.items()}
    checks = {h: {"passed": True, "line": "rocetune: OK with warnings"} for h in nodes}
    checks["node02.example.org"] = {"passed": False, "line": "rocetune: FAIL node02: doctor-rail-mtu-mismatch x"}
    slurm.calls.clear()
    out, _ = run(slurm, state="resumed", nodes=nodes, drained_with=drained_with, checks=checks)
    assert {h: e["act"] for h, e in out.items()} == {
        "node01.example.org": "resume",
        "node02.example.org": "fail",
        "node03.example.org": "none",
        "node04.example.org": "none",
    }
    assert slurm.queries == 1
    assert slurm.nodes["node01"].text == "IDLE" and slurm.nodes["node03"].text == "IDLE+DRAIN"
    assert (
        slurm.nodes["node02"].reason == "rocetune-rollout: failed its check after tuning: rocetune: FAIL node02: "
        "doctor-rail-mtu-mismatch x"
    )
    assert slurm.nodes["node04"].text == "DOWN" and slurm.nodes["node04"].reason == "admin: PSU failure"


def test_check_mode_reads_slurm_once_and_never_changes_or_waits():
    slurm = FakeSlurm(_cluster(), busy_for=10**6)
    out, changed = run(slurm, check_mode=True, state="drained", nodes={"node01": "node01", "node03": "node03"})
    assert changed and out["node01"]["act"] == "drain" and out["node03"]["act"] == "leave"
    assert slurm.calls == [["--oneliner", "show", "node", "node01,node03"]]


def test_a_drain_timeout_fails_the_node_and_says_so_in_its_reason():
    slurm = FakeSlurm(_cluster(), busy_for=10**6)
    out, _ = run(slurm, state="drained", nodes={"node01": "node01", "node02": "node02"}, timeout=0)
    assert out["node01"]["failed"] and out["node01"]["act"] == "fail" and not out["node02"]["failed"]
    assert "jobs still running after 0s" in out["node01"]["why"]
    assert slurm.nodes["node01"].reason.startswith("rocetune-rollout: not tuned: jobs still ran after 0s")
    assert out["node01"]["drained_with"] == slurm.nodes["node01"].reason  # the rollout's: a later run lifts it


def test_a_node_slurm_does_not_know_fails_that_host_only():
    slurm = FakeSlurm(_cluster())
    out, _ = run(slurm, state="drained", nodes={"a": "node02", "b": "gpu999"})
    assert out["b"]["failed"] and "not a node of this Slurm cluster" in out["b"]["why"]
    assert out["a"]["act"] == "drain" and not out["a"]["failed"]
