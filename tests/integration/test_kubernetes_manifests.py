"""The Kubernetes pieces, checked offline (no API server runs here): the DaemonSet against the
Kubernetes schemas (the kubernetes-validate package, strict: an unknown field fails), the feature
file doctor writes against node-feature-discovery's format (source/local/local.go: `name[=value]`
lines, `# +expiry-time=` in RFC 3339, 64 KiB at most) and Kubernetes' label syntax, and the
node-problem-detector plugin config against NPD's own checks (pkg/custompluginmonitor/types/
config.go, Validate) and against doctor's deadline and line."""

from __future__ import annotations

import datetime
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from .clirun import rocetune

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "examples" / "kubernetes"
FIXTURE = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
KUBERNETES = (
    "1.29.0",
    "1.33.0",
    "1.37.0",
)  # the oldest and newest schemas kubernetes-validate 1.37 carries, and one between
NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?$"
)
VALUE = re.compile(r"^([A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?)?$")
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def documents():
    return [d for d in yaml.safe_load_all((K8S / "rocetune-daemonset.yaml").read_text()) if d]


@pytest.mark.parametrize("version", KUBERNETES)
def test_the_daemonset_fits_the_kubernetes_schemas(version):
    kv = pytest.importorskip("kubernetes_validate")  # a dev dependency (pyproject.toml)
    docs = documents()
    assert [d["kind"] for d in docs] == ["Namespace", "DaemonSet"]
    for doc in docs:
        kv.validate(doc, version, strict=True)
    broken = json.loads(json.dumps(docs[1]))
    broken["spec"]["template"]["spec"]["containers"][0]["comand"] = ["true"]
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, version, strict=True)


def test_the_daemonset_runs_the_boot_step_and_the_gate_in_report_mode():
    spec = documents()[1]["spec"]["template"]["spec"]
    (boot,) = spec["initContainers"]
    assert boot["command"][-1].endswith("rocetune -q env --env-dir /etc/rocetune --format sh -o /etc/rocetune/nccl.env")
    (gate,) = spec["containers"]
    script = gate["command"][-1]
    assert "--gate health-check --no-drain" in script and '--nfd-features "$labels"' in script
    assert "labels=/etc/kubernetes/node-feature-discovery/features.d/rocetune\n" in script
    args = shlex.split(next(line for line in script.splitlines() if "set -- --gate" in line).split("set -- ", 1)[1])
    timeout = float(args[args.index("--timeout") + 1])
    interval = int(next(e["value"] for e in gate["env"] if e["name"] == "INTERVAL"))
    assert timeout < interval and spec["hostPID"] is True


def parse_feature_file(text: str):
    """node-feature-discovery's parseFeatureFile: {name: value} of the lines still in force now."""
    assert len(text.encode()) <= 65536
    now = datetime.datetime.now(datetime.timezone.utc)
    expiry, out = now, {}
    for line in (raw.strip() for raw in text.splitlines()):
        if not line:
            continue
        if line.startswith("# +"):
            key, _, value = line[3:].partition("=")
            assert key in ("expiry-time", "no-label", "no-feature"), line
            if key == "expiry-time":
                expiry = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            continue
        if line.startswith("#") or expiry < now:
            continue
        name, _, value = line.partition("=")
        out[name] = value if "=" in line else "true"
    return out, expiry


def test_the_feature_file_is_what_nfd_reads(tmp_path):
    path = tmp_path / "rocetune"
    proc = rocetune(
        "doctor",
        "--gate",
        "health-check",
        "--no-drain",
        "--node",
        "gpu07",
        "--root",
        str(FIXTURE),
        "--no-counters",
        "--nfd-features",
        str(path),
        "--nfd-expiry",
        "900",
    )
    assert proc.returncode == 0, proc.stderr
    labels, expiry = parse_feature_file(path.read_text())
    assert labels == {
        "rocetune.io/health": "warn",
        "rocetune.io/roce-ready": "true",
        "rocetune.io/rails": "8",
        "rocetune.io/nccl": "2.21.5",
    }
    assert 800 < (expiry - datetime.datetime.now(datetime.timezone.utc)).total_seconds() <= 900
    for name, value in labels.items():
        assert NAME.match(name) and VALUE.match(value), (name, value)


def test_topology_is_only_under_topographs_key_and_values_fit_kubernetes():
    from rocetune.render.nfd_features import labels

    def rails(*leaves):
        return {f"rail.{i}.switch": {"value": leaf, "known": True, "detail": None} for i, leaf in enumerate(leaves)}

    facts = {
        "hca.count": {"value": 2, "known": True},
        "gid_index": {"value": [3], "known": True},
        "nccl.plugins": {"value": ["net libnccl-net.so 1.14.2"], "known": True},
        **rails("leaf-r0", "leaf-r1"),
    }
    found = labels("failing", facts)
    assert found == {
        "rocetune.io/health": "fail",
        "rocetune.io/roce-ready": "false",
        "rocetune.io/rails": "2",
        "rocetune.io/nccl-net-plugin": "libnccl-net.so",
        "rocetune.io/nccl-net-plugin-version": "1.14.2",
        "fabric.topograph.run/tier-1": "leaf-r0_leaf-r1",
    }
    eight = labels("healthy", {**facts, **rails(*(f"su01-rail-leaf-{i:02d}" for i in range(8)))})
    assert re.match(r"^leafset-[0-9a-f]{16}$", eight["fabric.topograph.run/tier-1"])
    silent = labels("healthy", {**facts, "rail.1.switch": {"value": None, "known": True}})
    assert "fabric.topograph.run/tier-1" not in silent and silent["rocetune.io/roce-ready"] == "true"
    assert [k for k in found if "topo" in k or "switch" in k or "leaf" in k] == ["fabric.topograph.run/tier-1"]


def go_seconds(text: str) -> float:
    assert GO_DURATION.match(text), text
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def test_the_npd_plugin_config_passes_npds_checks_and_fits_doctor():
    conf = json.loads((K8S / "node-problem-detector" / "rocetune-monitor.json").read_text())
    assert set(conf) <= {"plugin", "pluginConfig", "source", "conditions", "rules", "metricsReporting"}
    assert conf["plugin"] == "custom" and conf["source"]
    glob = conf["pluginConfig"]
    assert set(glob) <= {
        "invoke_interval",
        "timeout",
        "max_output_length",
        "concurrency",
        "enable_message_change_based_condition_update",
        "skip_initial_status",
    }
    global_timeout = go_seconds(glob["timeout"])
    assert go_seconds(glob["invoke_interval"]) > 0
    conditions = {c["type"] for c in conf["conditions"]}
    for rule in conf["rules"]:
        assert set(rule) <= {"type", "condition", "reason", "path", "args", "timeout", "invoke_interval"}
        assert rule["type"] in ("temporary", "permanent")
        assert go_seconds(rule["timeout"]) <= global_timeout  # NPD: "plugin timeout is greater than global"
        if rule["type"] == "permanent":
            assert rule["condition"] in conditions  # NPD: "does not have preset default condition"
        script = (K8S / "node-problem-detector" / Path(rule["path"]).name).read_text()
        gate_timeout = float(re.search(r"--timeout (\d+)", script).group(1))
        # NPD's defaults (5 s, 80 bytes) are what a large host outgrows: doctor's deadline sits under
        # the rule's with room to exit, and the whole one-line verdict fits.
        assert gate_timeout + 5 <= go_seconds(rule["timeout"])
        assert "--gate health-check --no-drain" in script
    # The longest line the gate prints: prefix, a 63-character node name, the 200-character reason.
    assert glob["max_output_length"] >= len("rocetune: OK with warnings ") + 63 + 2 + 200


def test_the_gate_container_runs_what_it_says(tmp_path):
    """The container's script as shipped, with a stand-in nsenter (records its arguments) and a
    stand-in sleep (ends the loop); then the rocetune command it built, run for real on a fixture."""
    import os
    import subprocess

    script = documents()[1]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "calls"
    (bin_ / "nsenter").write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {calls}\n')
    (bin_ / "sleep").write_text("#!/bin/sh\nkill -TERM $PPID\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}:/usr/bin:/bin", NODE_NAME="gpu07", INTERVAL="300", PUSH_DIR=str(tmp_path))
    subprocess.run(["/bin/sh", "-c", script], env=env, timeout=30)
    argv = calls.read_text().splitlines()
    cut = argv.index("--")
    assert argv[:cut] == ["--target=1", "--mount", "--uts", "--ipc", "--net", "--pid"]
    labels = "/etc/kubernetes/node-feature-discovery/features.d/rocetune"
    assert argv[cut + 1 :] == [
        "/usr/local/bin/rocetune",
        "doctor",
        "--gate",
        "health-check",
        "--no-drain",
        "--node",
        "gpu07",
        "--timeout",
        "45",
        "--nfd-features",
        labels,
        "--nfd-expiry",
        "900",
        "--push",
        str(tmp_path),
    ]
    bad = subprocess.run(
        ["/bin/sh", "-c", script], env=dict(env, NODE_NAME="gpu07;reboot"), timeout=30, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "bad NODE_NAME" in bad.stderr

    mine = [a if a != labels else str(tmp_path / "rocetune") for a in argv[cut + 2 :]]
    proc = rocetune(*mine, "--root", str(FIXTURE), "--no-counters")
    assert proc.returncode == 0 and proc.stdout.startswith("rocetune: OK with warnings gpu07"), proc.stdout
    assert (tmp_path / "rocetune").exists() and (tmp_path / "gpu07.json").exists()
