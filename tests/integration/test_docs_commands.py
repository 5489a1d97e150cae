"""Every command of README.md, CONTRIBUTING.md and the hand-written pages of docs/ runs in a test.

A command is a line of a ```sh or ```bash block (a block that opens with `#!` or `set ` is one
script). Each is either run here as written (HERE), from a directory laid out like the
repository with a stand-in `rocetune` that adds `--root` of a fixture host and stand-ins for
what a cluster has (srun, torchrun, mpirun, kubectl, scontrol), its absolute paths moved under
the test's own directory; or it needs root, the lab, SSH hosts or a real cluster, and the test
file that runs its concrete form is named (ELSEWHERE), which must hold that form; or it is what
sets up or runs this suite (BY_HAND). A command in none of them fails, and so does an entry no
page holds. Every fenced block names its language, so no command hides in an unlabelled one.
Generated pages (docs/cli.md, docs/features.md, docs/checks/) come from the parser, the schema
and the checks' declarations, each with its own --check."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "dgx-h100-roce"
GENERATED = {"docs/cli.md", "docs/features.md"}
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
SHELL = {"sh", "bash"}
JUDGES = re.compile(r"\brocetune (--json )?(lint|doctor|qos check|fleet report)\b")  # 1: findings, 5: warnings


def pages() -> List[str]:
    docs = sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))
    return ["README.md", "CONTRIBUTING.md"] + [
        d for d in docs if d not in GENERATED and not d.startswith("docs/checks/")
    ]


def _open_quote_and_comment(text: str) -> Tuple[Optional[str], Optional[int]]:
    """The quote still open at the end of `text`, and where a trailing `# comment` starts."""
    quote, i = None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return None, i
        i += 1
    return quote, None


def split_block(body: str) -> Iterator[str]:
    if body.startswith(("#!", "set ")):
        yield body.rstrip("\n")
        return
    buf = ""
    for line in body.splitlines():
        buf = f"{buf}\n{line}" if buf else line
        quote, comment = _open_quote_and_comment(buf)
        if buf.endswith("\\") or quote:
            continue
        command = re.sub(r"\s*\\\n\s*", " ", buf[:comment] if comment is not None else buf).strip()
        buf = ""
        if command:
            yield command


def commands() -> List[Tuple[str, str]]:
    """(page, command) in page order."""
    found = []
    for page in pages():
        for lang, body in FENCE.findall((REPO / page).read_text(encoding="utf-8")):
            if lang in SHELL:
                found += [(page, c) for c in split_block(body)]
    return found


# Run here as written; the value is what runs instead where the command would rewrite this
# checkout (the generators' own --check), run the whole suite (--collect-only) or time for long
# (one round of each benchmark).
HERE: Dict[str, Optional[str]] = {
    # CONTRIBUTING.md
    ".venv/bin/pre-commit install": None,
    '.venv/bin/python -m pytest -n auto -m "not lab and not slow"': '.venv/bin/python -m pytest -m "not lab and not slow" --collect-only -q',
    '.venv/bin/python -m pytest -n auto -m "not lab"': '.venv/bin/python -m pytest -m "not lab" --collect-only -q',
    ".venv/bin/python -m pytest tests/unit": ".venv/bin/python -m pytest tests/unit --collect-only -q",
    ".venv/bin/python -m pytest -q tests/unit/rules/test_nccl_ib_hca.py": None,
    "python3 tools/cli_docs.py": "python3 tools/cli_docs.py --check",
    "python3 tools/check_docs.py": "python3 tools/check_docs.py --check",
    "python3 tools/role_docs.py": "python3 tools/role_docs.py --check",
    # README.md
    ".venv/bin/python bench/probe_vs_lstopo.py": ".venv/bin/python bench/probe_vs_lstopo.py --runs 1",
    ".venv/bin/python bench/agent_start.py": ".venv/bin/python bench/agent_start.py --runs 1",
    # docs/env-formats.md
    "mkdir -p /etc/rocetune": None,
    "rocetune probe -o /etc/rocetune/env.sh": None,
    "rocetune probe --format nccl-conf -o /etc/nccl.conf": None,
    "rocetune probe --format k8s > rocetune-env.yaml": None,
    "rocetune --json probe > node.json": None,
    "rocetune env --features node.json --format json": None,
    # docs/gate.md
    "rocetune doctor --gate prolog": None,
    "rocetune doctor --gate health-check": None,
    # docs/jobs.md, README.md, docs/env-formats.md: job scripts, with stand-in launchers
    "rocetune env --format k8s -o rocetune-env-h100.yaml": None,
    "kubectl apply -f rocetune-env-h100.yaml": None,
    # docs/fleet.md: results the nodes push
    "mkdir -p /shared/rocetune/results": None,
    "rocetune doctor --gate health-check --push /shared/rocetune/results": None,
    "rocetune doctor --metrics /var/lib/prometheus/node-exporter/rocetune.prom --push /shared/rocetune/results": None,
    "rocetune fleet report /shared/rocetune/results": None,
    # docs/jobs.md: srun's tasks each take their rank's variables
    "srun --ntasks-per-node=8 --gpus-per-node=8 examples/jobs/with_rocetune_env.sh --per-rank python train.py": None,
    # docs/lint.md
    "rocetune lint /etc/rocetune/nccl.env /etc/nccl.conf": None,
    "rocetune lint --format nccl-conf /etc/nccl.conf": None,
    "rocetune lint --qos qos.yml /etc/rocetune/nccl.env": None,
    "rocetune lint --features host.json /etc/rocetune/nccl.env": None,
    "rocetune --root host/ lint /etc/rocetune/nccl.env": None,
    "rocetune lint -v /etc/rocetune/nccl.env": None,
    "rocetune --json lint /etc/rocetune/nccl.env": None,
    # docs/ras.md
    "rocetune doctor --ras first.txt --ras second.txt": None,
    # docs/switch-qos.md
    "rocetune qos render --os sonic --ports Ethernet0,Ethernet4 -o qos.json": None,
    "rocetune qos render --os nvue --ports swp1,swp2 > roce.nvue": None,
    "rocetune qos render --os eos --platform jericho --ports Ethernet1/1": None,
    "rocetune qos render --os nxos --ports Ethernet1/1 --fabric-ports Ethernet1/49": None,
    "rocetune qos check running.json": None,
    "rocetune qos check roce.txt": None,
    "rocetune qos check run.cfg": None,
    "rocetune qos check running.json --hosts fleet/": None,
    # docs/lab.md: collecting never takes the lab lock
    "sudo .venv/bin/python -m pytest tests/lab -q": "sudo .venv/bin/python -m pytest tests/lab -q --collect-only",
}
SLOW = {
    '.venv/bin/python -m pytest -n auto -m "not lab and not slow"',
    '.venv/bin/python -m pytest -n auto -m "not lab"',
    ".venv/bin/python -m pytest tests/unit",
    ".venv/bin/python bench/probe_vs_lstopo.py",
    ".venv/bin/python bench/agent_start.py",
    "python3 tools/cli_docs.py",
    "python3 tools/check_docs.py",
}

# Need root, the lab, SSH hosts or a cluster: the test file that runs the concrete form, and
# what in it shows so.
ELSEWHERE: Dict[str, Tuple[str, str]] = {
    # README.md
    "H=tests/fixtures/hosts/dgx-h100-roce": ("tests/integration/test_readme_commands.py", "## rocetune on a host"),
    "ansible-playbook -i inventories/<site> site.yml --check --diff": ("tests/lab/test_site.py", '"--check", "--diff"'),
    "ansible-playbook -i inventories/<site> site.yml": ("tests/lab/test_site.py", '"site.yml"]'),
    'ansible-playbook -i inventories/<site> site.yml -e \'{"rocetune_serial": [1, "5%", "10%"]}\'': (
        "tests/lab/test_rollout.py",
        '"-e", json.dumps({"rocetune_serial": [1, "100%"]})',
    ),
    # docs/first-boot.md: the bundle, then site.yml by the node itself
    "mkdir -p rocetune-first-boot/inventory": ("tests/lab/test_vm_reboot.py", 'bundle / "inventory/hosts.yml"'),
    "ansible-galaxy collection build --output-path /tmp/rt .": (
        "tests/lab/test_vm_reboot.py",
        '[galaxy, "collection", "build", "--output-path"',
    ),
    "ansible-galaxy collection install /tmp/rt/rocetune-fabric-*.tar.gz -p rocetune-first-boot/collections": (
        "tests/lab/test_vm_reboot.py",
        '[galaxy, "collection", "install", str(tarball), "-p"',
    ),
    "printf -- '- name: Bring this node onto the tuned fabric\\n  ansible.builtin.import_playbook: "
    "rocetune.fabric.site\\n' > rocetune-first-boot/site.yml": (
        "tests/lab/test_vm_reboot.py",
        '"  ansible.builtin.import_playbook: rocetune.fabric.site\\n"',
    ),
    "cp -r inventories/<site>/group_vars rocetune-first-boot/inventory/": (
        "tests/lab/test_vm_reboot.py",
        'copytree(REPO / "inventories/lab/group_vars", bundle / "inventory/group_vars")',
    ),
    "PYTHONPATH=src python3 -m rocetune.agentpack --out-dir /tmp/agent --python /usr/bin/python3": (
        "tests/lab/test_vm_reboot.py",
        '"-m", "rocetune.agentpack", "--out-dir"',
    ),
    "cp /tmp/agent/rocetune-*.pyz rocetune-first-boot/rocetune.pyz": (
        "tests/lab/test_vm_reboot.py",
        'shutil.copy(packed["path"], bundle / "rocetune.pyz")',
    ),
    # docs/first-day.md: the page's commands, in order, on two fixture nodes
    **{
        c: ("tests/integration/test_first_day.py", f'"{c}"')
        for c in (
            "rocetune probe",
            "rocetune doctor --no-counters",
            "rocetune doctor --no-counters --write-expect /etc/rocetune/expect.yml",
            "rocetune doctor --gate health-check --timeout 45 --no-drain",
            "mkdir -p /shared/rocetune-fleet",
            "rocetune --json doctor -v --no-counters > /shared/rocetune-fleet/$(hostname -s).json",
            "rocetune fleet report /shared/rocetune-fleet",
            "rocetune doctor --gate health-check --timeout 45",
        )
    },
    # docs/fleet.md
    "ansible-playbook -i inventories/<site> playbooks/fleet.yml -e rocetune_fleet_dir=/var/lib/rocetune/fleet": (
        "tests/integration/test_fleet_play.py",
        '"-e", json.dumps({"rocetune_fleet_dir"',
    ),
    "rocetune fleet report /var/lib/rocetune/fleet": ("tests/integration/test_fleet_play.py", '"fleet", "report"'),
    "rocetune fleet gather gpu01 gpu02 ops@gpu03 -o /var/lib/rocetune/fleet": (
        "tests/integration/test_fleet_gather.py",
        '"fleet", "gather", "-o"',
    ),
    "rocetune fleet gather --inventory hosts.ini --limit gpu_nodes -o /var/lib/rocetune/fleet "
    "--command /usr/local/bin/rocetune": (
        "tests/integration/test_fleet_gather.py",
        '"--inventory", str(inv), "--limit"',
    ),
    "salloc -N 128 rocetune fleet gather --via srun -o /tmp/fleet": ("tests/lab/test_topology_lab.py", '"--via",'),
    "rocetune fleet gather --via srun 'gpu[001-128]' --srun-arg=--partition=gpu -o /tmp/fleet": (
        "tests/lab/test_topology_lab.py",
        '"--via",',
    ),
    "rocetune fleet topology /tmp/fleet --nodes 'gpu[001-128]' -o /etc/slurm/topology.conf": (
        "tests/lab/test_topology_lab.py",
        '"--nodes", "node[01-04]"',
    ),
    "rocetune fleet topology /tmp/fleet --switch-lldp /tmp/switches -o topology.conf": (
        "tests/unit/fleet/test_topology.py",
        "topo.uplinks_from_lldp(switch_lldp())",
    ),
    # docs/jobs.md
    "examples/jobs/gloo_allreduce.sh --python /opt/venvs/torch/bin/python gpu01 gpu02 gpu03 gpu04": (
        "tests/lab/test_vm.py",
        'f"{JOBS}/jobs/gloo_allreduce.sh --env {ENV_FILE} --python {mount}/bin/python3 "',
    ),
    'examples/jobs/gloo_allreduce.sh --node "$NODE_RANK" "$NNODES" "$MASTER_ADDR"': (
        "tests/lab/test_site.py",
        '"jobs" / "gloo_allreduce.sh"',
    ),  # the fan-out runs --node on each host
    # docs/lab.md
    "sudo python3 -m lab up 2 --systemd": ("tests/lab/test_lab.py", "lab_exclusive.up(2, systemd=True)"),
    "sudo python3 -m lab up 2 --vm": ("tests/lab/test_vm.py", '"-m", "lab", "up", "1", "--vm"'),
    "sudo python3 -m lab ssh vm01 rdma link show": ("tests/lab/test_vm.py", "rdma -j link show"),
    "ansible-playbook -i inventories/lab/vm.yml site.yml": (
        "tests/lab/test_vm_reboot.py",
        '"-i", str(inventory or netns.VM_INVENTORY), "site.yml"',
    ),
    "rocetune-softroce up rxe0=ens4 rxe1=ens5": ("tests/lab/test_vm.py", '"rocetune-softroce up rxe0=ens4 rxe1=ens5"'),
    "mkdir -p /opt/rocetune-lab-torch && mount -o ro /dev/disk/by-id/virtio-rtvtorch /opt/rocetune-lab-torch": (
        "tests/lab/test_vm.py",
        "mount -o ro {dev} {mount}",
    ),
    "/opt/rocetune-lab-torch/bin/python3 -c 'import torch; print(torch.__version__)'": (
        "tests/lab/test_vm.py",
        "--python {mount}/bin/python3",
    ),
    # docs/ras.md
    "rocetune doctor --ras-addr localhost:28028": ("tests/integration/test_doctor_ras.py", '"--ras-addr"'),
    # docs/rollout.md
    'ansible-playbook -i inventories/<site> site.yml -e \'{"rocetune_serial": [1, "5%", "10%"],\n'
    '  "rocetune_batch_pre_tasks": "hooks/slurm_drain.yml", "rocetune_batch_post_tasks": '
    '"hooks/slurm_resume.yml",\n  "rocetune_slurm_controller": "slurm-head01"}\'': (
        "tests/lab/test_slurm_rollout.py",
        '"rocetune_batch_pre_tasks": "hooks/slurm_drain.yml"',
    ),
    # docs/switch-qos.md
    "ansible-playbook -i inventories/example playbooks/switch_qos.yml --check --diff": (
        "tests/integration/test_switch_qos_play.py",
        'play(site, "--check", "--diff")',
    ),
    "ansible-playbook -i inventories/example playbooks/switch_qos.yml": (
        "tests/integration/test_switch_qos_play.py",
        'play(site, "--diff")',
    ),
    # CONTRIBUTING.md: the hooks' ruff and mypy, with the same settings
    ".venv/bin/pre-commit run --all-files": ("tests/integration/test_contributor_contract.py", '"-m", "mypy"'),
}

# What scripts/test.sh (CI, .ci/run) runs around pytest: the machine's setup first, the demo last
# (it holds the lab lock for its whole run, so it cannot run inside a pytest session's lab).
ELSEWHERE["./scripts/bootstrap.sh"] = ("scripts/test.sh", "./scripts/bootstrap.sh\n")
ELSEWHERE["sudo ./scripts/demo.sh"] = ("scripts/test.sh", "./scripts/demo.sh || status=$?")

# What runs this suite, installs by hand, and the lab benchmarks: not run under pytest.
BY_HAND: Dict[str, str] = {
    "sudo ./scripts/test.sh": "runs this suite (CI)",
    "python3 -m venv --system-site-packages .venv && .venv/bin/pip install -e '.[dev]'": "the package index",
    ".venv/bin/python bench/ansible_converge.py": "a 16-host lab for minutes",
    ".venv/bin/python bench/probe_scale_vs_lstopo.py": "every fixture host, timed",
}
for _line in (
    "probe --root $H",
    "topo  --root $H",
    "env   --root $H",
    "explain --root $H NCCL_IB_HCA",
    "env --root $H -o /tmp/nccl.env && .venv/bin/rocetune lint --root $H /tmp/nccl.env",
    "doctor --root $H",
    "doctor --root tests/fixtures/hosts/softroce-3nic --nccl-log tests/fixtures/nccl-logs/rxe-2.20.5-ring2_node0.log",
    "capture -o host.tar.gz",
):
    ELSEWHERE[f".venv/bin/rocetune {_line}"] = ("tests/integration/test_readme_commands.py", "## rocetune on a host")

# docs/lab.md's namespace lab, run as written by the lab-marked test below (root, the lab lock).
LAB = [
    "sudo python3 -m lab up 4",
    "ansible lab -m ansible.builtin.ping",
    "sudo python3 -m lab ssh node02 ip -br addr",
    "sudo python3 -m lab status",
    "sudo python3 -m lab pid node02",
    "sudo python3 -m lab down",
]
LAB_ELSEWHERE = {
    "sudo python3 -m lab deps --systemd": ("tests/lab/test_lab.py", "lab_exclusive.up(2, systemd=True)"),
    "sudo python3 -m lab deps --vm": ("tests/lab/test_vm.py", '"-m", "lab", "up", "1", "--vm"'),
}
ELSEWHERE.update(LAB_ELSEWHERE)


def test_every_fenced_block_names_its_language():
    bare = [
        f"{page}:{text[: m.start()].count(chr(10)) + 1}"
        for page in pages()
        for text in [(REPO / page).read_text(encoding="utf-8")]
        for m in FENCE.finditer(text)
        if not m.group(1)
    ]
    assert bare == [], "say ```sh for commands, ```text for the rest"


def test_every_command_is_run_by_a_test():
    found = {c for _, c in commands() if not _script(c)}
    tables = set(HERE) | set(ELSEWHERE) | set(BY_HAND) | set(LAB)
    assert sorted(found - tables) == [], "a command no test runs: add it to a table, or fix the page"
    assert sorted(tables - found) == [], "an entry no page holds any more"
    assert not (set(HERE) & set(ELSEWHERE)) and not (set(HERE) & set(BY_HAND))


@pytest.mark.parametrize("command", sorted(ELSEWHERE))
def test_the_named_test_runs_it(command):
    path, form = ELSEWHERE[command]
    assert form in (REPO / path).read_text(encoding="utf-8"), (command, path)


def test_what_is_left_to_hand_exists_and_test_sh_sets_up_first():
    """scripts/test.sh (what CI runs, .ci/run) runs bootstrap.sh, then the suite, then the demo;
    the scripts left to hand are there, and demo.sh parses."""
    test_sh = (REPO / "scripts/test.sh").read_text()
    steps = ("./scripts/bootstrap.sh\n", '"${PYTEST[@]}" -n auto -m "not lab"', '"${PYTEST[@]}" -m lab', "./scripts/demo.sh ||")
    order = [test_sh.index(step) for step in steps]
    assert order == sorted(order)
    for script in (
        "scripts/demo.sh",
        "scripts/bootstrap.sh",
        "bench/ansible_converge.py",
        "bench/probe_scale_vs_lstopo.py",
    ):
        assert (REPO / script).is_file(), script
    proc = subprocess.run(["bash", "-n", str(REPO / "scripts/demo.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------------------------------
# Running HERE's commands

TRAIN = """import os, sys
keys = [k for k in sorted(os.environ) if k.startswith(("NCCL_", "UCX_", "GLOO_"))]
print("train.py", *(f"{k}={os.environ[k]}" for k in keys))
"""
STANDINS = {
    # The node: rocetune on a fixture host, and its name.
    "rocetune": f"""#!{sys.executable}
import os, sys
root = [] if {{"--root", "--features"}} & set(sys.argv) else ["--root", os.environ["ROCETUNE_TEST_ROOT"]]
gate = ["--scontrol", os.path.join(os.path.dirname(__file__), "scontrol")] if "--gate" in sys.argv else []
os.execv(sys.executable, [sys.executable, "-m", "rocetune", *root, *sys.argv[1:], *gate])
""",
    "python3": f'#!/bin/sh\nexec {sys.executable} "$@"\n',
    "python": f'#!/bin/sh\nexec {sys.executable} "$@"\n',
    "sudo": '#!/bin/sh\nexec "$@"\n',
    "hostname": "#!/bin/sh\necho gpu01\n",
    # Slurm on one node: srun runs the command once as task 0.
    "scontrol": '#!/bin/sh\n[ "$1 $2" = "show hostnames" ] && echo gpu01\n'
    '[ "$1 $2" = "show node" ] && printf "NodeName=gpu01\\n   State=IDLE\\n"\nexit 0\n',
    "srun": '#!/bin/sh\nwhile [ "${1#-}" != "$1" ]; do shift; done\n'
    'SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NNODES=1 exec "$@"\n',
    # torchrun starts its script as rank 0; mpirun its program as rank 0, exporting -x names.
    "torchrun": '#!/bin/sh\nfor a; do case "$a" in *.py) exec python3 "$a";; esac; done\nexit 2\n',
    "mpirun": f"""#!{sys.executable}
import os, sys
args, names = sys.argv[1:], []
while args and args[0].startswith("-"):
    opt = args.pop(0)
    value = args.pop(0)
    if opt == "-x":
        names.append(value)
print("mpirun -x", *names)
os.environ["OMPI_COMM_WORLD_LOCAL_RANK"] = "0"
os.execvp(args[0], args)
""",
    # numactl binds to the CPUs it is given (and there must be some), then runs the command.
    "numactl": '#!/bin/sh\n[ "$1" = -C ] && [ -n "$2" ] || exit 1\necho "numactl -C $2"\nshift 2\n[ $# = 0 ] || exec "$@"\n',
    # kubectl takes what the API server would: one ConfigMap with string data.
    "kubectl": f"""#!{sys.executable}
import sys, yaml
assert sys.argv[1:3] == ["apply", "-f"], sys.argv
doc = yaml.safe_load(open(sys.argv[3]))
assert doc["kind"] == "ConfigMap" and all(isinstance(v, str) for v in doc["data"].values()), doc
print("configmap/" + doc["metadata"]["name"], "created")
""",
}


def _rocetune(*args: str, out: Optional[Path] = None) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rocetune", "--root", str(HOST), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        timeout=300,
    )
    assert proc.returncode in (0, 1, 5), proc.stderr
    if out:
        out.write_text(proc.stdout)


class Sandbox:
    """A directory laid out like the repository (its entries linked), absolute paths under abs/."""

    def __init__(self, tmp: Path):
        self.cwd, self.abs, self.bin = tmp / "repo", tmp / "abs", tmp / "bin"
        self.node = tmp / "node"  # doctor keeps its counter readings under the root: a copy
        shutil.copytree(HOST, self.node, symlinks=True)
        for d in (
            self.cwd,
            self.bin,
            *(self.abs / p for p in ("etc", "var/lib/prometheus/node-exporter", "tmp", "shared", "opt")),
        ):
            d.mkdir(parents=True)
        for entry in REPO.iterdir():
            if entry.name not in (".git", "examples"):
                (self.cwd / entry.name).symlink_to(entry)
        for path in (REPO / "examples").rglob("*"):  # the job scripts' own absolute paths moved too
            copy = self.cwd / path.relative_to(REPO)
            if path.is_dir():
                copy.mkdir(parents=True, exist_ok=True)
            else:
                copy.write_text(self.moved(path.read_text(encoding="utf-8")))
                copy.chmod(path.stat().st_mode)
        for name, text in STANDINS.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        (self.cwd / "train.py").write_text(TRAIN)

    def stage(self) -> None:
        """The files the pages' commands read: a node's env files, saved probes, a QoS plan,
        recorded switch and ncclras outputs, an unpacked capture."""
        etc = self.abs / "etc"
        (etc / "rocetune").mkdir()
        _rocetune("env", "-o", str(etc / "rocetune/nccl.env"))
        _rocetune("env", "--format", "nccl-conf", "-o", str(etc / "nccl.conf"))
        _rocetune("--json", "probe", out=self.cwd / "host.json")
        shutil.copy(self.cwd / "host.json", etc / "rocetune/features.json")
        shutil.copytree(HOST, self.cwd / "host", symlinks=True)
        shutil.copy(REPO / "examples/qos/h100-roce.yml", self.cwd / "qos.yml")
        fixtures = REPO / "tests/fixtures"
        shutil.copy(fixtures / "switch/sonic-utilities-qos-tables-3_0_3.json", self.cwd / "running.json")
        shutil.copy(fixtures / "switch/nvue-show-qos-roce.txt", self.cwd / "roce.txt")
        shutil.copy(fixtures / "switch/eos-avd-qos.cfg", self.cwd / "run.cfg")
        (self.cwd / "fleet").mkdir()
        _rocetune("--json", "doctor", "-v", "--no-counters", out=self.cwd / "fleet/gpu01.json")
        shutil.copy(fixtures / "ncclras/docs-2.31.2-status-incomplete.txt", self.cwd / "first.txt")
        shutil.copy(fixtures / "ncclras/docs-2.31.2-status-dead.txt", self.cwd / "second.txt")
        (self.cwd / "hosts").write_text("gpu01 slots=8\n")

    def moved(self, text: str) -> str:
        return re.sub(r"(?<![\w.~/-])/(etc|var/lib|tmp|shared|opt)/", lambda m: f"{self.abs}/{m.group(1)}/", text)

    def run(self, command: str) -> subprocess.CompletedProcess:
        line = self.moved(command)
        env = dict(
            os.environ,
            PATH=f"{self.bin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            PYTHONPATH=str(REPO / "src"),
            NNODES="1",
            NODE_RANK="0",
            LOCAL_RANK="0",
            MASTER_ADDR="127.0.0.1",
            SLURM_LOCALID="0",
            ROCETUNE_TEST_ROOT=str(self.node),
            SLURM_JOB_NODELIST="gpu01",
            SLURMD_NODENAME="gpu01",
        )
        return subprocess.run(["bash", "-c", line], cwd=self.cwd, capture_output=True, text=True, env=env, timeout=600)


def _script(command: str) -> bool:
    """A whole block: a job script, run here with the stand-in launchers."""
    return command.startswith(("#!", "set "))


def _here(slow: bool) -> List[Tuple[str, str]]:
    return [
        (page, c) for page, c in commands() if (c in HERE or _script(c)) and (c in SLOW) == slow and c not in ELSEWHERE
    ]


def _run_all(tmp_path: Path, slow: bool) -> None:
    box = Sandbox(tmp_path)
    box.stage()
    if not slow:
        subprocess.run(["git", "init", "-q", str(box.cwd)], check=True)  # pre-commit install writes its hook there
    failed = []
    for page, command in _here(slow):
        proc = box.run(HERE.get(command) or command)
        said = proc.stdout + proc.stderr
        codes = (0, 1, 5) if JUDGES.search(command) else (0,)
        if proc.returncode not in codes or "Traceback (most recent call last)" in proc.stderr:
            failed.append(f"{page}: {command!r} exited {proc.returncode}:\n{said[-1500:]}")
        elif "train.py" in command and not re.search(r"^train\.py .*NCCL_IB_HCA==?mlx5_", proc.stdout, re.M):
            failed.append(f"{page}: {command!r}: the job did not get the node's env:\n{said[-1500:]}")
    assert failed == [], "\n\n".join(failed)


@pytest.mark.slow  # some forty rocetune runs over an 8-rail host
def test_the_pages_commands_run_here(tmp_path):
    _run_all(tmp_path, slow=False)


@pytest.mark.slow  # the suite collected three times, two benchmarks, two generators
def test_the_pages_long_commands_run_here(tmp_path):
    _run_all(tmp_path, slow=True)


@pytest.mark.lab
def test_the_lab_pages_commands_run_as_written(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (network namespaces, overlay mounts, one sshd per host)")
    (tmp_path / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    (tmp_path / "sudo").chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    said = {}
    try:
        for command in LAB:
            proc = subprocess.run(
                ["bash", "-c", command], cwd=REPO, capture_output=True, text=True, env=env, timeout=600
            )
            assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
            said[command] = proc.stdout
    finally:
        subprocess.run([sys.executable, "-m", "lab", "down"], cwd=REPO, capture_output=True, timeout=600)
    assert said["ansible lab -m ansible.builtin.ping"].count("SUCCESS") == 4
    assert "rtl0" in said["sudo python3 -m lab ssh node02 ip -br addr"]
    assert all(f"node0{i}" in said["sudo python3 -m lab status"] for i in range(1, 5))
    assert said["sudo python3 -m lab pid node02"].strip().isdigit()


def _options(parser) -> Dict[str, set]:
    """Each verb (and `verb action`) with the options it takes, the common ones included."""
    from rocetune.cli.main import _sub_parsers

    top = set(parser._option_string_actions)
    found = {}
    for verb, verb_parser in _sub_parsers(parser).items():
        found[verb] = top | set(verb_parser._option_string_actions)
        for action, action_parser in _sub_parsers(verb_parser).items():
            found[f"{verb} {action}"] = found[verb] | set(action_parser._option_string_actions)
    return found


def test_every_rocetune_command_in_the_pages_text_names_a_verb_and_options_it_has():
    """The commands quoted in the text (`rocetune VERB --option ...`), not only the blocks."""
    from rocetune.cli.main import build_parser

    known = _options(build_parser())
    wrong, seen = [], 0
    for page in pages():
        for quoted in re.findall(r"`(rocetune [^`]+)`", (REPO / page).read_text(encoding="utf-8")):
            words = [w for w in quoted.split()[1:] if w not in ("--json", "-v", "-q", "--debug")]
            if not words or words[0].startswith("-"):
                continue
            verb = " ".join(words[:2]) if " ".join(words[:2]) in known else words[0]
            if verb not in known:
                wrong.append(f"{page}: `{quoted}`: no verb {words[0]}")
                continue
            seen += 1
            wrong += [
                f"{page}: `{quoted}`: {verb} has no {o}"
                for o in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", quoted)
                if o not in known[verb]
            ]
    assert seen > 100 and wrong == [], "\n".join(wrong)
