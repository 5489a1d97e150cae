# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""A NIC's lossless (PFC) receive buffers: compare them with the plan's `buffer` section
(docs/qos.md) and return only the commands of `mlnx_qos` or iproute2 `dcb` that change something.

What the tools and the driver do with the values (docs/qos.md, "Lossless buffers"):
- the dcbnl PFC `delay` is what mlx5 takes as the cable length in metres (mlx5e_dcbnl_ieee_setpfc;
  getpfc reports it back); `mlnx_qos --cable_len N` and `dcb pfc set ... delay N` both set it;
- `dcb buffer` / `mlnx_qos --prio2buffer --buffer_size` set the dcbnl buffer object: the buffer of
  each priority and the size of each buffer in bytes, which the driver may round to its cell.

Pure Python; the caller passes the NIC's buffers in, as rocetune_qos_tools reads them from the
tools' outputs. Used by roce_qos_state (the module and the boot-time script, beside which this
file is installed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The drivers that read the PFC delay as a cable length in metres are the NIC driver registry's
# (rocetune_nic_facts.CABLE_LENGTH_DRIVERS). The IEEE meaning (and dcb-pfc(8)'s) is bit times of
# round-trip delay, which mlxsw uses; most NIC drivers ignore it.
# A size the NIC reports within this many bytes of the plan's is the plan's, rounded to the
# NIC's cell (mlx5 rounds down to 128 bytes by default or the cell the firmware reports: 144 on
# the ConnectX ports whose outputs tests/fixtures/qos holds).
CELL_SLACK = 256
KEYS = ("cable_length", "prio_buffer", "buffer_size")


class BufferError(ValueError):
    """The NIC's buffers cannot take the plan (one line)."""


# ---------------------------------------------------------------------------------------------
# Decisions


def sizes_match(want, have):
    return all(abs(w - h) < CELL_SLACK for w, h in zip(want, have))


def changes(want, have, cable_ok):
    """{key: value} of the plan's buffer settings the NIC does not have yet (cable_length only
    where `cable_ok`, the driver reading the PFC delay as metres)."""
    out = {}
    if cable_ok and want["cable_length"] is not None and have.get("cable_length") != want["cable_length"]:
        out["cable_length"] = want["cable_length"]
    if want["prio_buffer"] is not None and have["prio_buffer"] != want["prio_buffer"]:
        out["prio_buffer"] = want["prio_buffer"]
    if want["buffer_size"] is not None and not sizes_match(want["buffer_size"], have["buffer_size"]):
        out["buffer_size"] = want["buffer_size"]
    return out


def check(want, have, pfc):
    """Refuse, before anything changes, what the driver would refuse: more than the port's buffer
    memory, or a PFC priority left in a buffer of 0 bytes (mlx5: port_buffer.c)."""
    sizes = want["buffer_size"] if want["buffer_size"] is not None else have["buffer_size"]
    if want["buffer_size"] is not None and have.get("total_size"):
        total = sum(want["buffer_size"])
        if total > have["total_size"]:
            raise BufferError("buffer.buffer_size totals %d bytes, more than the port's %d"
                              % (total, have["total_size"]))
    if want["prio_buffer"] is None and want["buffer_size"] is None:
        return
    mapping = want["prio_buffer"] if want["prio_buffer"] is not None else have["prio_buffer"]
    for prio in range(8):
        if pfc[prio] and sizes[mapping[prio]] == 0:
            raise BufferError("lossless priority %d would be in buffer %d of 0 bytes (%s): state a size for it "
                              "in buffer.buffer_size" % (prio, mapping[prio], "buffer.buffer_size"
                                                         if want["buffer_size"] is not None else "the NIC's size"))


def dcb_commands(ifname, change):
    """argv lists for iproute2 dcb: the cable length as the PFC delay, then the buffer object in
    one call (the driver takes the map and the sizes together)."""
    cmds = []
    if "cable_length" in change:
        cmds.append(["dcb", "pfc", "set", "dev", ifname, "delay", str(change["cable_length"])])
    args = []
    if "prio_buffer" in change:
        args += ["prio-buffer"] + ["%d:%d" % (p, b) for p, b in enumerate(change["prio_buffer"])]
    if "buffer_size" in change:
        args += ["buffer-size"] + ["%d:%d" % (b, s) for b, s in enumerate(change["buffer_size"])]
    if args:
        cmds.append(["dcb", "buffer", "set", "dev", ifname] + args)
    return cmds


def mlnx_qos_commands(ifname, change, pfc):
    """argv lists for mlnx_qos: --cable_len with the planned --pfc (mlnx-tools before v24.04.0
    reset PFC on every priority when --cable_len came alone: its commit 83b87d9), then
    --buffer_size and --prio2buffer in two calls (given both, mlnx_qos on a driver with the qos/
    sysfs buffer files sets only the sizes)."""
    cmds = []
    if "cable_length" in change:
        cmds.append(["mlnx_qos", "-i", ifname, "--pfc", ",".join(str(v) for v in pfc),
                     "--cable_len", str(change["cable_length"])])
    if "buffer_size" in change:
        cmds.append(["mlnx_qos", "-i", ifname, "--buffer_size", ",".join(str(s) for s in change["buffer_size"])])
    if "prio_buffer" in change:
        cmds.append(["mlnx_qos", "-i", ifname, "--prio2buffer", ",".join(str(b) for b in change["prio_buffer"])])
    return cmds


def describe(state, keys):
    """The NIC's buffer settings named in `keys` as diff lines."""
    out = []
    for key in KEYS:
        if key in keys:
            value = state.get(key)
            if value is None:
                text = "unknown"
            else:
                text = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
            out.append("%s: %s\n" % (key, text))
    return "".join(out)
