"""The fleet pages as people see them: `fleet validate --html` and `fleet report --html`
opened in a real headless browser (Debian's chromium). The DOM the browser built is checked
for what matters (the verdict, the odd host, the heat map's cells), and a screenshot is decoded
to check the heat map's colours; the screenshots stay in artifacts/browser/ for a person.

The validate run is the real orchestration (fleet.validate) with hosts that answer in-process:
their probe is the fixture host's, their perftest prints a recorded real output, and one host's
perftest server fails."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from rocetune.fleet import pairtest, ssh
from rocetune.fleet.targets import Target
from rocetune.fleet.validate import Options, validate
from rocetune.render.validate_html import validate_html

from .clirun import rocetune

pytestmark = pytest.mark.slow  # starts headless chromium

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
PERF = (FIXTURES / "outputs" / "perftest-ib_write_bw-gbits-roce.txt").read_bytes()
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (scripts/bootstrap.sh installs it)")


@pytest.fixture(scope="module")
def probe_envelope():
    proc = rocetune("--json", "probe", "--root", str(FIXTURES / "hosts" / "dgx-h100-roce"))
    return proc.stdout.encode()


class FakeHost:
    """A host answering validate's commands: probe, counters (unreadable: `-`), perftest."""

    def __init__(self, target: Target, probe: bytes, broken_server: bool):
        self.target, self.name, self.probe, self.broken = target, target.name, probe, broken_server
        self.commands = []

    def run(self, command: str, step: str, timeout: float) -> ssh.Completed:
        self.commands.append(command)
        if "--json probe" in command:
            return ssh.Completed(0, self.probe, b"")
        if command.startswith("for f in"):
            return ssh.Completed(0, b"-\n" * len(command.split(";")[0].split()[3:]), b"")
        if command.startswith("ib_write_bw"):
            return ssh.Completed(0, PERF, b"")
        return ssh.Completed(1, b"", b"iperf3: error - unable to connect to server")

    def start(self, command: str, step: str, timeout: float):
        self.commands.append(command)
        return command

    def finish(self, handle, step: str) -> ssh.Completed:
        if self.broken and handle.startswith("ib_write_bw"):
            return ssh.Completed(1, b"", b"Couldn't listen to port 18515")
        return ssh.Completed(0, b"", b"")

    def close(self):
        pass


def run_validate(probe: bytes, broken: str, hosts=("gpu01", "gpu02", "gpu03", "gpu04")) -> dict:
    fakes = {}

    def opener(target):
        fakes[target.name] = FakeHost(target, probe, target.name == broken)
        return fakes[target.name]

    opts = Options(tests=("rdma",), settings=pairtest.Settings(seconds=1, line_rate_gbps=0.5))
    doc = validate([Target(name=h, hostname=h) for h in hosts], opts, opener=opener)
    return doc, fakes


def test_the_orchestration_names_the_host_whose_server_fails(probe_envelope, monkeypatch):
    monkeypatch.setattr("rocetune.fleet.validate.SERVER_SETTLE_S", 0)
    doc, fakes = run_validate(probe_envelope, broken="gpu03")
    assert doc["summary"]["pairs"] == 6 and len(doc["rounds"]) == 3
    assert all(len({h for pair in r for h in pair}) == 4 for r in doc["rounds"])  # each host once a round
    failed = {(p["a"], p["b"]) for p in doc["pairs"] if p["status"] == "error"}
    assert failed == {(a, b) for a, b in failed if b == "gpu03"} and failed
    assert doc["summary"]["suspects"] == ["gpu03"]
    # each rail of each pair ran with the env's device and GID index, one TCP port per rail
    clients = [c for f in fakes.values() for c in f.commands if c.startswith("ib_write_bw") and c.split()[-1].startswith("gpu")]
    assert len(clients) == 6 * 8 and all(" -x 3 " in c for c in clients)
    assert {c.split(" -p ")[1].split()[0] for c in clients} == {str(18515 + i) for i in range(8)}


def _png_pixels(data: bytes):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def _browser(page: Path, shot: Path) -> str:
    common = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--no-first-run", f"--user-data-dir={shot.parent / 'profile'}"]
    subprocess.run(common + ["--window-size=1000,1400", f"--screenshot={shot}", page.as_uri()],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)
    return subprocess.run(common + ["--dump-dom", page.as_uri()], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=120, check=True).stdout


def _keep(shot: Path) -> None:
    kept = REPO / "artifacts" / "browser"
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, kept / shot.name)


@needs_browser
def test_validate_page_in_a_browser_shows_the_verdict_and_the_heat_map(probe_envelope, monkeypatch, tmp_path):
    monkeypatch.setattr("rocetune.fleet.validate.SERVER_SETTLE_S", 0)
    doc, _ = run_validate(probe_envelope, broken="gpu03")
    doc["hosts"]["gpu<05>"] = {"error": "ssh gpu<05>: cannot connect: Connection refused"}
    page = tmp_path / "validate.html"
    page.write_text(validate_html(doc), encoding="utf-8")
    shot = tmp_path / "validate.png"
    dom = _browser(page, shot)
    _keep(shot)
    assert 'class="verdict-fail">FAIL</span>' in dom and "Look first at: gpu03" in dom
    assert "gpu&lt;05&gt;" in dom and "<05>" not in dom.replace("gpu&lt;05&gt;", "")  # escaped, not markup
    assert dom.count("data-pair=") == 16  # 4 tested hosts: a 4 x 4 matrix
    assert "Couldn't listen to port 18515" in dom  # the failing pairs' evidence
    width, height, rows, bpp = _png_pixels(shot.read_bytes())
    colours = {rows[y][x * bpp:x * bpp + 3] for y in range(0, height, 4) for x in range(0, width, 4)}
    assert bytes.fromhex("7fcf7f") in colours  # passing pairs
    assert bytes.fromhex("f4a0a0") in colours  # gpu03's pairs: no figure, failed


def _doctor_envelope(root: Path) -> str:
    proc = rocetune("--json", "doctor", "--no-counters", "--root", str(root))
    assert json.loads(proc.stdout)["status"] != "error", proc.stdout[:300]
    return proc.stdout


@needs_browser
def test_report_page_of_a_thousand_hosts_puts_the_verdict_and_odd_hosts_first(tmp_path):
    """1,000 hosts' `rocetune --json doctor` files, five of them odd (a rail at MTU 1500, a rail
    gone, 8 MiB memlock on three) and one that could not be gathered: the page's first screen is
    the verdict and those hosts; only the facts that differ are listed; agreed facts fold away."""
    roots = {}
    for name in ("good", "mtu", "rail", "memlock"):
        roots[name] = tmp_path / "roots" / name
        shutil.copytree(FIXTURES / "hosts" / "dgx-h100-roce", roots[name], symlinks=True)
    (roots["mtu"] / "sys/class/net/enp64s0np0/mtu").write_text("1500\n")
    (roots["rail"] / "sys/class/infiniband/mlx5_4").unlink()
    for rel, text in (("etc/systemd/system.conf", "[Manager]\nDefaultLimitMEMLOCK=8M\n"),
                      ("etc/security/limits.conf", "* soft memlock 8192\n* hard memlock 8192\n")):
        (roots["memlock"] / rel).parent.mkdir(parents=True, exist_ok=True)
        (roots["memlock"] / rel).write_text(text)
    envelopes = {name: _doctor_envelope(root) for name, root in roots.items()}
    odd = {"gpu0137": "mtu", "gpu0420": "rail", "gpu0777": "memlock", "gpu0778": "memlock", "gpu0779": "memlock"}
    results = tmp_path / "r"
    results.mkdir()
    for i in range(1, 1001):
        host = f"gpu{i:04d}"
        (results / f"{host}.json").write_text(envelopes[odd.get(host, "good")], encoding="utf-8")
    (results / "gpu<1001>.json").write_text(json.dumps({"host": "gpu<1001>", "error": "ssh: No route to host"}),
                                            encoding="utf-8")
    page = tmp_path / "report.html"
    proc = rocetune("fleet", "report", str(results), "--html", str(page))
    assert proc.returncode == 1, proc.stderr
    html = page.read_text(encoding="utf-8")
    assert len(html) < 60_000, len(html)  # no column or row per agreeing host
    shot = tmp_path / "fleet-report-1000.png"
    dom = _browser(page, shot)
    _keep(shot)
    assert 'class="verdict verdict-fail">FAIL</span> 6 of 1001 host(s) need a look: 1 failed, 5 differ' in dom
    look = dom.index("Look first at")
    assert "gpu&lt;1001&gt;,gpu[0137,0420,0777-0779]" in dom[look:look + 200]
    assert "gpu&lt;1001&gt;" in dom and "<1001>" not in dom.replace("gpu&lt;1001&gt;", "")
    assert dom.index("<h2>Failed</h2>") < dom.index("<h2>Hosts that differ</h2>") < dom.index("<h2>Facts that differ")
    assert "missing mlx5_4:1" in dom and "1500, 9000" in dom
    differ = dom[dom.index("<h2>Facts that differ"):dom.index("<details><summary>Agreed")]
    assert "kernel release" not in differ and "kernel release" in dom  # agreed: folded, not listed
    assert "<strong>yes</strong> on 3: <span class=\"hosts\">gpu[0777-0779]</span>" in differ
    width, height, rows, bpp = _png_pixels(shot.read_bytes())
    top = {rows[y][x * bpp:x * bpp + 3] for y in range(0, min(height, 400), 2) for x in range(0, width, 2)}
    assert bytes.fromhex("f4a0a0") in top  # the FAIL verdict, on the first screen
