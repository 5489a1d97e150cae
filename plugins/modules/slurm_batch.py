#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Drain a batch of nodes in Slurm before the rollout changes them, and resume afterwards only
what the rollout drained itself: one scontrol query per batch (and per poll while waiting)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: slurm_batch
short_description: Drain a rollout batch in Slurm and resume only the rollout's own drains
version_added: "0.1.0"
description:
  - Runs once per batch where C(scontrol) works (C(run_once), C(delegate_to) the Slurm
    controller or any node with Slurm's configuration). It reads every node of the batch with
    one C(scontrol --oneliner show node) and decides per node with the ownership rules the
    health gate uses (rocetune_drain_owner; docs/rollout.md).
  - C(state=drained) drains the nodes in service with a reason in the rollout's namespace
    (C(rocetune-rollout:)), keeps a drain the rollout set before, and leaves a node an operator,
    Slurm, NHC or the health gate holds out as it is, with its reason. Then it waits, with one
    query per poll, until no job runs on any of them. A node whose jobs are still running at
    C(timeout) fails, keeps the rollout's drain with a reason that says so, and is left to the
    operator.
  - C(state=resumed) resumes a node only when the rollout drained it, its drain is still the
    rollout's, it is not DOWN, and its check passed (C(checks)); a node whose check failed keeps
    the drain with the check's line as the reason and fails.
  - In check mode it reads Slurm once and reports what it would do; it never changes a node and
    never waits.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Slurm is read, never changed, and nothing is waited for.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - Slurm's C(scontrol) and a Slurm configuration where it runs.
options:
  state:
    description: C(drained) before the batch changes, C(resumed) after.
    type: str
    choices: [drained, resumed]
    required: true
  nodes:
    description:
      - Inventory host name to the node's Slurm name, for the nodes of the batch that something
        will change on. Slurm names are letters, digits, C(.), C(_) and C(-).
    type: dict
    required: true
  reason:
    description: With C(state=drained), what the drain reason says after C(rocetune-rollout:).
    type: str
    default: fabric tuning
  timeout:
    description: With C(state=drained), how long to wait for the nodes' jobs to end, in seconds.
    type: int
    default: 3600
  poll:
    description: With C(state=drained), seconds between two queries while waiting.
    type: int
    default: 10
  drained_with:
    description:
      - With C(state=resumed), inventory host name to the reason the rollout drained it with
        (the C(hosts.<host>.drained_with) that C(state=drained) returned); a host without one was
        not drained by the rollout and is never resumed.
    type: dict
    default: {}
  checks:
    description:
      - With C(state=resumed), inventory host name to its check after the change,
        C({passed, line}); a host without one is not resumed.
    type: dict
    default: {}
  scontrol:
    description: The scontrol program.
    type: str
    default: scontrol
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Drain this batch's nodes in Slurm and wait until their jobs have ended
  rocetune.fabric.slurm_batch:
    state: drained
    nodes: {gpu001.example.org: gpu001, gpu002.example.org: gpu002}
    timeout: 3600
  run_once: true
  delegate_to: slurm-head01
  register: drained
"""

RETURN = r"""
hosts:
  description:
    - Per inventory host, C(node) (its Slurm name), C(act) (drain, keep, leave, resume, none,
      fail), C(why), C(found) (its state and reason before this step, and whose it was),
      C(drained_with) (the rollout's reason when the rollout holds it) and C(failed).
  type: dict
  returned: always
  sample: {"gpu001.example.org": {"node": "gpu001", "act": "leave", "failed": false,
           "why": "IDLE+DRAIN by root (admin: GPU3 XID 79, RMA pending): its reason is kept and the rollout will not resume it",
           "found": {"state": "IDLE+DRAIN", "reason": "admin: GPU3 XID 79, RMA pending", "owner": "others"},
           "drained_with": null}}
failed_hosts:
  description: The hosts whose step failed (not in Slurm, a drain timeout, a failed check).
  type: list
  elements: str
  returned: always
  sample: [gpu007.example.org]
queries:
  description: How many times Slurm was read (one per batch, and one per poll while jobs end).
  type: int
  returned: always
  sample: 3
"""

import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_drain_owner import (
    ROLLOUT,
    parse_nodes,
    reason_in,
    rollout_drain,
    rollout_resume,
    waiting,
)

NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class Slurm(object):
    def __init__(self, module):
        self.module = module
        self.program = module.params["scontrol"]
        self.queries = 0

    def read(self, names):
        """{name: NodeState} of `names`, with one query; a name Slurm does not know is absent."""
        self.queries += 1
        rc, out, err = self.module.run_command([self.program, "--oneliner", "show", "node", ",".join(names)])
        found = parse_nodes(out)
        if rc != 0 and not found:
            self.module.fail_json(msg="scontrol show node %s: %s" % (",".join(names), _last(err) or "exit %d" % rc))
        return found

    def update(self, names, state, reason=None):
        argv = [self.program, "update", "NodeName=" + ",".join(names), "State=" + state]
        if reason is not None:
            argv.append("Reason=" + reason)
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(
                msg="scontrol update %s State=%s: %s (nothing after this was done)"
                % (",".join(names), state, _last(err) or _last(out) or "exit %d" % rc)
            )


def _last(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def drained(module, slurm, nodes):
    p = module.params
    names = sorted(set(nodes.values()))
    found = slurm.read(names)
    reason = reason_in(ROLLOUT, p["reason"])
    out = {}
    for host, name in sorted(nodes.items()):
        step = rollout_drain(found.get(name), name)
        held = (reason if step.act == "drain" else found[name].reason) if step.ours else None
        out[host] = _entry(name, step, found.get(name), held)
    todo = sorted(set(e["node"] for e in out.values() if e["act"] == "drain"))
    if module.check_mode:
        return out, bool(todo)
    if todo:
        slurm.update(todo, "DRAIN", reason)
    wait_for = sorted(set(e["node"] for e in out.values() if e["act"] != "fail"))
    busy = _wait(slurm, wait_for, p["timeout"], p["poll"]) if wait_for else []
    if busy:
        late = reason_in(
            ROLLOUT,
            "not tuned: jobs still ran after %ds; kept drained, the operator decides "
            "(resume it, or rerun the rollout on it)" % p["timeout"],
        )
        ours = sorted(set(e["node"] for e in out.values() if e["node"] in busy and e["drained_with"]))
        if ours:
            slurm.update(ours, "DRAIN", late)
        for entry in out.values():
            if entry["node"] in busy:
                entry.update(
                    act="fail",
                    failed=True,
                    drained_with=late if entry["drained_with"] else None,
                    why="jobs still running after %ds: not changed; %s"
                    % (
                        p["timeout"],
                        "kept drained by the rollout (%s)" % late
                        if entry["drained_with"]
                        else "its state is someone else's and left as it is",
                    ),
                )
    return out, bool(todo)


def _wait(slurm, names, timeout, poll):
    """The nodes among `names` still running jobs at the deadline (one query per poll)."""
    deadline = time.time() + max(0, timeout)
    while True:
        busy = waiting(slurm.read(names), names)
        if not busy or time.time() >= deadline:
            return busy
        time.sleep(max(1, min(poll, deadline - time.time())))


def resumed(module, slurm, nodes):
    p = module.params
    names = sorted(set(nodes.values()))
    found = slurm.read(names)
    out = {}
    for host, name in sorted(nodes.items()):
        check = p["checks"].get(host) or {}
        line = " ".join(str(check.get("line") or "no check ran").split())
        passed = bool(check.get("passed"))
        step = rollout_resume(found.get(name), name, p["drained_with"].get(host), passed, line)
        out[host] = _entry(name, step, found.get(name), p["drained_with"].get(host) if step.ours else None)
        if step.act == "fail" and step.ours:
            out[host]["drained_with"] = reason_in(ROLLOUT, "failed its check after tuning: " + line)
    resume = sorted(set(e["node"] for e in out.values() if e["act"] == "resume"))
    kept = dict((e["node"], e["drained_with"]) for e in out.values() if e["act"] == "fail" and e["drained_with"])
    if module.check_mode:
        return out, bool(resume or kept)
    if resume:
        slurm.update(resume, "RESUME")
    for name, reason in sorted(kept.items()):
        slurm.update([name], "DRAIN", reason)
    return out, bool(resume or kept)


def _entry(name, step, state, drained_with):
    return {
        "node": name,
        "act": step.act,
        "why": step.why,
        "failed": step.act == "fail",
        "found": state.to_dict() if state is not None else None,
        "drained_with": drained_with,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["drained", "resumed"], required=True),
            nodes=dict(type="dict", required=True),
            reason=dict(type="str", default="fabric tuning"),
            timeout=dict(type="int", default=3600),
            poll=dict(type="int", default=10),
            drained_with=dict(type="dict", default={}),
            checks=dict(type="dict", default={}),
            scontrol=dict(type="str", default="scontrol"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    nodes = dict((str(h), str(n)) for h, n in p["nodes"].items())
    bad = sorted(n for n in nodes.values() if not NODE_NAME.match(n))
    if bad:
        module.fail_json(msg="nodes: not Slurm node names: %s (letters, digits, '.', '_', '-')" % ", ".join(bad))
    if p["timeout"] < 0 or p["poll"] < 1:
        module.fail_json(msg="timeout must be 0 or more and poll 1 or more seconds")
    if not nodes:
        module.exit_json(changed=False, hosts={}, failed_hosts=[], queries=0)
    slurm = Slurm(module)
    out, changed = (drained if p["state"] == "drained" else resumed)(module, slurm, nodes)
    module.exit_json(
        changed=changed, hosts=out, queries=slurm.queries, failed_hosts=sorted(h for h, e in out.items() if e["failed"])
    )


if __name__ == "__main__":
    main()
