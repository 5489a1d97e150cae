"""doctor's metrics through the real thing: Debian's prometheus-node-exporter serves the file
doctor writes (textfile collector, listening on loopback only) and promtool accepts it; a
repaired node's next run changes what a scrape returns."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from .clirun import rocetune

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
EXPORTER = shutil.which("prometheus-node-exporter")
PROMTOOL = shutil.which("promtool")
needs_exporter = pytest.mark.skipif(EXPORTER is None or PROMTOOL is None,
                                    reason="prometheus-node-exporter and promtool (package prometheus) are "
                                           "not installed (scripts/bootstrap.sh installs them)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode("utf-8")


def _value(text: str, series: str) -> float:
    m = re.search(r"^" + re.escape(series) + r" (\S+)$", text, re.M)
    assert m, f"{series} not in the scrape"
    return float(m.group(1))


@pytest.fixture
def exporter(tmp_path):
    """node_exporter with only the textfile collector, on a free loopback port; stopped after."""
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    port = _free_port()
    proc = subprocess.Popen([EXPORTER, "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={textdir}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                _scrape(port)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"node_exporter did not start: {proc.stderr.read().decode()[-500:]}")
                time.sleep(0.1)
        yield textdir, port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@needs_exporter
def test_node_exporter_serves_what_doctor_wrote_and_promtool_accepts_it(exporter, tmp_path):
    textdir, port = exporter
    root = tmp_path / "root"
    shutil.copytree(HOSTS / "dgx-h100-rails-dmabuf", root, symlinks=True)
    qos = root / "commands/mlnx_qos_-i_enp94s0np0.txt"
    good = qos.read_text()
    qos.write_text(re.sub(r"(enabled\s+0\s+0\s+0\s+)1", r"\g<1>0", good))  # PFC off on one rail
    prom = textdir / "rocetune.prom"

    proc = rocetune("--root", str(root), "doctor", "--no-counters", "--metrics", str(prom),
                    "--skip", "doctor-acs-redirect=no lspci in this capture")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"metrics written to {prom}"
    assert sorted(os.listdir(textdir)) == ["rocetune.prom"]  # no temporary file left beside it
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=prom.read_text(), capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), check.stdout + check.stderr

    scraped = _scrape(port)
    assert _value(scraped, 'rocetune_doctor_check_status{check="doctor-rail-qos-mismatch"}') == 2
    assert _value(scraped, 'rocetune_doctor_check_status{check="tc-not-derived"}') == 1
    assert _value(scraped, 'rocetune_doctor_check_status{check="doctor-port-down"}') == 0
    assert _value(scraped, 'rocetune_doctor_check_status{check="doctor-acs-redirect"}') == -1
    assert _value(scraped, "rocetune_doctor_exit_code") == 1
    assert _value(scraped, 'rocetune_expect_verdict{verdict="none"}') == 1
    assert _value(scraped, 'node_textfile_scrape_error') == 0
    assert re.search(r'^node_textfile_mtime_seconds\{file="[^"]*rocetune\.prom"\} \S+$', scraped, re.M)
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=scraped, capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr

    qos.write_text(good)  # repaired: the next run's file replaces the last, and the scrape follows
    assert rocetune("--root", str(root), "doctor", "--no-counters", "--metrics", str(prom)).returncode in (0, 5)
    scraped = _scrape(port)
    assert _value(scraped, 'rocetune_doctor_check_status{check="doctor-rail-qos-mismatch"}') == 0
    assert _value(scraped, "rocetune_doctor_failures") == 0


def test_metrics_need_a_prom_file_name(tmp_path):
    proc = rocetune("--root", str(HOSTS / "softroce-3nic"), "doctor", "--metrics", str(tmp_path / "x.txt"))
    assert proc.returncode == 2 and "reads only *.prom files" in proc.stderr
