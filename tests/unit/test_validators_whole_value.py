"""Every validator checks the whole value: `^...$` with re.match lets a trailing newline through
(`$` matches before it), and a name or value with one ends the line it is written into (a unit
file's ExecStart=, an apt source, a sysctl.d file, .deepspeed_env). One case per validator: the
good value passes, the same value with a newline after it does not."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest

from tests.unit.roles import REPO, load_module_utils


def _plugin(kind: str, name: str):
    """A module or filter of the collection, imported as the collection's own code."""
    collections = str(REPO / "collections")
    if collections not in sys.path:
        sys.path.append(collections)
    spec = importlib.util.spec_from_file_location(f"rocetune_plugin_{kind}_{name}", REPO / "plugins" / kind / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raises(call, *exc_types) -> bool:
    try:
        call()
    except tuple(exc_types) or (Exception,):  # noqa: B030 - a tuple of exception classes either way
        return False
    return True


def _plan_key(v):
    from rocetune.errors import RocetuneError
    from rocetune.model.plan import _check_key

    return _raises(lambda: _check_key(v, "--set"), RocetuneError)


def _nccl_release(v):
    import argparse

    from rocetune.cli.options import nccl_release

    return _raises(lambda: nccl_release(v), argparse.ArgumentTypeError)


def _manifest(doc):
    from rocetune.fleet.manifest import checks

    return lambda v: _raises(lambda: checks(doc(v)), ValueError)


def _switch_ports(v):
    from rocetune.switchos import PORT_RE  # what --ports keeps of each name, stripped

    return PORT_RE.match(v) is not None


def _deepspeed(v):
    from rocetune.envfiles.dialects import deepspeed
    from rocetune.model.plan import Decision, Plan

    plan = Plan()
    plan.decisions.append(Decision("NCCL_SOCKET_IFNAME", v, "socket-ifname", "test", {}))
    return _raises(lambda: deepspeed.render(plan, {}))


def _env_name(v):
    from rocetune.envfiles.parsed import NAME_RE

    return NAME_RE.match(v) is not None


def _topo(bdf="0000:01:00.0", net="mlx5_0"):
    from rocetune.nccl.topo import Endpoint, Group, TopologyError, validate

    return _raises(lambda: validate([Group(0, gpus=[], nics=[Endpoint(bdf, "0x020700", nets=[net])])]),
                   TopologyError)


def _topo_xml_value(v):
    from rocetune.nccl.topo import TopologyError, TopoNode
    from rocetune.render.topo_xml import render_topology

    return _raises(lambda: render_topology(TopoNode("system", {"version": v}, [])), TopologyError)


def _pci_bdf(v):
    from rocetune.probe.sources.pci import BDF_RE

    return BDF_RE.match(v) is not None


def _systemd(name):
    def accepts(v):
        from ansible.errors import AnsibleFilterError

        f = _plugin("filter", "systemd")
        calls = {"program": lambda v: f.systemd_exec([v, "env"]),
                 "word": lambda v: f.systemd_exec(["/usr/bin/rocetune", v]),
                 "unit": lambda v: f.systemd_unit_names([v])}
        if name == "word":  # a word is quoted, never refused: one with a newline must not stay bare
            return f.systemd_exec(["/usr/bin/rocetune", v]).endswith(" " + v)
        return _raises(lambda: calls[name](v), AnsibleFilterError)
    accepts.needs_ansible = True  # a filter plugin runs inside ansible-core
    return accepts


def _links(v):
    return not load_module_utils("", "rocetune_links").interface_name_problems([v], "roce_net_interfaces")


def _sysctl(v):
    return not load_module_utils("host_tuning", "host_tuning_sysctl_state").invalid_entries({v: "1"})


def _firmware(v):
    state = load_module_utils("nic_firmware", "nic_firmware_state")
    return _raises(lambda: state.check_settings({v: "1"}), state.FirmwareError)


def _firmware_bdf(v):
    state = load_module_utils("nic_firmware", "nic_firmware_state")  # first_function strips, then this
    return state._BDF.match(v) is not None


def _utils_re(name, attr):
    return lambda v: getattr(load_module_utils("", name), attr).match(v) is not None


def _module_re(module, attr):
    def accepts(v):
        return getattr(_plugin("modules", module), attr).match(v) is not None
    accepts.needs_ansible = True  # a module imports ansible-core's AnsibleModule
    return accepts


def _action_re(action, attr):
    def accepts(v):
        return getattr(_plugin("action", action), attr).match(v) is not None
    accepts.needs_ansible = True  # an action plugin imports ansible-core
    return accepts


def _since(v):
    import argparse

    from rocetune.cli.verbs.doctor import _since as since

    return _raises(lambda: since(v), argparse.ArgumentTypeError)


def _role_assert(var):
    """The role's own `match` test for `var` (vars/main.yml: __rocetune_env_input_problems),
    evaluated as Ansible does (`match` is re.match)."""
    import re
    import warnings

    import jinja2

    text = (REPO / "roles" / "rocetune_env" / "vars" / "main.yml").read_text()
    (line,) = re.findall(re.escape(var) + r" is ansible\.builtin\.match\('[^']*'\)", text)
    env = jinja2.Environment()
    env.tests["ansible.builtin.match"] = lambda value, pattern: re.match(pattern, value) is not None
    with warnings.catch_warnings():
        # Jinja's lexer decodes a string's escapes and warns on `\Z`, which it keeps as written;
        # Ansible's templar reads the pattern as written too
        warnings.simplefilter("ignore", DeprecationWarning)
        test = env.compile_expression(line)
    return lambda v: test(**{var: v})


def _ofed_tarball(v):
    return load_module_utils("", "rdma_core_ofed")._TARBALL.match(v) is not None


VALIDATORS = [
    ("doctor --since", _since, "-2h"),
    ("rocetune_env doctor interval", _role_assert("rocetune_env_doctor_interval"), "15min"),
    ("rocetune_env metrics file", _role_assert("rocetune_env_doctor_metrics_file"), "/var/lib/prom/rocetune.prom"),
    ("rdma_core OFED tarball name", _ofed_tarball, "MLNX_OFED_LINUX-24.10-1.1.4.0-ubuntu22.04-x86_64.tgz"),
    ("plan variable name (--set, --config)", _plan_key, "NCCL_DEBUG"),
    ("--nccl-version", _nccl_release, "2.21.5"),
    ("manifest nccl_version", _manifest(lambda v: {"nccl_version": v}), "2.21.5"),
    ("manifest env name", _manifest(lambda v: {"env": {v: "1"}}), "NCCL_DEBUG"),
    ("qos render --ports", _switch_ports, "Ethernet0"),
    (".deepspeed_env value", _deepspeed, "eth0"),
    ("env file variable name", _env_name, "NCCL_DEBUG"),
    ("NCCL topology PCI address", lambda v: _topo(bdf=v), "0000:01:00.0"),
    ("NCCL topology device name", lambda v: _topo(net=v), "mlx5_0"),
    ("NCCL topology XML value", _topo_xml_value, "1"),
    ("sysfs PCI address", _pci_bdf, "0000:01:00.0"),
    ("systemd_exec program", _systemd("program"), "/usr/bin/rocetune"),
    ("systemd_exec word", _systemd("word"), "--quiet"),
    ("systemd_unit_names", _systemd("unit"), "network-online.target"),
    ("roce_net interface name", _links, "ens1f0"),
    ("host_tuning sysctl name", _sysctl, "net.core.rmem_max"),
    ("nic_firmware parameter", _firmware, "LINK_TYPE_P1"),
    ("nic_firmware PCI address", _firmware_bdf, "0000:01:00.0"),
    ("rocetune_env nccl_version", _utils_re("rocetune_env_run", "NCCL_RELEASE"), "2.21.5"),
    ("rocetune_env unit file", _utils_re("rocetune_env_run", "UNIT_FILE"), "rocetune-doctor.timer"),
    ("rocetune_env wanted_by", _utils_re("rocetune_env_run", "TARGET"), "multi-user.target"),
    ("rdma_core kernel module", _utils_re("rdma_core_node_state", "_MODULE_RE"), "rdma_rxe"),
    ("rocetune_env_features host name", _action_re("rocetune_env_features", "SAFE_NAME"), "gpu01"),
    ("fleet_results host name", _module_re("fleet_results", "HOST_NAME"), "gpu01"),
    ("switch_qos_config ports", _module_re("switch_qos_config", "PORT_RE"), "Ethernet0"),
]


@pytest.mark.parametrize("what, accepts, good", VALIDATORS, ids=[v[0] for v in VALIDATORS])
def test_a_trailing_newline_never_passes(what, accepts, good):
    if getattr(accepts, "needs_ansible", False) and importlib.util.find_spec("ansible") is None:
        pytest.skip("the collection's plugin runs inside ansible-core")
    assert accepts(good), f"{what}: {good!r} refused"
    assert not accepts(good + "\n"), f"{what}: {good!r} + newline passed"


def test_no_injected_exec_line_reaches_systemd(tmp_path):
    """Before, with systemd-analyze to read it: a program with a trailing newline and a next
    word `ExecStartPre=...` gave the unit a second command. The filter refuses it; a word with a
    trailing newline is quoted, and systemd reads back exactly one ExecStart=."""
    AnsibleFilterError = pytest.importorskip("ansible.errors").AnsibleFilterError

    f = _plugin("filter", "systemd")
    with pytest.raises(AnsibleFilterError):
        f.systemd_exec(["/bin/true\n", "ExecStartPre=/bin/touch", str(tmp_path / "owned")])
    line = f.systemd_exec(["/bin/true", "x\n", "ExecStartPre=/bin/touch", str(tmp_path / "owned")])
    unit = tmp_path / "probe-inject.service"
    unit.write_text(f"[Unit]\nDescription=t\n[Service]\nType=oneshot\nExecStart={line}\n")
    assert "ExecStartPre" not in [ln.split("=")[0] for ln in unit.read_text().splitlines()]
    tool = shutil.which("systemd-analyze")
    if tool:  # systemd's own reading of it: no warning, one command
        proc = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=60)
        assert "ExecStartPre" not in proc.stderr and "Unknown key" not in proc.stderr, proc.stderr
