"""`rocetune fleet gather` against SSH servers on 127.0.0.1 (tests/integration/sshserver.py):
each runs a fake `rocetune` that prints the envelopes the real CLI gave for a fixture host.
Host keys are checked strictly; a dead, silent or slow host is reported, not waited for."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from pathlib import Path

import paramiko
import pytest

from .clirun import no_traceback, rocetune
from .sshserver import SSHServer, dead_port, fake_rocetune

FIXTURE = str(Path(__file__).resolve().parents[1] / "fixtures" / "hosts" / "dgx-h100-roce")


@pytest.fixture(scope="module")
def keys():
    return {"host": paramiko.RSAKey.generate(2048), "other": paramiko.RSAKey.generate(2048),
            "client": paramiko.RSAKey.generate(2048)}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The envelopes of `--json probe` and `--json doctor -v --no-counters` on the fixture host."""
    d = tmp_path_factory.mktemp("recorded")
    codes = {}
    for verb, extra in (("probe", []), ("doctor", ["-v", "--no-counters"])):
        proc = rocetune("--json", verb, *extra, "--root", FIXTURE)
        assert json.loads(proc.stdout)["status"] != "error", proc.stdout[:500]
        (d / f"{verb}.json").write_text(proc.stdout, encoding="utf-8")
        codes[verb] = proc.returncode
    return d, codes


class Site:
    """A HOME with ~/.ssh, a client key, and the servers started for one test."""

    def __init__(self, tmp: Path, keys, recorded):
        self.tmp, self.keys = tmp, keys
        self.rec_dir, self.codes = recorded
        self.home = tmp / "home"
        (self.home / ".ssh").mkdir(parents=True)
        self.identity = tmp / "client_key"
        keys["client"].write_private_key_file(str(self.identity))
        self.servers = []
        self.out = tmp / "out"

    def server(self, name: str, kind: str = "good", host_key=None, silent: bool = False) -> SSHServer:
        bin_dir = self.tmp / "srv" / name
        if kind == "good":
            fake_rocetune(bin_dir, self.rec_dir / "probe.json", self.rec_dir / "doctor.json", self.codes["doctor"])
        elif kind == "sleep":
            fake_rocetune(bin_dir, body="sleep 60\n")
        elif kind == "nonjson":
            fake_rocetune(bin_dir, body="echo 'Welcome to gpu node'\nexit 0\n")
        elif kind == "missing":
            bin_dir.mkdir(parents=True)
        elif kind == "crash":
            fake_rocetune(bin_dir, self.rec_dir / "probe.json", self.rec_dir / "doctor.json", doctor_exit=70)
        srv = SSHServer(host_key or self.keys["host"], self.keys["client"], bin_dir, silent=silent)
        self.servers.append(srv)
        return srv

    def trust(self, port: int, key=None, path: Path = None) -> Path:
        path = path or self.home / ".ssh" / "known_hosts"
        key = key or self.keys["host"]
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n")
        return path

    def ssh_config(self, entries: dict) -> None:
        text = "".join(f"Host {h}\n  HostName 127.0.0.1\n  Port {p}\n" + (f"  User {u}\n" if u else "")
                       for h, (p, u) in entries.items())
        (self.home / ".ssh" / "config").write_text(text, encoding="utf-8")

    def gather(self, *args: str):
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(self.home)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        proc = rocetune("--json", "fleet", "gather", "-o", str(self.out), "--identity", str(self.identity),
                        *args, env=env)
        assert no_traceback(proc), proc.stderr
        return proc.returncode, json.loads(proc.stdout)

    def result(self, host: str) -> dict:
        return json.loads((self.out / f"{host}.json").read_text(encoding="utf-8"))

    def close(self):
        for s in self.servers:
            s.close()


@pytest.fixture
def site(tmp_path, keys, recorded):
    s = Site(tmp_path, keys, recorded)
    yield s
    s.close()


def _errors(env) -> dict:
    return {h["host"]: h["error"] for h in env["data"]["hosts"]}


def test_two_hosts_gathered_and_reported(site):
    a, b = site.server("a"), site.server("b")
    site.ssh_config({"gpu01": (a.port, "ops"), "gpu02": (b.port, None)})
    site.trust(a.port), site.trust(b.port)
    code, env = site.gather("gpu01", "gpu02", "--user", "admin")
    assert code == 0, env
    assert _errors(env) == {"gpu01": None, "gpu02": None}
    # --user beats ~/.ssh/config's User; the config gives HostName and Port
    assert a.logins == ["admin"] and b.logins == ["admin"]
    assert a.commands == ["rocetune --json doctor -v --no-counters"]  # -v: probe's Features and plan come with it
    doc = site.result("gpu01")
    assert doc["schema"] == "rocetune.fleet-host/1" and doc["host"] == "gpu01" and doc["error"] is None
    assert doc["probe"] is None and doc["doctor"]["features"]["schema_version"] and "findings" in doc["doctor"]
    assert doc["doctor"]["plan"]["env"]["NCCL_IB_HCA"]
    assert doc["gathered_at"].endswith("Z")
    assert not [n for n in os.listdir(site.out) if n.startswith(".")]  # no temporary file left
    proc = rocetune("--json", "fleet", "report", str(site.out))
    rep = json.loads(proc.stdout)
    assert proc.returncode == 5, rep  # alike, sharing the fixture host's warnings
    assert rep["data"]["summary"] == {"hosts": 2, "failed": 0, "differ": 0, "agree": True,
                                      "shared": len(rep["data"]["shared"])}
    assert rep["data"]["summary"]["shared"] >= 1


def test_user_from_ssh_config_when_none_given(site):
    a = site.server("a")
    site.ssh_config({"gpu01": (a.port, "ops")})
    site.trust(a.port)
    code, env = site.gather("gpu01")
    assert code == 0, env
    assert a.logins == ["ops"]


def test_unknown_host_key_refused_then_accepted_with_accept_new(site):
    a = site.server("a")
    site.ssh_config({"gpu01": (a.port, None)})
    code, env = site.gather("gpu01")
    assert code == 1
    err = _errors(env)["gpu01"]
    fp = "SHA256:" + base64.b64encode(hashlib.sha256(site.keys["host"].asbytes()).digest()).decode().rstrip("=")
    assert "unknown" in err and f"[127.0.0.1]:{a.port}" in err and fp in err
    assert "--accept-new" in err and f"ssh-keyscan -p {a.port} 127.0.0.1" in err
    assert site.result("gpu01")["error"] == err and site.result("gpu01")["probe"] is None
    assert a.commands == []  # nothing ran on a host whose key was refused

    kh = site.tmp / "kh"
    code, env = site.gather("gpu01", "--accept-new", "--known-hosts", str(kh))
    assert code == 0, env
    line = kh.read_text(encoding="utf-8")
    assert line == f"[127.0.0.1]:{a.port} ssh-rsa {site.keys['host'].get_base64()}\n"
    code, env = site.gather("gpu01", "--known-hosts", str(kh))  # now known, strict again
    assert code == 0, env
    assert kh.read_text(encoding="utf-8") == line  # nothing added twice
    assert not (site.home / ".ssh" / "known_hosts").exists()


def test_changed_host_key_refused_even_with_accept_new(site):
    a = site.server("a", host_key=site.keys["other"])
    site.ssh_config({"gpu01": (a.port, None)})
    kh = site.trust(a.port, path=site.tmp / "kh")  # records the old key, "host"
    before = kh.read_text(encoding="utf-8")
    code, env = site.gather("gpu01", "--accept-new", "--known-hosts", str(kh))
    assert code == 1
    err = _errors(env)["gpu01"]
    assert "CHANGED" in err and "refused" in err and "ssh-keygen -R" in err
    assert a.commands == []
    assert kh.read_text(encoding="utf-8") == before


def test_dead_silent_and_slow_hosts_reported_good_ones_complete(site):
    good1, good2 = site.server("g1"), site.server("g2")
    silent = site.server("silent", silent=True)  # accepts TCP, never sends a banner
    slow = site.server("slow", kind="sleep")  # the command never finishes
    dead = dead_port()
    entries = {"good1": (good1.port, None), "good2": (good2.port, None), "silent": (silent.port, None),
               "slow": (slow.port, None), "dead": (dead, None)}
    site.ssh_config(entries)
    for port, _ in entries.values():
        site.trust(port)
    code, env = site.gather(*entries, "--timeout", "4", "--forks", "5")
    assert code == 1
    errors = _errors(env)
    assert errors["good1"] is None and errors["good2"] is None
    assert "refused" in errors["dead"].lower()
    assert "timed out" in errors["silent"]
    assert "timed out" in errors["slow"] and "doctor" in errors["slow"]
    assert env["data"]["summary"] == {"hosts": 5, "failed": 3}
    assert [h["host"] for h in env["data"]["hosts"]] == list(entries)  # the order given
    for host in entries:
        assert site.result(host)["error"] == errors[host]
    proc = rocetune("--json", "fleet", "report", str(site.out))
    rep = json.loads(proc.stdout)
    assert proc.returncode == 1 and rep["data"]["summary"]["failed"] == 3


@pytest.mark.parametrize("kind,words", [("nonjson", ["doctor", "no JSON", "Welcome to gpu node"]),
                                        ("crash", ["doctor", "exit 70"]),
                                        ("missing", ["doctor", "command not found: rocetune"])])
def test_a_bad_command_is_that_hosts_failure(site, kind, words):
    bad, good = site.server("bad", kind=kind), site.server("good")
    site.ssh_config({"bad": (bad.port, None), "good": (good.port, None)})
    site.trust(bad.port), site.trust(good.port)
    code, env = site.gather("bad", "good")
    assert code == 1
    errors = _errors(env)
    assert errors["good"] is None
    assert all(w in errors["bad"] for w in words), errors["bad"]


def _inventories(a: int, b: int, c: int) -> dict:
    ini = f"""[gpu]
gpu01 ansible_host=127.0.0.1 ansible_port={a}
gpu02 ansible_host=127.0.0.1 ansible_port={b} ansible_user=root

[front]
login1 ansible_host=127.0.0.1 ansible_port={c}

[cluster:children]
gpu
front

[gpu:vars]
ansible_user=trainer
"""
    yaml = f"""all:
  children:
    cluster:
      children:
        gpu:
          vars:
            ansible_user: trainer
          hosts:
            gpu01: {{ansible_host: 127.0.0.1, ansible_port: {a}}}
            gpu02: {{ansible_host: 127.0.0.1, ansible_port: {b}, ansible_user: root}}
        front:
          hosts:
            login1: {{ansible_host: 127.0.0.1, ansible_port: {c}}}
"""
    return {"hosts.ini": ini, "hosts.yml": yaml}


@pytest.mark.parametrize("fmt", ["hosts.ini", "hosts.yml"])
def test_ansible_inventory_groups_ports_and_users(site, fmt):
    a, b, c = site.server("a"), site.server("b"), site.server("c")
    for s in (a, b, c):
        site.trust(s.port)
    inv = site.tmp / fmt
    inv.write_text(_inventories(a.port, b.port, c.port)[fmt], encoding="utf-8")
    code, env = site.gather("--inventory", str(inv), "--limit", "gpu", "--user", "cli")
    assert code == 0, env
    assert _errors(env) == {"gpu01": None, "gpu02": None}
    # the group's ansible_user, a host's own beating it; both beat --user
    assert a.logins == ["trainer"] and b.logins == ["root"] and c.logins == []
    code, env = site.gather("--inventory", str(inv), "--user", "cli")
    assert code == 0, env
    assert set(_errors(env)) == {"gpu01", "gpu02", "login1"}
    assert a.logins == ["trainer"] * 2 and c.logins == ["cli"]  # --user where the inventory names none


@pytest.mark.parametrize("args,code,word", [
    ([], 2, "needs hosts or --inventory"),
    (["gpu01", "--inventory", "x.ini"], 2, "one of them"),
    (["gpu01", "--limit", "gpu"], 2, "--limit needs --inventory"),
    (["--inventory", "missing.ini"], 3, "no such file"),
    (["../etc"], 3, "cannot name a result file"),
    (["gpu01", "--forks", "0"], 2, "--forks"),
])
def test_usage_and_input_errors(site, args, code, word):
    got, env = site.gather(*args)
    assert got == code, env
    assert word in env["errors"][0]["message"]


def test_unknown_group_is_an_input_error(site):
    inv = site.tmp / "hosts.ini"
    inv.write_text(_inventories(1, 2, 3)["hosts.ini"], encoding="utf-8")
    code, env = site.gather("--inventory", str(inv), "--limit", "nosuchgroup")
    assert code == 3 and "nosuchgroup" in env["errors"][0]["message"]
