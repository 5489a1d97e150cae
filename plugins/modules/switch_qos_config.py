#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Write a ToR switch's QoS configuration, rendered from the QoS plan by `rocetune qos render`,
on the controller, with check mode and diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: switch_qos_config
short_description: Write a switch's QoS configuration from the QoS plan, on the controller
version_added: "0.1.0"
description:
  - Runs C(rocetune --json qos render --os KIND [--ports P1,P2] [--qos FILE] [--CHOICE VALUE ...])
    on the controller (C(delegate_to) localhost, once per switch) and writes its output to I(dest),
    only when the content differs, atomically (temporary file and rename). A file already there
    keeps its mode; a new one is C(0644).
  - SONiC CONFIG_DB JSON for C(config load), NVUE commands, or an EOS configuration
    (docs/switch-qos.md); the switch OSes and their choices are the ones the installed rocetune
    knows. Loading the file onto the switch stays the operator's.
  - Checks every input first (the port names, I(dest) and its directory, the plan file, the
    command); any error fails the call, naming the input, before anything is written.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The configuration file.
  platform:
    platforms: posix
requirements:
  - The rocetune command on the controller (C(pip install rocetune)).
options:
  kind:
    description:
      - The switch's network OS, as C(rocetune qos render --os) names it (C(sonic), C(nvue), C(eos), C(nxos)).
        An OS the installed rocetune does not know fails the call, naming the ones it does.
    type: str
    required: true
  options:
    description:
      - The OS's own choices, each given to C(rocetune qos render) as C(--NAME VALUE) (underscores
        become dashes), for example C(buffer_model=dynamic) and C(platform=mellanox) for SONiC,
        C(platform=jericho) for EOS, C(roce_mode=lossless-single-ipool) for NVUE
        (docs/switch-qos.md). rocetune refuses a plan it cannot make lossless without one.
    type: dict
    default: {}
  ports:
    description:
      - Ports to bind the QoS to (SONiC C(PORT_QOS_MAP) and C(QUEUE), EOS interfaces), as the
        switch names them (C(Ethernet0), C(swp1), C(Ethernet1/1)). Empty writes the maps and
        profiles bound to no port (a warning for SONiC and EOS).
    type: list
    elements: str
    default: []
  fabric_ports:
    description:
      - Ports to other switches (a leaf's uplinks, a spine's ports), given to C(rocetune qos render
        --fabric-ports). They get the same classes, PFC, queues and watchdog as I(ports); the plan's
        cable length, which describes the hosts' cables, is not applied to them.
    type: list
    elements: str
    default: []
  plan:
    description:
      - The QoS plan file on the controller (the one the hosts' roce_qos role installs). Omitted,
        C(rocetune) reads C(/etc/rocetune/qos.yml) of the controller, else its built-in defaults.
    type: path
  dest:
    description: The file to write on the controller (an absolute path; missing directories are created).
    type: path
    required: true
  dest_suffix:
    description:
      - Append the suffix rocetune names for the OS's configuration (C(.json), C(.nvue), C(.cfg)) to I(dest).
    type: bool
    default: false
  rocetune_command:
    description: The rocetune command on the controller (a name looked up in C(PATH), or a path).
    type: str
    default: rocetune
author: rocetune contributors (@rocetune)
"""

EXAMPLES = r"""
- name: Write each switch's QoS configuration on the controller
  rocetune.fabric.switch_qos_config:
    kind: "{{ switch_kind }}"
    ports: "{{ switch_ports }}"
    options: "{{ switch_qos_options | default({}) }}"
    plan: "{{ playbook_dir }}/files/qos.yml"
    dest: "{{ playbook_dir }}/artifacts/switch-qos/{{ inventory_hostname }}"
    dest_suffix: true
  delegate_to: localhost
"""

RETURN = r"""
dest:
  description: The file written (or that would be, in check mode).
  type: str
  returned: always
  sample: /home/ops/.local/share/rocetune/switch-qos/leaf01.json
assumes:
  description: What the configuration assumes of the switch (buffer model, platform family, release).
  type: list
  elements: str
  returned: success
  sample: ["buffer_model: dynamic", "platform: mellanox"]
binds:
  description: Exactly what the configuration binds, and to which ports.
  type: str
  returned: success
  sample: "DSCP_TO_TC_MAP, PFC and the lossless queue on Ethernet0, Ethernet4"
plan:
  description: The plan the configuration follows (a file, or C(built-in defaults)).
  type: str
  returned: success
  sample: /srv/fabric/qos.yml
ports:
  description: The ports the QoS is bound to.
  type: list
  elements: str
  returned: always
  sample: [Ethernet0, Ethernet4]
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import (
    FileTargetError,
    apply_changes,
    plan_files,
    read_current,
)

# Ports as switch OSes name them (Ethernet0, swp1, Ethernet1/1, Ethernet3/1/1): the grammar
# `rocetune qos render --ports` accepts, checked here first to name the variable.
PORT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9/_.:-]{0,63}\Z")
# An OS's choices: names and values as `rocetune qos render` takes them.
CHOICE_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
CHOICE_VALUE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
SUFFIX_RE = re.compile(r"^\.[A-Za-z0-9]{1,8}\Z")


def input_problems(p):
    """One message per input that cannot be used, naming it; [] when all can."""
    problems = []
    if not CHOICE_VALUE_RE.match(p["kind"] or ""):
        problems.append("kind: %r is not a switch OS name (e.g. sonic, nvue, eos)" % p["kind"])
    for name, value in sorted((p["options"] or {}).items()):
        if not CHOICE_NAME_RE.match(str(name)):
            problems.append("options: %r is not a choice name (e.g. platform, buffer_model)" % (name,))
        elif not isinstance(value, str) or not CHOICE_VALUE_RE.match(value):
            problems.append("options.%s: %r is not a value like jericho or lossless-single-ipool" % (name, value))
    for key in ("ports", "fabric_ports"):
        bad = [port for port in p[key] if not PORT_RE.match(port)]
        problems += ["%s: %r is not a port name (e.g. Ethernet0, swp1, Ethernet1/1)" % (key, port) for port in bad]
        twice = sorted(set(port for port in p[key] if p[key].count(port) > 1))
        if twice:
            problems.append("%s: %s named twice" % (key, ", ".join(twice)))
    both = sorted(set(p["ports"]) & set(p["fabric_ports"]))
    if both:
        problems.append("ports and fabric_ports both name %s" % ", ".join(both))
    dest = p["dest"]
    if not os.path.isabs(dest) or dest.endswith("/"):
        problems.append("dest: %r is not an absolute file path" % dest)
    elif os.path.isdir(dest) or (os.path.lexists(dest) and not os.path.isfile(dest)):
        problems.append("dest: %s exists and is not a regular file" % dest)
    else:
        parent = os.path.dirname(dest)
        while not os.path.lexists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            problems.append("dest: %s is not a directory" % parent)
        elif not os.access(parent, os.W_OK | os.X_OK):
            problems.append("dest: %s is not writable" % parent)
    if p["plan"] and not os.path.isfile(p["plan"]):
        problems.append("plan: %s is not a file" % p["plan"])
    return problems


def render_argv(command, p):
    argv = [command, "--json", "qos", "render", "--os", p["kind"]]
    if p["ports"]:
        argv += ["--ports", ",".join(p["ports"])]
    if p["fabric_ports"]:
        argv += ["--fabric-ports", ",".join(p["fabric_ports"])]
    if p["plan"]:
        argv += ["--qos", p["plan"]]
    for name, value in sorted((p["options"] or {}).items()):
        argv += ["--" + name.replace("_", "-"), value]
    return argv


def final_dest(p, data):
    """I(dest), with the suffix rocetune names for the OS when I(dest_suffix) asks for it."""
    if not p["dest_suffix"]:
        return p["dest"]
    suffix = data.get("suffix")
    if not isinstance(suffix, str) or not SUFFIX_RE.match(suffix):
        return None
    return p["dest"] + suffix


def run_render(module, argv):
    """The rendered text and warnings; a failure (the envelope's errors, or no JSON) fails the module."""
    rc, out, err = module.run_command(argv)
    try:
        envelope = json.loads(out)
    except ValueError:
        tail = [ln for ln in (err or out).splitlines() if ln.strip()]
        module.fail_json(msg="`%s` exited %d without a JSON result: %s"
                         % (" ".join(argv), rc, tail[-1] if tail else "no output"))
    envelope = envelope if isinstance(envelope, dict) else {}
    data = envelope.get("data")
    if envelope.get("errors") or not isinstance(data, dict) or not isinstance(data.get("text"), str):
        first = (envelope.get("errors") or [{}])[0]
        module.fail_json(msg="rocetune qos render (exit %s): %s; nothing was written"
                         % (envelope.get("exit_code"), first.get("message", "no configuration")),
                         hint=first.get("hint"))
    return data, envelope.get("warnings") or []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kind=dict(type="str", required=True),
            options=dict(type="dict", default={}),
            ports=dict(type="list", elements="str", default=[]),
            fabric_ports=dict(type="list", elements="str", default=[]),
            plan=dict(type="path"),
            dest=dict(type="path", required=True),
            dest_suffix=dict(type="bool", default=False),
            rocetune_command=dict(type="str", default="rocetune"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, dest=p["dest"], ports=p["ports"] + p["fabric_ports"])
    problems = input_problems(p)
    command = p["rocetune_command"]
    if "/" not in command:
        command = module.get_bin_path(command)
        if not command:
            problems.append("rocetune_command: %s is not in PATH (pip install rocetune on the controller)"
                            % p["rocetune_command"])
    elif not os.access(command, os.X_OK) or os.path.isdir(command):
        problems.append("rocetune_command: %s is not an executable file" % command)
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was written", **result)

    data, warnings = run_render(module, render_argv(command, p))
    dest = final_dest(p, data)
    if dest is None:
        module.fail_json(msg="rocetune qos render named no file suffix for %s; nothing was written" % p["kind"],
                         **result)
    result["dest"] = dest
    dest_problems = input_problems(dict(p, dest=dest, options={}))
    if dest_problems:
        module.fail_json(msg="; ".join(dest_problems) + "; nothing was written", **result)
    try:  # a link, FIFO or device at dest is refused here, before it is read or written
        have, have_mode = read_current(dest)
        mode = "%04o" % have_mode if have is not None else "0644"
        changes, diffs = plan_files([{"path": dest, "content": data["text"], "mode": mode}], [])
    except FileTargetError as exc:
        module.fail_json(msg=str(exc), **result)
    if changes and not module.check_mode:
        apply_changes(changes)
    for warning in warnings:
        module.warn("rocetune qos render: %s" % warning)
    result.update(changed=bool(changes), plan=data.get("plan"), assumes=data.get("assumes") or [],
                  binds=data.get("binds") or "")
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
