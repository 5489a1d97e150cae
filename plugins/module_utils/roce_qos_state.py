# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""RoCE QoS on a NIC: read the current state (iproute2 `dcb`, `mlnx_qos`, the ECN sysfs files,
RDMA-CM configfs), compare it with what the QoS plan asks for, and return only the commands
and file writes that are needed. The tools' outputs are read by rocetune_qos_tools, the reader
the agent's probe uses too.

Pure Python with the command runner and the file access passed in, so the same code serves the
Ansible module, the boot-time re-apply (`reapply`, which the role's rocetune_qos_reapply.py runs)
and the unit tests, which
feed it recorded real outputs of the tools (tests/fixtures/qos/PROVENANCE.md).

The plan file is rocetune's QoS plan (docs/qos.md), read with PyYAML.
"""

from __future__ import absolute_import, division, print_function

import json
import os

try:  # as the collection's module_utils
    from ansible_collections.rocetune.fabric.plugins.module_utils import roce_qos_buffer as buffers
    from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_nic_facts as nic_facts
    from ansible_collections.rocetune.fabric.plugins.module_utils import rocetune_qos_tools as tools
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_qos_plan import (
        QosPlanError,
        traffic_class,
        validate,
        validate_ets,
    )
except ImportError:  # as the boot-time script, with the four files installed beside it
    import roce_qos_buffer as buffers  # pylint: disable=import-error
    import rocetune_nic_facts as nic_facts  # pylint: disable=import-error
    import rocetune_qos_tools as tools  # pylint: disable=import-error
    from rocetune_qos_plan import QosPlanError, traffic_class, validate, validate_ets  # pylint: disable=import-error

__metaclass__ = type

PRIOS = range(tools.PRIORITIES)
NOT_SUPPORTED = tools.NOT_SUPPORTED


class QosError(Exception):
    """A message the operator can act on (one line)."""


class NotSupported(Exception):
    """The NIC or its driver has no DCB (veth, virtio-net, most virtual NICs)."""


# ---------------------------------------------------------------------------------------------
# The plan


def load_plan(path, loader):
    """The plan as a dict with every key filled in. `loader(text)` is yaml.safe_load."""
    if not path or not os.path.exists(path):
        return parse_plan("", loader, "built-in defaults")
    with open(path) as fh:
        return parse_plan(fh.read(), loader, path)


def parse_plan(text, loader, source):
    """The plan in `text` (empty: the built-in defaults), checked by the validator every reader of
    the file shares (rocetune_qos_plan: the agent's rocetune.model.qos uses it too)."""
    return plan_from_doc(loader(text) if text.strip() else None, source)


def plan_from_doc(doc, source):
    """The plan from a document already loaded (None: the built-in defaults); QosError names
    `source` and every field that cannot be used, with the hints (known keys)."""
    try:
        plan = validate(doc)
    except QosPlanError as exc:
        raise QosError("%s: %s" % (source, exc.describe())) from exc
    plan["source"] = source
    return plan


def desired(plan, ets=None, dcqcn=True):
    """What the NIC must have: trust, DSCP->priority entries, PFC per priority, optional ETS, and
    the lossless buffers where the plan states them."""
    lossless = set(int(p) for p in plan["lossless_priorities"])
    dscp_prio = {int(plan["data"]["dscp"]): int(plan["data"]["priority"]),
                 int(plan["cnp"]["dscp"]): int(plan["cnp"]["priority"])}
    if plan.get("cts_dscp") is not None:  # NCCL's credit messages, in the class the switches give them
        dscp_prio[int(plan["cts_dscp"])] = int(plan["cts_priority"])
    return {
        "trust": plan["trust"],
        "dscp_prio": dscp_prio,
        "pfc": [1 if p in lossless else 0 for p in PRIOS],
        "ets": ets or None,
        "ecn_priority": int(plan["data"]["priority"]),
        "dcqcn": bool(dcqcn),
        "cnp": {"dscp": int(plan["cnp"]["dscp"]), "priority": int(plan["cnp"]["priority"])},
        "tos": traffic_class(plan),
        "buffer": plan.get("buffer"),
    }


def _read_output(reader, text):
    """reader(text), an output it cannot take as the QosError the module and the script report."""
    try:
        return reader(text)
    except tools.QosOutputError as exc:
        raise QosError(str(exc)) from exc


# ---------------------------------------------------------------------------------------------
# Decisions: only the commands that are needed


def _bits(values):
    return ",".join(str(v) for v in values)


def dcb_commands(ifname, want, pfc_text, app_text, ets_text, notes=None):
    """argv lists for iproute2 dcb that bring the NIC from its current state to `want`. Each
    difference is added to `notes` as (what, now, wanted) when a list is given (the diff)."""
    notes = [] if notes is None else notes
    cmds = []
    have_app = _read_output(tools.dcb_app_dscp, app_text)
    if want["trust"] == "dscp":
        # A DSCP app entry puts mlx5 (and other dcbnl drivers) in DSCP trust; stale entries for
        # our DSCPs that point elsewhere are replaced, everything else is left alone.
        need = sorted(d for d, p in want["dscp_prio"].items() if have_app.get(d) != [p])
        if need:
            cmds.append(["dcb", "app", "replace", "dev", ifname, "dscp-prio"]
                        + ["%d:%d" % (d, want["dscp_prio"][d]) for d in need])
            notes += [("dscp %d -> priority" % d, _bits(have_app.get(d) or []) or "none", str(want["dscp_prio"][d]))
                      for d in need]
    elif have_app:
        # PCP trust: the NIC classifies by the VLAN priority only while it holds no DSCP app
        # entry (the kernel's dcbnl DSCP table is what selects DSCP trust on mlx5), so every
        # one is deleted.
        cmds.append(["dcb", "app", "del", "dev", ifname, "dscp-prio"]
                    + ["%d:%d" % (d, p) for d in sorted(have_app) for p in sorted(have_app[d])])
        notes.append(("dscp-prio entries", " ".join("%d:%s" % (d, _bits(have_app[d])) for d in sorted(have_app)),
                      "none (pcp trust)"))
    have_pfc = tools.dcb_pfc(pfc_text)
    if have_pfc != want["pfc"]:
        cmds.append(["dcb", "pfc", "set", "dev", ifname, "prio-pfc"]
                    + ["%d:%s" % (p, "on" if want["pfc"][p] else "off") for p in PRIOS])
        notes.append(("pfc", _bits(have_pfc), _bits(want["pfc"])))
    if want["ets"]:
        have = _read_output(tools.dcb_ets, ets_text)
        args = []
        for key, word in (("prio_tc", "prio-tc"), ("tc_tsa", "tc-tsa"), ("tc_bw", "tc-bw")):
            if key in want["ets"] and list(want["ets"][key]) != have.get(key):
                args += [word] + ["%d:%s" % (i, v) for i, v in enumerate(want["ets"][key])]
                notes.append(("ets %s" % key, _bits(have.get(key) or []), _bits(want["ets"][key])))
        if args:
            cmds.append(["dcb", "ets", "set", "dev", ifname] + args)
    return cmds


def mlnx_qos_commands(ifname, want, text, notes=None):
    """argv lists for mlnx_qos that bring the NIC from `text` (mlnx_qos -i IF) to `want`; each
    difference is added to `notes` as (what, now, wanted) when a list is given."""
    notes = [] if notes is None else notes
    have = _read_output(tools.parse_mlnx_qos, text)
    cmds = []
    if have["trust"] != want["trust"]:
        cmds.append(["mlnx_qos", "-i", ifname, "--trust", want["trust"]])
        notes.append(("trust", str(have["trust"]), want["trust"]))
    for d in sorted(want["dscp_prio"]):
        if have["dscp_prio"].get(d) != want["dscp_prio"][d]:
            cmds.append(["mlnx_qos", "-i", ifname, "--dscp2prio", "set,%d,%d" % (d, want["dscp_prio"][d])])
            notes.append(("dscp %d -> priority" % d, str(have["dscp_prio"].get(d)), str(want["dscp_prio"][d])))
    if have["pfc"] != want["pfc"]:
        cmds.append(["mlnx_qos", "-i", ifname, "--pfc", ",".join(str(v) for v in want["pfc"])])
        notes.append(("pfc", _bits(have["pfc"]), _bits(want["pfc"])))
    ets = want["ets"] or {}
    for key, flag in (("prio_tc", "--prio_tc"), ("tc_tsa", "--tsa"), ("tc_bw", "--tcbw")):
        if key in ets and list(ets[key]) != have[key]:
            cmds.append(["mlnx_qos", "-i", ifname, flag, ",".join(str(v) for v in ets[key])])
            notes.append(("ets %s" % key, _bits(have[key] or []), _bits(ets[key])))
    return cmds


def ecn_unexposed(ifname, want, read, sys_net="/sys/class/net"):
    """A message when the driver exposes none of the ECN (DCQCN) sysfs files ecn_writes would set
    (the distribution's inbox mlx5 has no /sys/class/net/IF/ecn): those settings are skipped, and
    the firmware's defaults stay in force. None when they are there."""
    probe = os.path.join(sys_net, ifname, "ecn", "roce_np", "enable", str(want["ecn_priority"]))
    if read(probe) is not None:
        return None
    return ("%s: the driver exposes no ECN (DCQCN) settings (%s): enable/CNP DSCP/CNP priority were not set, "
            "the NIC firmware's defaults apply (MLNX OFED's driver has them)"
            % (ifname, os.path.join(sys_net, ifname, "ecn")))


def ecn_writes(ifname, want, read, sys_net="/sys/class/net"):
    """[(path, value)] for the ECN sysfs files the driver exposes (MLNX_OFED's
    /sys/class/net/IF/ecn/roce_{np,rp}/enable/N, cnp_dscp, cnp_802p_prio); [] without them."""
    base = os.path.join(sys_net, ifname, "ecn")
    prio = want["ecn_priority"]
    wanted = [(os.path.join(base, side, "enable", str(prio)), "1" if want["dcqcn"] else "0")
              for side in ("roce_np", "roce_rp")]
    wanted += [(os.path.join(base, "roce_np", "cnp_dscp"), str(want["cnp"]["dscp"])),
               (os.path.join(base, "roce_np", "cnp_802p_prio"), str(want["cnp"]["priority"]))]
    out = []
    for path, value in wanted:
        have = read(path)
        if have is not None and have.strip() != value:
            out.append((path, value))
    return out


def rdma_cm_writes(ports, tos, read, configfs="/sys/kernel/config/rdma_cm"):
    """[(path, value)] that make RoCE v2 and the plan's ToS the RDMA-CM defaults of each
    (ibdev, port); the directory of a device is created by writing into it (mkdir first)."""
    out = []
    for dev, port in ports:
        base = os.path.join(configfs, dev, "ports", str(port))
        for name, value in (("default_roce_mode", "RoCE v2"), ("default_roce_tos", str(tos))):
            path = os.path.join(base, name)
            if (read(path) or "").strip() != value:
                out.append((path, value))
    return out


def pick_backend(backend, driver, has_mlnx_qos):
    """`auto`: mlnx_qos where it is installed and the driver's first QoS tool is mlnx_qos (the NIC
    driver registry's facts, rocetune_nic_facts), else dcb."""
    if backend != "auto":
        return backend
    return "mlnx_qos" if has_mlnx_qos and nic_facts.QOS_TOOLS.get(driver, ("dcb",))[0] == "mlnx_qos" else "dcb"


# ---------------------------------------------------------------------------------------------
# One interface, end to end (the module and the boot script both call this)


def interface_plan(ifname, driver, backend, want, run, read, pause_off=True):
    """{"backend", "commands": [argv], "writes": [(path, value)], "notes": [(what, now, wanted)],
    "ecn_unexposed", "buffer"} for one interface ("buffer": buffer_plan's answer, or None when the
    plan states no buffers; "notes": each difference, for the diff).

    `run(argv) -> (rc, out, err)`, `read(path) -> text or None`. Raises NotSupported when the
    NIC has no DCB, QosError when a tool fails otherwise.
    """
    cmds, notes = [], []
    buffer_step = None
    if backend == "mlnx_qos":
        rc, out, err = run(["mlnx_qos", "-i", ifname])
        if rc != 0:
            if NOT_SUPPORTED in out + err:
                raise NotSupported("DCB is not supported on %s (driver %s)" % (ifname, driver))
            raise QosError("mlnx_qos -i %s: %s" % (ifname, (err or out).strip().splitlines()[-1:] or rc))
        cmds += mlnx_qos_commands(ifname, want, out, notes)
        if want.get("buffer"):
            buffer_step = buffer_plan(ifname, driver, backend, want, out, run)
    else:
        texts = {}
        for obj in ("pfc", "app", "ets"):
            rc, out, err = run(["dcb", "-N", obj, "show", "dev", ifname])
            if rc != 0:
                if NOT_SUPPORTED in out + err:
                    raise NotSupported("DCB is not supported on %s (driver %s): dcb %s show: %s"
                                       % (ifname, driver, obj, NOT_SUPPORTED))
                raise QosError("dcb %s show dev %s: %s" % (obj, ifname, (err or out).strip()))
            texts[obj] = out
        cmds += dcb_commands(ifname, want, texts["pfc"], texts["app"], texts["ets"], notes)
        if want.get("buffer"):
            buffer_step = buffer_plan(ifname, driver, backend, want, texts["pfc"], run)
    if pause_off:
        rc, out, err = run(["ethtool", "-a", ifname])
        pause = tools.parse_pause(out) if rc == 0 else {}
        if pause.get("rx") or pause.get("tx"):
            cmds.append(["ethtool", "-A", ifname, "rx", "off", "tx", "off"])
            now = "rx %s tx %s" % ("on" if pause.get("rx") else "off", "on" if pause.get("tx") else "off")
            notes.append(("global pause", now, "rx off tx off"))
    if buffer_step:
        # After PFC: the driver then sizes the headroom for the lossless priorities as planned.
        cmds += buffer_step["commands"]
    writes = ecn_writes(ifname, want, read)
    notes += [(path, (read(path) or "").strip(), value) for path, value in writes]
    return {"backend": backend, "commands": cmds, "writes": writes, "notes": notes,
            "ecn_unexposed": ecn_unexposed(ifname, want, read), "buffer": buffer_step}


def buffer_plan(ifname, driver, backend, want, text, run):
    """The plan's lossless buffers on one interface: {"commands": [argv], "not_supported":
    [message], "before"/"after": diff text}. `text` is what the backend's reader already printed
    (`mlnx_qos -i IF`, or `dcb -N pfc show dev IF` whose `delay` is mlx5's cable length).

    What the NIC or its driver cannot take is reported in not_supported, never applied; what it
    would refuse (more than the port's memory, a PFC priority in an empty buffer) is a QosError.
    """
    plan = want["buffer"]
    stated = [k for k in buffers.KEYS if plan.get(k) is not None]
    where = "%s (driver %s)" % (ifname, driver)
    if backend == "mlnx_qos":
        have = tools.parse_mlnx_qos_buffers(text)
        why = "mlnx_qos -i %s prints no receive buffers" % ifname
    else:
        rc, out, err = run(["dcb", "-j", "buffer", "show", "dev", ifname])
        if rc != 0 and NOT_SUPPORTED in out + err:
            have, why = None, "dcb buffer show: %s" % NOT_SUPPORTED
        elif rc != 0:
            raise QosError("dcb -j buffer show dev %s: %s" % (ifname, (err or out).strip()))
        else:
            try:
                have = tools.parse_dcb_buffer(out)
            except tools.QosOutputError as exc:
                raise QosError("%s: %s" % (ifname, exc)) from exc
            have["cable_length"] = tools.dcb_pfc_delay(text)
    if have is None:
        return {"commands": [], "before": "", "after": "",
                "not_supported": ["%s: the NIC has no PFC buffer settings (%s): buffer.%s not applied"
                                  % (where, why, ", buffer.".join(stated))]}
    not_supported = []
    cable_ok = driver in nic_facts.CABLE_LENGTH_DRIVERS
    if plan.get("cable_length") is not None and not cable_ok:
        not_supported.append("%s: buffer.cable_length not applied: the PFC delay is a cable length in metres "
                             "only on %s" % (where, ", ".join(nic_facts.CABLE_LENGTH_DRIVERS)))
    try:
        buffers.check(plan, have, want["pfc"])
    except buffers.BufferError as exc:
        raise QosError("%s: %s" % (ifname, exc)) from exc
    change = buffers.changes(plan, have, cable_ok)
    if backend == "mlnx_qos":
        cmds = buffers.mlnx_qos_commands(ifname, change, want["pfc"])
    else:
        cmds = buffers.dcb_commands(ifname, change)
    after = dict(have, **change)
    return {"commands": cmds, "not_supported": not_supported,
            "before": buffers.describe(have, change), "after": buffers.describe(after, change)}


# ---------------------------------------------------------------------------------------------
# Boot-time re-apply: python3 roce_qos_state.py SETTINGS.json


def _run(argv):
    import subprocess
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              check=False)
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def _read(path):
    # Its own reader: this file also runs alone as the boot-time script, without the collection.
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def write_value(path, value):
    """Write one sysfs/configfs value (an RDMA-CM port's directory is created by mkdir on its
    device's directory in configfs)."""
    parent = os.path.dirname(path)
    if "/rdma_cm/" in path and not os.path.isdir(parent):
        os.makedirs(os.path.dirname(os.path.dirname(parent)), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(value + "\n")


def driver_of(ifname, run=_run, sys_net="/sys/class/net"):
    link = os.path.join(sys_net, ifname, "device", "driver")
    if os.path.islink(link):
        return os.path.basename(os.readlink(link))
    rc, out, dummy = run(["ip", "-d", "-j", "link", "show", "dev", ifname])
    if rc == 0:
        try:
            return json.loads(out)[0].get("linkinfo", {}).get("info_kind") or "unknown"
        except (ValueError, IndexError):
            pass
    return "unknown"


def rdma_ports(interfaces, ib_root="/sys/class/infiniband"):
    """[(ibdev, port)] whose RoCE GID table belongs to one of the interfaces."""
    out = []
    if not os.path.isdir(ib_root):
        return out
    for dev in sorted(os.listdir(ib_root)):
        ports = os.path.join(ib_root, dev, "ports")
        for port in sorted(os.listdir(ports)) if os.path.isdir(ports) else []:
            ndev = (_read(os.path.join(ports, port, "gid_attrs", "ndevs", "0")) or "").strip()
            if ndev in interfaces:
                out.append((dev, int(port)))
    return out


def reapply(args, out, err):
    """Re-apply the settings at boot (rocetune_qos_reapply.py, the unit's command, calls it):
    every supported interface, the others reported; 0 unless `required` is set and something
    could not be applied, or the plan or the ETS setting cannot be used. `out` and `err` are the
    streams the lines go to (the journal)."""
    if len(args) != 1:
        err.write("usage: rocetune_qos_reapply.py SETTINGS.json\n")
        return 2
    with open(args[0]) as fh:
        settings = json.load(fh)
    import yaml
    try:
        plan = load_plan(settings["plan_file"], yaml.safe_load)
        ets = validate_ets(settings.get("ets"))
    except QosError as exc:
        err.write("rocetune-qos: error: %s\n" % exc)
        return 1
    except QosPlanError as exc:
        err.write("rocetune-qos: error: %s\n" % exc.describe())
        return 1
    want = desired(plan, ets, settings.get("dcqcn", True))
    failures = 0

    def say(line):
        out.write("rocetune-qos: %s\n" % line)

    for ifname in settings["interfaces"]:
        driver = driver_of(ifname)
        backend = pick_backend(settings.get("backend", "auto"), driver, bool(_which("mlnx_qos")))
        try:
            step = interface_plan(ifname, driver, backend, want, _run, _read, settings.get("pause_off", True))
        except NotSupported as exc:
            say("%s: skipped" % exc)
            failures += 1 if settings.get("required") else 0
            continue
        except QosError as exc:
            err.write("rocetune-qos: error: %s\n" % exc)
            failures += 1
            continue
        for cmd in step["commands"]:
            rc, text, etext = _run(cmd)
            say("%s: %s" % (" ".join(cmd), "ok" if rc == 0 else (etext or text).strip()))
            failures += rc != 0
        for path, value in step["writes"]:
            write_value(path, value)
            say("%s = %s" % (path, value))
        if step["ecn_unexposed"]:
            say(step["ecn_unexposed"])
        for message in (step["buffer"] or {}).get("not_supported", []):
            say(message)
            failures += 1 if settings.get("required") else 0
        if not step["commands"] and not step["writes"]:
            say("%s (driver %s, %s): already as planned" % (ifname, driver, backend))
    if settings.get("rdma_cm", True):
        for path, value in rdma_cm_writes(rdma_ports(settings["interfaces"]), traffic_class(plan), _read):
            try:
                write_value(path, value)
                say("%s = %s" % (path, value))
            except OSError as exc:
                err.write("rocetune-qos: %s: %s\n" % (path, exc))
                failures += 1
    return 1 if failures else 0


def _which(name):
    for d in os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return None
