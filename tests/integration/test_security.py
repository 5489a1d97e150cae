"""The CLI against what others control: directories other users own, bytes a node or a file
supplies for the terminal, inputs that are not regular files, documents made to exhaust memory.
One line on stderr with the documented exit code, never a hang, never a raw control byte."""

from __future__ import annotations

import os

import pytest

from .clirun import no_traceback, rocetune

USER = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="what root writes: needs root")


def _dir(tmp_path, name: str, mode: int, uid: int = 0):
    d = tmp_path / name
    d.mkdir()
    os.chown(d, uid, 0)
    os.chmod(d, mode)
    return d


@root_only
def test_gather_out_into_another_users_directory_is_refused_before_any_host(tmp_path):
    theirs = _dir(tmp_path, "theirs", 0o755, uid=USER)
    for out in (theirs, theirs / "new"):
        proc = rocetune("fleet", "gather", "-o", str(out), "127.0.0.1", "--port", "9", "--timeout", "2")
        assert proc.returncode == 4 and no_traceback(proc), proc.stderr
        assert proc.stderr.startswith(f"rocetune: error: cannot write {out}"), proc.stderr
        assert f"belongs to uid {USER}" in proc.stderr
    assert os.listdir(theirs) == []


# --- what a node or a file supplies reaches the terminal as visible escapes -----------------------

EVIL = "e\x1b]0;owned\x07vil\x1b[2K\x9b1A\u202egnp.exe\u2066"
RAW = [b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode(), "\u2066".encode()]


def _no_raw_controls(data: bytes) -> None:
    for raw in RAW:
        assert raw not in data, (raw, data[:2000])


@pytest.fixture(scope="module")
def evil_root(tmp_path_factory):
    import shutil

    from tests.fixtures.roots import root_of

    root = tmp_path_factory.mktemp("evil") / "R"
    shutil.copytree(root_of("pcie-4gpu-2nic"), root, symlinks=True)
    (root / "proc/sys/kernel/hostname").write_text(EVIL + "\n")
    (root / "proc/sys/kernel/osrelease").write_text("6.5.0" + EVIL + "\n")
    (root / "sys/class/infiniband/mlx5_0/ports/1/rate").write_text("200 Gb/sec " + EVIL + "\n")
    return str(root)


def _run_bytes(*args: str, env=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "rocetune", *args], capture_output=True, timeout=120, env=env)


def test_probe_text_shows_a_hostile_hostname_kernel_and_rate_escaped(evil_root):
    proc = _run_bytes("probe", "--root", evil_root)
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stdout)
    _no_raw_controls(proc.stderr)
    assert b"e\\x1b]0;owned\\x07vil" in proc.stdout and b"\\u202egnp.exe" in proc.stdout


def test_json_escapes_c1_controls_and_bidi_overrides(evil_root):
    import json

    proc = _run_bytes("--json", "probe", "--root", evil_root)
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stdout)
    doc = json.loads(proc.stdout)
    assert doc["data"]["features"]["host"]["hostname"] == EVIL  # the value itself, escaped in transit


def test_fleet_report_shows_a_hostile_result_escaped(tmp_path):
    import json

    (tmp_path / "gpu01.json").write_text(json.dumps({"schema": "rocetune.fleet-host/1", "host": "gpu01",
                                                      "error": "ssh: " + EVIL + "\n  gpu02  ok"}))
    for args in (["fleet", "report", str(tmp_path)], ["--json", "fleet", "report", str(tmp_path)]):
        proc = _run_bytes(*args)
        assert proc.returncode == 1, proc.stderr
        _no_raw_controls(proc.stdout)
        assert b"\n  gpu02  ok" not in proc.stdout  # a node cannot add a line of its own


def test_the_one_emitter_escapes_every_renderers_text(capsys):
    """Every verb's human text, warnings and errors leave through cli.main._emit."""
    from rocetune.cli.main import _emit
    from rocetune.cli.result import Result

    bad = "".join(chr(c) for c in list(range(0, 32)) + list(range(0x7f, 0xa0))) + "\u061c\u200e\u200f\u202a\u202b" \
        "\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    _emit(Result("x", human=f"line {bad}\n\tnext\n", warnings=[bad], errors=[{"message": bad, "hint": bad}]),
          as_json=False, quiet=False)
    out, err = capsys.readouterr()
    assert out.startswith("line \\x00") and out.endswith("\n\tnext\n")  # layout's own \n and \t kept
    assert {ch for ch in out if ch in bad} == {"\n", "\t"}, repr(out)
    assert {ch for ch in err if ch in bad} == {"\n"} and len(err.splitlines()) == 3, repr(err)
    _emit(Result("x", data={"v": bad}), as_json=True, quiet=False)
    out, _ = capsys.readouterr()
    assert not [ch for ch in out if ch in bad and ch != "\n"], repr(out)


def test_a_nodes_stderr_cannot_rewrite_the_gather_lines(tmp_path):
    """A node's stderr, quoted in its FAILED line, moved the cursor and printed `spoof  ok`."""
    import paramiko

    from .sshserver import SSHServer, fake_rocetune

    host_key, client_key = paramiko.RSAKey.generate(2048), paramiko.RSAKey.generate(2048)
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    fake_rocetune(bin_dir, body="printf 'x\\033[1A\\033[2K\\302\\233A  gpu01  ok\\342\\200\\256\\n' >&2\nexit 127\n")
    (home / ".ssh").mkdir(parents=True)
    identity = tmp_path / "id"
    client_key.write_private_key_file(str(identity))
    srv = SSHServer(host_key, client_key, bin_dir)
    try:
        (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{srv.port} {host_key.get_name()} "
                                                   f"{host_key.get_base64()}\n")
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(home)
        proc = _run_bytes("fleet", "gather", "-o", str(tmp_path / "out"), "--identity", str(identity),
                          "--port", str(srv.port), "127.0.0.1", env=env)
    finally:
        srv.close()
    assert proc.returncode == 1, proc.stderr
    _no_raw_controls(proc.stdout)
    assert b"FAILED: " in proc.stdout and b"\\x1b[1A\\x1b[2K\\x9bA  gpu01  ok\\u202e" in proc.stdout


# --- inputs: regular files only, never blocking, capped; results only from root or the user -----

def _timed(*args: str, timeout: float = 15):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "rocetune", *args], capture_output=True, text=True,
                          timeout=timeout)


def _input_error(proc, *words: str) -> None:
    assert no_traceback(proc), proc.stderr
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("rocetune: error: ")]
    assert len(errors) == 1, proc.stderr
    for w in words:
        assert w in errors[0], errors[0]


@pytest.fixture
def not_files(tmp_path):
    """A FIFO (a reader that blocks hangs) and a link to /dev/zero (a reader that reads whole
    runs out of memory), where an input file is expected."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "input.zero"
    os.symlink("/dev/zero", zero)
    return {"FIFO": str(fifo), "character device": str(zero)}


OPERATOR_INPUTS = [
    ["env", "--features", "{}"],
    ["env", "--qos", "{}"],
    ["env", "--config", "{}"],
    ["explain", "--env", "{}"],
    ["doctor", "--nccl-log", "{}"],
    ["qos", "check", "--switch", "{}"],
    ["qos", "render", "--switch", "sonic", "--plan", "{}"],
    ["fleet", "report", "{dir}", "--manifest", "{}"],
    ["fleet", "validate", "--tests", "nccl", "--nccl-baseline", "{}", "127.0.0.1"],
]


@pytest.mark.parametrize("args", OPERATOR_INPUTS, ids=lambda a: " ".join(a[:2]))
def test_an_input_that_is_no_regular_file_is_refused_at_once(tmp_path, not_files, args):
    from tests.fixtures.roots import root_of

    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    (results / "h1.json").write_text("{}")
    for kind, path in not_files.items():
        argv = [a.replace("{}", path).replace("{dir}", str(results)) for a in args]
        proc = _timed(*argv, "--root", root_of("pcie-4gpu-2nic"))
        _input_error(proc, path, kind)


def test_lint_names_an_input_that_is_no_regular_file(tmp_path, not_files):
    (tmp_path / "nccl.conf").write_text("NCCL_DEBUG=WARN\n")
    proc = _timed("lint", str(tmp_path / "nccl.conf"), *not_files.values())
    assert proc.returncode == 1 and no_traceback(proc), proc.stderr
    assert proc.stdout.count("unreadable-file") == 2 and "a FIFO" in proc.stdout
    assert "a character device" in proc.stdout


def _result(host: str) -> str:
    import json

    return json.dumps({"schema": "rocetune.fleet-host/1", "host": host, "error": "gather failed here"})


@pytest.mark.parametrize("verb", ["report", "qos"])
def test_a_results_directory_others_wrote_in_is_read_with_care(tmp_path, verb):
    from tests.fixtures.roots import root_of

    d = tmp_path / "results"
    d.mkdir()
    (d / "good.json").write_text(_result("good"))
    os.mkfifo(d / "fifo.json")
    os.symlink("/dev/zero", d / "zero.json")
    secret = tmp_path / "secret.json"
    secret.write_text('{"schema": "rocetune.fleet-host/1", "error": "ROOT-ONLY-SECRET"}')
    secret.chmod(0o600)
    os.symlink(secret, d / "link.json")
    if os.geteuid() == 0:
        (d / "theirs.json").write_text(_result("theirs"))
        os.chown(d / "theirs.json", USER, USER)
    if verb == "report":
        proc = _timed("--json", "fleet", "report", str(d))
    else:
        proc = _timed("--json", "qos", "check", "--switch", root_of("pcie-4gpu-2nic") + "/../../switch/"
                      "sonic-qos-arista7050.json", "--hosts", str(d))
    assert no_traceback(proc) and "ROOT-ONLY-SECRET" not in proc.stdout + proc.stderr, proc.stderr
    out = proc.stdout
    assert "fifo" in out and "a FIFO" in out, out[:3000]
    assert "a symbolic link" in out
    if os.geteuid() == 0:
        assert f"owned by uid {USER}" in out


def test_a_node_result_made_to_exhaust_memory_is_refused_before_parsing(tmp_path):
    """Result files amplify about 70 times when parsed: values are counted before any is built."""
    big = '{"schema": "rocetune.fleet-host/1", "doctor": [' + ",".join(["{}"] * 1_200_000) + "]}"
    (tmp_path / "h1.json").write_text(big)
    code, out, peak_kib = _peak_rss("--json", "fleet", "report", str(tmp_path))
    assert code == 1 and "more than 1000000 values" in out, out[:2000]
    assert peak_kib < 150 * 1024, peak_kib  # parsed, it would take ~250 MB


_PEAK = """
import sys
from rocetune.cli.main import main
code = main(sys.argv[1:])
sys.stdout.flush()
hwm = [ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
sys.stderr.write("peak-kib %s\\n" % hwm[0])
sys.exit(code)
"""


def _peak_rss(*args: str):
    """(exit code, stdout, the peak resident size in KiB of the CLI's own process: VmHWM, which
    counts nothing of the process that started it)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, timeout=120)
    peak = [ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("peak-kib ")]
    assert peak, proc.stderr
    return proc.returncode, proc.stdout, int(peak[0])


def test_a_baseline_is_read_and_written_inside_the_root_only(tmp_path):
    import shutil

    from tests.fixtures.roots import root_of

    root = tmp_path / "R"
    shutil.copytree(root_of("softroce-3nic"), root, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "var/lib").mkdir(parents=True, exist_ok=True)
    os.symlink(str(outside), root / "var/lib/rocetune")  # absolute: the host's own path, under R
    proc = _timed("doctor", "--root", str(root), "--save-baseline")
    assert no_traceback(proc) and proc.returncode in (0, 1, 5), proc.stderr
    assert os.listdir(outside) == [], "written through a link out of the root"
    assert (root / str(outside).lstrip("/") / "counters.json").is_file()
    inside = root / str(outside).lstrip("/") / "counters.json"
    inside.unlink()
    os.mkfifo(inside)  # read back: never blocks
    proc = _timed("doctor", "--root", str(root))
    _input_error(proc, "counters.json", "not a regular file")


class OneHost:
    """An SSH server on 127.0.0.1 whose `rocetune` runs `body`, a HOME for the client, and
    `gather` of that one host: the CLI's bytes and its HOST.json."""

    def __init__(self, tmp_path, body: str):
        import paramiko

        from .sshserver import SSHServer, fake_rocetune

        self.tmp = tmp_path
        self.host_key, client_key = paramiko.RSAKey.generate(2048), paramiko.RSAKey.generate(2048)
        bin_dir, self.home = tmp_path / "bin", tmp_path / "home"
        fake_rocetune(bin_dir, body=body)
        (self.home / ".ssh").mkdir(parents=True)
        self.identity = tmp_path / "id"
        client_key.write_private_key_file(str(self.identity))
        self.server = SSHServer(self.host_key, client_key, bin_dir)
        self.port = self.server.port
        self.known_hosts = self.home / ".ssh" / "known_hosts"

    @property
    def key_line(self) -> str:
        return f"{self.host_key.get_name()} {self.host_key.get_base64()}"

    def trust(self, *extra_lines: str) -> None:
        self.known_hosts.write_text("".join(ln + "\n" for ln in extra_lines)
                                    + f"[127.0.0.1]:{self.port} {self.key_line}\n")

    def gather(self, *args: str, host: str = "127.0.0.1"):
        import json

        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(self.home)
        out = self.tmp / "out"
        port = () if host != "127.0.0.1" else ("--port", str(self.port))
        proc = _run_bytes("fleet", "gather", "-o", str(out), "--identity", str(self.identity), *port, *args,
                          host, env=env)
        path = out / f"{host}.json"
        return proc, (json.loads(path.read_text()) if path.exists() else None)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def one_host(tmp_path):
    hosts = []

    def start(body: str = "exit 3\n") -> OneHost:
        hosts.append(OneHost(tmp_path, body))
        return hosts[-1]

    yield start
    for h in hosts:
        h.close()


def _one_server_gather(tmp_path, body: str):
    h = OneHost(tmp_path, body)
    try:
        h.trust()
        return h.gather()
    finally:
        h.close()


def test_a_node_cannot_make_gather_parse_a_document_of_millions_of_values(tmp_path):
    flood = tmp_path / "flood.json"
    flood.write_text('{"schema": "rocetune.result/1", "status": "ok", "data": {"x": ['
                     + ",".join(["{}"] * 1_200_000) + "]}}\n")
    proc, doc = _one_server_gather(tmp_path, f"cat {flood}\n")
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    assert "more than 1000000 values" in doc["error"] and doc["doctor"] is None


def test_an_ofed_repository_url_with_a_trailing_newline_is_refused(tmp_path):
    """The role's URL check matched `^...$`: "URL\\n" passed, and its apt line ended early. Only
    the check itself runs here (the next task writes /etc/apt)."""
    import yaml

    from tests.integration.test_ansible_static import REPO

    from .test_role_hostile_values import playbook

    tasks = yaml.safe_load((REPO / "roles" / "rdma_core" / "tasks" / "ofed_repo.yml").read_text())
    check = [t for t in tasks if t.get("name") == "Check the OFED repository URL is one URL"]
    assert len(check) == 1
    for url, refused in (("http://mirror.example/ofed", False), ("http://mirror.example/ofed\n", True)):
        proc = playbook(tmp_path, [dict(check[0], vars={"rdma_core_ofed_repo_url": url})])
        assert (proc.returncode != 0) == refused, proc.stdout
    assert 'rdma_core_ofed_repo_url: "http://mirror.example/ofed\\n" is not one http(s), ftp or file URL' \
        in proc.stdout, proc.stdout


# --- SSH: known_hosts as OpenSSH reads it, and no command of another user's config run as root -----

ENVELOPE = '{"schema": "rocetune.result/1", "status": "ok", "data": {"x": 1}}'


def test_marker_lines_in_known_hosts_are_skipped_and_the_host_is_known(one_host):
    import paramiko

    h = one_host(f"echo '{ENVELOPE}'\n")
    other = paramiko.RSAKey.generate(1024)
    h.trust(f"@cert-authority *.example.com {other.get_name()} {other.get_base64()}",
            f"@revoked old.example.com {other.get_name()} {other.get_base64()}",
            "# a comment", "")
    proc, doc = h.gather()
    assert proc.returncode == 0 and doc["error"] is None, (proc.stdout, doc)


def test_a_revoked_host_key_is_refused_even_with_accept_new(one_host):
    h = one_host(f"echo '{ENVELOPE}'\n")
    h.trust(f"@revoked * {h.key_line}")  # listed, and revoked
    for extra in ((), ("--accept-new",)):
        proc, doc = h.gather(*extra)
        assert proc.returncode == 1, proc.stdout
        assert "REVOKED" in doc["error"] and "refused" in doc["error"], doc["error"]
    assert h.known_hosts.read_text().count(h.host_key.get_base64()) == 2  # never added again


def test_the_systems_known_hosts_is_read(one_host, monkeypatch, tmp_path):
    """/etc/ssh/ssh_known_hosts (fleet.ssh.SYSTEM_KNOWN_HOSTS) holds the fleet's keys at many sites."""
    from rocetune.fleet import gather, ssh, targets

    h = one_host(f"echo '{ENVELOPE}'\n")
    system = tmp_path / "ssh_known_hosts"
    system.write_text(f"[127.0.0.1]:{h.port} {h.key_line}\n")
    monkeypatch.setattr(ssh, "SYSTEM_KNOWN_HOSTS", str(system))
    monkeypatch.setenv("HOME", str(h.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    found = [targets.Target("127.0.0.1", "127.0.0.1", port=h.port, user="u", identities=[str(h.identity)])]
    out = tmp_path / "out"
    out.mkdir()
    outcomes = gather.gather(found, str(out), gather.Options(timeout=20))
    assert outcomes[0].error is None, outcomes[0].error


@pytest.mark.skipif(os.geteuid() != 0, reason="root reading another user's ssh config: needs root")
def test_match_exec_of_another_users_ssh_config_is_not_run_as_root(one_host, tmp_path):
    h = one_host(f"echo '{ENVELOPE}'\n")
    h.trust()
    marker = tmp_path / "ran-as-root"
    config = h.home / ".ssh" / "config"
    config.write_text(f'Match exec "touch {marker}"\n  User attacker\n'
                      f"Host gpu01\n  HostName 127.0.0.1\n  Port {h.port}\n")
    os.chown(config, USER, USER)  # sudo -E: HOME is the user's, the process is root
    proc, doc = h.gather(host="gpu01")
    assert not marker.exists(), "the user's Match exec ran as root"
    assert proc.returncode == 0 and doc["error"] is None, (proc.stdout, proc.stderr, doc)
    assert b"Match exec" in proc.stderr and b"not run" in proc.stderr
    os.chown(config, 0, 0)  # root's own config: its Match exec is root's to run
    proc, doc = h.gather(host="gpu01")
    assert marker.exists()


# --- NaN: not JSON, and no number a rule can compare -------------------------------------------

def _strict_json(text: str):
    import json

    def refuse(name):
        raise AssertionError(f"{name} printed as JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_node_result_with_nan_fails_that_host_and_json_output_stays_json(tmp_path):
    import json

    from tests.fixtures.roots import root_of

    features = _strict_json(_run_bytes("--json", "probe", "--root", root_of("pcie-4gpu-2nic")).stdout)["data"]["features"]
    doc = {"schema": "rocetune.fleet-host/1", "host": "gpu01", "doctor": {"features": features}}
    good = json.dumps(doc)
    (tmp_path / "gpu02.json").write_text(good.replace('"gpu01"', '"gpu02"'))
    features["host"]["cpus"] = float("nan")  # json.dumps writes NaN, as a hostile node would
    (tmp_path / "gpu01.json").write_text(json.dumps(doc))
    assert "NaN" in (tmp_path / "gpu01.json").read_text()
    proc = _run_bytes("--json", "fleet", "report", str(tmp_path))
    out = _strict_json(proc.stdout.decode())
    assert proc.returncode == 1
    failed = {h["host"]: h.get("error") for h in out["data"]["hosts"]}
    assert "NaN is not a JSON number" in str(failed["gpu01"]), failed


def test_the_schema_refuses_numbers_that_are_not_finite():
    import copy
    import json

    from rocetune.model.schema import check
    from tests.fixtures.roots import root_of

    features = json.loads(_run_bytes("--json", "probe", "--root", root_of("softroce-3nic")).stdout)["data"]["features"]
    assert check(features) is None
    number_paths = []

    def walk(node, path):  # every float the document holds
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + [i])
        elif isinstance(node, float):
            number_paths.append(path)

    walk(features, [])
    assert number_paths, "no float field to try"
    for bad in (float("nan"), float("inf"), float("-inf")):
        doc = copy.deepcopy(features)
        node = doc
        for key in number_paths[0][:-1]:
            node = node[key]
        node[number_paths[0][-1]] = bad
        assert check(doc) is not None, (number_paths[0], bad)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf"])
def test_yaml_inputs_refuse_nan_and_infinity(tmp_path, value):
    (tmp_path / "h1.json").write_text(_result("h1"))
    manifest = tmp_path / "manifest.yml"
    manifest.write_text(f"link:\n  rate_gbps: {value}\n")
    proc = _timed("fleet", "report", str(tmp_path), "--manifest", str(manifest))
    _input_error(proc, "--manifest", f"line 2: {value} is not a number rocetune reads")


# --- exit 3 where docs/cli.md says 3: never 70 for what an input holds ---------------------------

SWITCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "switch",
                      "sonic-qos-arista7050.json")


@pytest.mark.parametrize("name", [["AZURE"], {"AZURE": 1}, 7])
@pytest.mark.parametrize("field", ["dscp_to_tc_map", "tc_to_queue_map"])
def test_a_sonic_map_reference_that_is_no_name_is_an_input_error(tmp_path, field, name):
    import json

    with open(SWITCH) as fh:
        doc = json.load(fh)
    for binding in doc["PORT_QOS_MAP"].values():
        binding[field] = name
    bad = tmp_path / "config_db.json"
    bad.write_text(json.dumps(doc))
    proc = _timed("qos", "check", "--switch", str(bad))
    _input_error(proc, str(bad), "PORT_QOS_MAP")


def test_explain_env_of_a_file_that_is_not_utf8_is_an_input_error(tmp_path):
    env = tmp_path / "env.sh"
    env.write_bytes(b"# rocetune\nexport NCCL_SOCKET_IFNAME=\xff\xfe\n")
    _input_error(_timed("explain", "--env", str(env)), str(env), "not UTF-8 text")


def test_a_result_file_whose_name_is_not_utf8_is_a_failed_host_in_every_output(tmp_path):
    import json

    d = tmp_path / "results"
    d.mkdir()
    (d / "good.json").write_text(_result("good"))
    with open(os.path.join(os.fsencode(d), b"gpu\xff01.json"), "w") as fh:
        fh.write(_result("gpu01"))
    page = tmp_path / "report.html"
    proc = _timed("--json", "fleet", "report", str(d), "--html", str(page))
    assert proc.returncode == 1 and no_traceback(proc), proc.stderr
    hosts = {h["host"]: h.get("error") for h in json.loads(proc.stdout)["data"]["hosts"]}
    assert hosts["gpu\ufffd01"] == "result file name is not UTF-8: not read", hosts
    assert "gpu\ufffd01" in page.read_text(encoding="utf-8")


# --- capture: links stay inside the capture; a root read in part says so -------------------------

def _links_escaping(archive, dest) -> list:
    """Members of `archive` that are links whose target, read from where they sit, leaves `dest`."""
    import tarfile

    out = []
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.issym():
                where = os.path.dirname(os.path.join(str(dest), m.name))
                target = os.path.normpath(os.path.join(where, m.linkname))
                if m.linkname.startswith("/") or not (target + "/").startswith(str(dest) + "/"):
                    out.append((m.name, m.linkname))
    return out


def test_capture_keeps_absolute_and_climbing_links_inside_the_capture(tmp_path):
    import shutil
    import tarfile

    from tests.fixtures.roots import root_of
    from tests.integration.clirun import features_of

    root = tmp_path / "R"
    shutil.copytree(root_of("softroce-3nic"), root, symlinks=True)
    ib = root / "sys/class/infiniband"
    os.unlink(ib / "rxe0")
    os.symlink("/sys/devices/virtual/infiniband/rxe0", ib / "rxe0")  # absolute: the host's own path
    os.unlink(ib / "rxe1")
    os.symlink("../../../../../../../../../sys/devices/virtual/infiniband/rxe1", ib / "rxe1")  # '..' past /
    archive = tmp_path / "cap.tar.gz"
    proc = rocetune("capture", "--root", str(root), "-o", str(archive))
    assert proc.returncode == 0, proc.stderr
    dest = tmp_path / "X"
    assert _links_escaping(archive, dest) == []
    with tarfile.open(archive) as tar:
        names = {m.name: m.linkname for m in tar.getmembers() if m.issym()}
        tar.extractall(dest)
    assert names["sys/class/infiniband/rxe0"] == "../../devices/virtual/infiniband/rxe0"
    assert names["sys/class/infiniband/rxe1"] == "../../devices/virtual/infiniband/rxe1"
    assert features_of(str(dest)) == features_of(str(root))


def _as_nobody(*args: str):
    import shutil
    import subprocess
    import sys

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("reading a root as another user: needs root and setpriv")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), HOME="/")
    argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    if subprocess.run(argv + ["-c", "import rocetune"], capture_output=True, env=env, cwd="/").returncode:
        pytest.skip("another user cannot run this checkout's python (a private directory above it)")
    return subprocess.run(argv + ["-m", "rocetune", *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd="/")


@pytest.fixture
def open_dir():
    """A directory every user may enter (pytest's own are root's alone), removed after."""
    import shutil
    import tempfile
    from pathlib import Path

    d = tempfile.mkdtemp(prefix="rocetune-test-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_a_root_read_in_part_is_a_partial_result_with_a_non_zero_exit(open_dir):
    import shutil

    from tests.fixtures.roots import root_of

    base = open_dir / "shared"
    base.mkdir()
    os.chmod(base, 0o777)
    root = base / "R"
    shutil.copytree(root_of("pcie-4gpu-2nic"), root, symlinks=True)
    for d, _, files in os.walk(root):  # readable by anyone, but for the RDMA devices
        os.chmod(d, 0o755)
        for f in files:
            if not os.path.islink(os.path.join(d, f)):
                os.chmod(os.path.join(d, f), 0o644)
    full = _as_nobody("env", "--root", str(root))
    assert full.returncode == 0 and "NCCL_IB_HCA" in full.stdout, full.stderr
    os.chmod(root / "sys/class/infiniband", 0o700)
    out = base / "cap.tar.gz"
    for args in (["probe"], ["env"], ["capture", "-o", str(out)]):
        proc = _as_nobody(*args, "--root", str(root))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (args, proc.returncode, proc.stderr)
        assert "root-unreadable" in proc.stdout + proc.stderr and "/sys/class/infiniband" in proc.stdout + proc.stderr
        assert "partial" in (proc.stdout + proc.stderr).lower(), proc.stdout
    assert out.is_file()  # what could be read is kept, and said to be partial
    written = base / "nccl.env"
    proc = _as_nobody("env", "--root", str(root), "-o", str(written))
    assert proc.returncode == 1 and not written.exists(), proc.stderr  # no partial env over a good one


def test_an_env_printed_to_a_terminal_shows_escapes_and_to_a_pipe_its_bytes():
    """The env text is data for a file (its exact bytes through a pipe); a terminal is shown it."""
    import subprocess
    import sys

    from tests.fixtures.roots import root_of

    args = [sys.executable, "-m", "rocetune", "env", "--root", root_of("softroce-3nic"), "--set", "UCX_TLS=a\x1b[2Jb"]
    piped = subprocess.run(args, capture_output=True, timeout=60)
    assert b"export UCX_TLS='a\x1b[2Jb'" in piped.stdout, piped.stdout
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(args, stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not chunk:
                break
            shown += chunk
        proc.wait(timeout=60)
    finally:
        os.close(master)
    assert b"UCX_TLS='a\\x1b[2Jb'" in shown and b"\x1b" not in shown, shown[-500:]
