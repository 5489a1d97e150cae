"""Every reader of what rocetune does not trust, fed seeded mutations of real inputs.

A reader may accept a mutant (and everything after it -- plan, findings, renderers, the JSON
envelope -- must then work), or refuse it the documented way: RocetuneError with an exit code
other than 70 (ParseError is one; a parser's "unexpected parser failure" is not), or for the
document readers the ValueError they document (JsonError, YamlError). Anything else -- a
TypeError, a KeyError, RecursionError, NaN in JSON output -- fails the test and names the seed
that rebuilds the input: tests.mutate.mutant_bytes(SEED, seed input) or mutant_doc(SEED, doc).

Seeds are real: the fixture hosts' recorded command outputs and files, every recorded output of
tests/fixtures/outputs (kernel logs, lldpctl, mlxlink, ethtool, NVLink, mlxconfig ...), the NCCL
logs, the switch dumps, golden env files, a QoS plan, Features and fleet results of fixture hosts.
Each reader gets a fixed number of mutants (deterministic) and prints how many ran; a deadline
per reader only stops a machine too slow to finish, and a run cut below its floor (half the
mutants, unless a reader names another) fails: a reader is never fuzzed less than it says.

No exception is not enough: the verdict properties at the end hold that bytes a user or a fabric
neighbour can write -- a record of the kernel log whose text they chose, an LLDP neighbour's
names -- never turn a healthy host's verdict into a failure, nor a faulty host's into a pass.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from functools import cache
from pathlib import Path
from typing import Callable, List, Optional

import pytest

from rocetune.errors import ExitCode, RocetuneError
from rocetune.probe.parsers._common import BUG_PREFIX
from tests.fixtures.roots import root_of
from tests.mutate import json_bytes, mutant_bytes, mutant_doc, yaml_bytes

pytestmark = pytest.mark.slow  # thousands of mutants through every reader: about 25 s on 2 busy cores

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = Path(__file__).resolve().parents[1] / "integration" / "golden"
REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0  # per reader: only a machine far too slow reaches it, and then the floor fails the run


def clean_refusal(exc: BaseException) -> bool:
    if isinstance(exc, RocetuneError):
        return exc.code != ExitCode.INTERNAL and BUG_PREFIX not in exc.message
    from rocetune.model.jsonread import JsonError
    from rocetune.model.yamlread import YamlError

    return isinstance(exc, (JsonError, YamlError))


def fuzz(name: str, seeds: List[bytes], run: Callable[[bytes], None], count: int, structured=None,
         floor: Optional[int] = None) -> int:
    """`count` mutants of `seeds` through `run`; structured=(parse, dump) mutates documents too.
    Fails when fewer than `floor` (default: half of `count`) ran before the deadline; returns
    how many ran."""
    failures = []
    started = time.monotonic()
    done = accepted = 0
    for i in range(count):
        if time.monotonic() - started > DEADLINE_S:
            break
        seed_input = seeds[i % len(seeds)]
        key = f"{name}:{i}"
        if structured is not None and i % 2:
            data = structured[1](mutant_doc(key, structured[0](seed_input)))
        else:
            data = mutant_bytes(key, seed_input)
        try:
            run(data)
            accepted += 1
        except Exception as exc:  # noqa: BLE001 - what is under test
            if not clean_refusal(exc):
                failures.append(f"seed {key!r} ({'doc' if structured and i % 2 else 'bytes'} of seed input "
                                f"{i % len(seeds)}): {type(exc).__name__}: {str(exc)[:300]}")
                if len(failures) >= 5:
                    break
        done += 1
    print(f"{name}: {done} mutants ({accepted} accepted) in {time.monotonic() - started:.1f} s")
    assert not failures, "\n".join(failures)
    floor = count // 2 if floor is None else floor
    assert done >= floor, f"{name}: the {DEADLINE_S:g} s deadline cut the run at {done} of {count} mutants (floor {floor})"
    return done


def _not_json(name: str):
    raise AssertionError(f"{name} in JSON output")


def strict_json(obj) -> str:
    """The envelope's JSON of `obj`, which must be JSON: no NaN or Infinity, no raw C1 control."""
    from rocetune.render.json_text import dumps

    text = dumps(obj)
    json.loads(text, parse_constant=_not_json)
    assert not any("\x80" <= ch <= "\x9f" for ch in text), "a raw C1 control in JSON output"
    return text


def _read(paths) -> List[bytes]:
    return [Path(p).read_bytes() for p in paths]


# --- seeds made once ------------------------------------------------------------------------------

@cache
def features_of(host: str) -> dict:
    from rocetune.probe import collect_features

    return collect_features(root_of(host))


@cache
def plan_env_of(host: str) -> dict:
    from rocetune import app

    return dict(app.plan_host(features_of(host), app.PlanRequest(root=root_of(host))).env)


# --- the readers ----------------------------------------------------------------------------------

def test_features_files_and_everything_planned_from_them(tmp_path):
    from rocetune import app
    from rocetune.cli import report
    from rocetune.envfiles import dialects
    from rocetune.model.features import load
    from rocetune.render.human import findings_text, host_summary, plan_text

    seeds = [json.dumps(features_of(h)).encode() for h in ("pcie-4gpu-2nic", "softroce-3nic", "dgx-h100-roce")]
    path = tmp_path / "features.json"
    formats = [d.name for d in dialects.all_dialects() if d.writes]

    def run(data: bytes) -> None:
        path.write_bytes(data)
        features = load(str(path))
        env = app.plan_env(features, formats, env_dir=str(tmp_path / "env"),
                           request=app.PlanRequest(root=str(tmp_path)))
        findings = report.all_findings(features, env.plan)
        host_summary(features, 1) + findings_text(findings, 1) + plan_text(env.plan, 1)
        strict_json({"features": features, "plan": env.plan.to_dict(), "texts": env.texts,
                     "findings": [f.to_dict() for f in findings]})

    fuzz("features", seeds, run, 300, structured=(json.loads, json_bytes))


def test_fleet_result_files_report_and_switch_host_check(tmp_path):
    from rocetune.fleet import results
    from rocetune.fleet.compare import compare
    from rocetune.fleet.compare import data as report_data
    from rocetune.lint.switch_hosts import compare_hosts
    from rocetune.model.qos import default_plan
    from rocetune.render.fleet_html import report_html
    from rocetune.render.fleet_text import report_text
    from rocetune.switchos import read_file as read_switch

    good = {h: {"schema": results.SCHEMA, "host": h, "gathered_at": "2026-01-01T00:00:00Z", "error": None,
                "probe": None, "doctor": {"features": features_of(h), "plan": {"env": plan_env_of(h)},
                                          "findings": []}}
            for h in ("pcie-4gpu-2nic", "dgx-h100-roce")}
    seeds = [json.dumps(doc).encode() for doc in good.values()]
    d = tmp_path / "results"
    d.mkdir()
    (d / "gpu01.json").write_text(seeds[0].decode())
    switch = read_switch(str(FIXTURES / "switch" / "sonic-qos-arista7050.json"))

    def run(data: bytes) -> None:
        (d / "gpu02.json").write_bytes(data)
        hosts = results.load_dir(str(d))
        rep = compare(hosts)
        report_text(rep, 1) + report_html(rep)
        strict_json(report_data(rep, None))
        compare_hosts(default_plan(), switch, hosts)

    fuzz("fleet results", seeds, run, 300, structured=(json.loads, json_bytes))


def test_switch_dumps_and_the_check_against_a_plan():
    from rocetune import switchos
    from rocetune.lint.switch_qos import compare
    from rocetune.model.qos import default_plan

    seeds = _read(sorted(p for p in (FIXTURES / "switch").iterdir() if p.suffix in (".json", ".cfg", ".txt")
                         and "schema" not in p.name and p.stat().st_size < 50000))
    plan = default_plan()

    def run(data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        found = switchos.detect(text)
        for os_ in ([found] if found else []) + list(switchos.registry().values()):
            try:
                compare(plan, os_.parse(text, "switch"))
            except RocetuneError as exc:
                if not clean_refusal(exc):
                    raise

    fuzz("switch dumps", seeds, run, 1200,
         structured=(lambda b: json.loads(b) if b.lstrip().startswith(b"{") else {"text": b.decode()},
                     json_bytes))


def test_nccl_logs_and_the_comparison_with_a_plan():
    from rocetune.nccl.log import read_log
    from rocetune.nccl.log_compare import compare_with_plan

    seeds = _read(sorted((FIXTURES / "nccl-logs").glob("*.log")))
    plan_env = plan_env_of("dgx-h100-roce")

    def run(data: bytes) -> None:
        report = read_log(data, "nccl.log")
        strict_json(report.to_dict())
        compare_with_plan(report, plan_env)

    fuzz("nccl logs", seeds, run, 1500)


def test_env_files_in_every_dialect_lint_explain_and_changes():
    from rocetune.envfiles.changes import env_changes
    from rocetune.envfiles.read import parse_text
    from rocetune.lint.checks import lint_text
    from rocetune.lint.host import HostNames

    seeds = _read(sorted(GOLDEN.glob("*/*"))[:8] + sorted((FIXTURES / "expert").glob("*/*nccl.conf"))[:3])
    names = ["env.sh", "nccl.conf", ".deepspeed_env", "rocetune.env", "env.json", "cm.yaml", "Dockerfile",
             "job.sbatch"]
    host = HostNames.from_features(features_of("dgx-h100-roce"))

    def run(data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        name = names[len(data) % len(names)]
        lint_text(text, name, host=host)
        parsed = parse_text(text, "auto", name)
        strict_json([a.key for a in parsed.assignments])
        env_changes(text, seeds[0].decode(), "sh")

    fuzz("env files", seeds, run, 1500)


def test_yaml_inputs_qos_plan_and_manifest():
    from rocetune.fleet.manifest import checks
    from rocetune.model.qos import load_text
    from rocetune.model.yamlread import load_yaml

    manifest = (b"mtu: 9000\ngid_index: 3\nhca_count: 8\nnccl_version: 2.21.5\nkernel: 6.5.0\n"
                b"link: {speed: 400, width: 4, rate_gbps: 400}\nenv: {NCCL_IB_HCA: '=mlx5_0', NCCL_DEBUG: null}\n")
    seeds = [(REPO / "examples" / "qos" / "h100-roce.yml").read_bytes(), manifest]

    def run(data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        try:
            strict_json(load_text(text, "qos.yml").to_dict())
        except RocetuneError as exc:
            if not clean_refusal(exc):
                raise
        try:
            checks(load_yaml(text))
        except ValueError as exc:  # checks() documents a ValueError naming the key
            if type(exc) is not ValueError and not clean_refusal(exc):
                raise

    import yaml

    fuzz("yaml inputs", seeds, run, 1500, structured=(lambda b: yaml.safe_load(b), yaml_bytes))


PARSER_SEEDS = {
    "ibv_devinfo": "ibv_devinfo.txt", "ip_addr": "ip_-j_addr_show.txt", "topo": "nvidia-smi_topo_-m.txt",
    "gpu_query": "nvidia-smi_--query-gpu=index,pci.bus_id,name_--format=csv,noheader.txt",
}


def test_recorded_command_outputs_through_every_parser():
    from rocetune.core import nic_firmware_params as nvconfig
    from rocetune.core import qos_tool_outputs as qos_tools
    from rocetune.doctor import slurm_node
    from rocetune.fleet import measure
    from rocetune.probe.parsers import (
        ethtool_stats,
        ibstat,
        ibv_devinfo,
        ip_addr,
        kernel_log,
        lldpctl,
        nvsmi_nvlink,
        nvsmi_query,
        nvsmi_topo,
        phy,
        proc_net,
    )
    from rocetune.probe.sources import nvlink

    hosts = [h for h in os.listdir(FIXTURES / "hosts") if (FIXTURES / "hosts" / h / "commands").is_dir()][:4]
    seeds = [p.read_bytes() for h in hosts for p in sorted((FIXTURES / "hosts" / h / "commands").glob("*.txt"))]
    seeds += [p.read_bytes() for p in sorted((FIXTURES / "qos").glob("*.txt"))]
    seeds += [p.read_bytes() for p in sorted((FIXTURES / "outputs").rglob("*")) if p.suffix in (".txt", ".json")]
    seeds += [b"NodeName=n1 Arch=x86_64 CoresPerSocket=8\n   State=IDLE+DRAIN ThreadsPerCore=1\n"
              b"   Reason=rocetune: FAIL n1: doctor-port-down mlx5_0 [root@2026-12-07T03:00:00]\n",
              b"Id=nvidia-fabricmanager.service\nLoadState=loaded\nActiveState=failed\nResult=exit-code\n\n"
              b"Id=nvidia-imex.service\nLoadState=not-found\n"]
    parsers = [ibv_devinfo.parse_ibv_devinfo, ibstat.parse_ibstat, ibstat.parse_ibstatus, ip_addr.parse_ip_addr,
               nvsmi_topo.parse_topo_matrix, nvsmi_query.parse_gpu_query, ethtool_stats.parse_ethtool_stats,
               proc_net.parse_route, proc_net.parse_ipv6_route, proc_net.parse_fib_trie,
               proc_net.parse_if_inet6, qos_tools.parse_dcb, qos_tools.parse_dcb_buffer, qos_tools.parse_mlnx_qos,
               qos_tools.parse_mlnx_qos_buffers, qos_tools.parse_pause, measure.parse_perftest,
               measure.parse_iperf3, measure.parse_nccl_tests,
               # kernel log, lldpctl -f json0, mlxlink, ethtool -m / --show-fec, NVLink, mlxconfig,
               # `systemctl show`, `scontrol show node`
               kernel_log.classify, kernel_log.relevant_lines, lldpctl.parse_lldpctl_json, phy.parse_mlxlink,
               phy.parse_show_fec, phy.parse_module_info, nvsmi_nvlink.parse_fabric_query,
               nvsmi_nvlink.parse_fabric_csv, nvsmi_nvlink.parse_nvlink_status, nvsmi_nvlink.parse_nvlink_errors,
               nvconfig.parse_query, nvlink._units, lambda t: slurm_node.parse_show_node(t, "n1")]

    def run(data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        for parse in parsers:
            try:
                out = parse(text)
            except (qos_tools.QosOutputError, nvconfig.FirmwareError):  # their modules' documented refusals
                continue
            except RocetuneError as exc:
                if not clean_refusal(exc):
                    raise
                continue
            if parse is nvsmi_topo.parse_topo_matrix:
                nvsmi_topo.nvlink_pairs(out)
                nvsmi_topo.gpu_nic_paths(out)

    fuzz("command outputs", seeds, run, 1500)


def test_a_probe_of_a_root_whose_recordings_and_files_are_mutated(tmp_path):
    """The real probe over a copied fixture root, one of its recordings or sysfs files mutated,
    then doctor (plan, readings, checks, NIC counters) and the envelope (fewer mutants: each is a
    probe and a doctor run)."""
    from rocetune import app
    from rocetune.probe import collect_features

    host = "dgx-h100-roce"
    root = tmp_path / "R"
    shutil.copytree(root_of(host), root, symlinks=True)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size < 65536)
    originals = {p: p.read_bytes() for p in files}
    order = sorted(originals, key=lambda p: ("commands" not in p.parts, str(p)))[:60]

    def run(data: bytes) -> None:
        target = order[len(data) % len(order)]
        try:
            target.write_bytes(mutant_bytes(f"probe-file:{len(data)}", originals[target]))
            features = collect_features(str(root))
            findings, data = app.doctor_checks(features, app.PlanRequest(root=str(root)), counters=True)
            strict_json({"features": features, "doctor": data, "findings": [f.to_dict() for f in findings]})
        finally:
            target.write_bytes(originals[target])

    fuzz("probe of a mutated root", [bytes(range(i)) for i in range(len(order))], run, 60)


class _NoExec:
    """paramiko's Match exec runner, replaced: a mutant's command is never run."""

    class _Result:
        ok = False

    def run(self, *args, **kwargs):
        return self._Result()


def test_baselines_known_hosts_and_ssh_config(tmp_path, monkeypatch):
    import paramiko.config

    monkeypatch.setattr(paramiko.config, "invoke", _NoExec())
    from rocetune.doctor.nic_baseline import load_baseline
    from rocetune.fleet import nccl_check, ssh, targets
    from rocetune.model.nic_counters import validate_snapshot
    from tests.unit.doctor.nicsnap import real_snapshot

    snapshot = json.dumps(real_snapshot()).encode()
    validate = json.dumps({"hosts": {"gpu01": {"nccl": {"busbw_gbs": 180.5}}, "gpu02": {"nccl": {}}}}).encode()
    known = (b"[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
             b"@revoked * ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
             b"@cert-authority *.example ssh-rsa AAAA\n|1|abc=|def= ssh-rsa AAAAB3NzaC1yc2E=\n")
    config = b"Host gpu*\n  HostName 10.0.0.1\n  Port 2222\n  User ops\nMatch exec \"true\" host x\n  User y\n"
    base = tmp_path / "R" / "var" / "lib" / "rocetune"
    base.mkdir(parents=True)
    path = tmp_path / "input"

    def run(data: bytes) -> None:
        (base / "counters.json").write_bytes(data)
        snap = load_baseline(str(tmp_path / "R"))
        if snap is not None:
            validate_snapshot(snap)
        path.write_bytes(data)
        try:
            nccl_check.load_baseline(str(path))
        except RocetuneError as exc:
            if not clean_refusal(exc):
                raise
        ssh._parse_known_hosts(str(path))
        try:
            lookup = targets._ssh_config(str(path), lambda m: None)
        except RocetuneError as exc:
            if not clean_refusal(exc):
                raise
            return
        if lookup is not None:
            lookup("gpu01")

    fuzz("baselines, known_hosts, ssh config", [snapshot, validate, known, config], run, 800,
         structured=(lambda b: json.loads(b) if b.startswith(b"{") else {"text": b.decode()}, json_bytes))


# --- verdicts: what a user or a neighbour writes never turns one ------------------------------------

def _dmesg_text(record: str) -> str:
    """A record as util-linux's dmesg prints it: control bytes as \\xNN, each further line
    indented by the timestamp's width."""
    shown = "".join(ch if ch == "\n" or (ch.isprintable() and ch != "\\") else f"\\x{ord(ch):02x}"
                    for ch in record if ord(ch) < 0x100 or ch.isprintable())
    return shown.replace("\n", "\n" + " " * 15)


def test_kernel_records_a_user_writes_never_change_a_verdict():
    """A segfault record names a file the user chose; tmpfs's `Unknown parameter '%s'` a mount
    option (unshare -rm). Mutants of recorded kernel text, newlines included, put there in both
    of dmesg's forms: a healthy host stays without findings, a host with a real Xid 79 keeps it."""
    from rocetune.analysis.hostview import HostView
    from rocetune.doctor import below_checks
    from rocetune.doctor.checks import DoctorInput
    from rocetune.probe.parsers.kernel_log import classify
    from tests.unit.doctor.test_kernel_log import host

    logs = FIXTURES / "outputs" / "kernel-log"
    healthy = (logs / "mlx5-cable-plugged-link-up-dmesg.txt").read_text()
    xid = "[  512.000001] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
    seeds = [p.read_bytes() for p in sorted(logs.glob("*.txt"))] + [xid.encode()]
    features = host()

    def verdict(text: str) -> list:
        events = classify(text)
        events.update(source="dmesg --kernel", since="boot")
        d = DoctorInput(features, {"kernel_log": events}, HostView(features), {}, None)
        return sorted((f.id, f.severity, f.subject) for fn in (
            below_checks.nic_health, below_checks.nic_command, below_checks.link_flap, below_checks.pcie_aer,
            below_checks.module_event, below_checks.gpu_xid) for f in fn(d))

    before_healthy, before_faulty = verdict(healthy), verdict(xid + healthy)
    assert before_healthy == [] and before_faulty == [("doctor-kernel-gpu-xid", "error", "0000:18:00")]

    def run(data: bytes) -> None:
        chosen = data.decode("utf-8", "replace")
        records = [f"python3[14187]: segfault at 0 ip 00007ff1 sp 00007ffd error 4 in {chosen}[7ff1+1000]",
                   f"tmpfs: Unknown parameter '{chosen}'"]
        text = "".join(f"[  600.{i:06d}] {_dmesg_text(r)}\n" for i, r in enumerate(records * 3))
        as_json = json.dumps({"dmesg": [{"pri": 6, "time": 600.0 + i, "msg": r} for i, r in enumerate(records * 3)]})
        assert verdict(healthy + text) == before_healthy, "a user's record made a finding"
        assert verdict(xid + healthy + text) == before_faulty, "a user's record hid or changed a fault"
        assert classify(as_json)["events"] == [], "a user's record made an event in dmesg --json"

    fuzz("kernel records a user writes", seeds, run, 600)


def test_lldp_neighbour_names_never_move_a_cable():
    """lldpctl -f json0 of two rails (recorded): whatever one neighbour calls itself and its port
    -- JSON, raw 0x1F, newlines -- each interface keeps exactly its own neighbour."""
    from rocetune.probe.parsers.lldpctl import parse_lldpctl_json

    doc = json.loads((FIXTURES / "outputs" / "lldp" / "lldpctl-json0-two-interfaces-lab.json").read_text())
    truth = parse_lldpctl_json(json.dumps(doc))
    seeds = [p.read_bytes() for p in sorted((FIXTURES / "outputs" / "lldp").glob("*.json"))]

    def run(data: bytes) -> None:
        chosen = data.decode("utf-8", "replace")[:512]
        forged = json.loads(json.dumps(doc))
        chassis = forged["lldp"][0]["interface"][0]["chassis"][0]
        chassis["name"] = [{"value": chosen}]
        forged["lldp"][0]["interface"][0]["port"][0]["descr"] = [{"value": chosen}]
        for text in (json.dumps(forged), json.dumps(forged).replace("\\u001f", "\x1f")):
            try:
                got = parse_lldpctl_json(text)
            except RocetuneError as exc:  # the host's whole reading lost: no refusal is right here
                raise AssertionError(f"a neighbour's name made the reading unusable: {exc}") from None
            assert sorted(got) == sorted(truth), "a neighbour's name added or removed an interface"
            assert got["rt31a1"] == truth["rt31a1"], "a neighbour's name changed another port's cable"
            (mine,) = got["rt31a0"]
            assert (mine["chassis"], mine["port"]) == (chosen or truth["rt31a0"][0]["chassis_id"],
                                                        truth["rt31a0"][0]["port"])

    fuzz("lldp neighbour names", seeds, run, 600)
