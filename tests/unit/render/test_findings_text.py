"""One way a finding reads in text, whichever verb found it: probe, doctor (and qos check, which
prints doctor's report) and lint show the same lines for the same finding, and their counts are
the same with and without -v."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rocetune.checks import finding
from rocetune.doctor import report
from rocetune.model.finding import finding_lines
from rocetune.render.human import findings_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _findings():
    return [finding("misspelled-name", "run.sh:3", "NCCL_IB_RETRY_COUNT is not a variable NCCL reads",
                    fix="rename it NCCL_IB_RETRY_CNT", file="run.sh", line=3, key="NCCL_IB_RETRY_COUNT"),
            finding("nccl-wheel-not-seen", "nccl", "only the system NCCL was found")]


def _block(text: str, fid: str):
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if fid in line.split())
    out = [lines[at]]
    indent = len(lines[at]) - len(lines[at].lstrip())
    for line in lines[at + 1:]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        out.append(line)
    return [line.strip() for line in out]


def test_probe_doctor_and_lint_print_a_finding_alike_and_count_alike_with_and_without_v():
    found = _findings()
    error = found[0]
    for verbose in (0, 1):
        want = [line.strip() for line in finding_lines(error, verbose)]
        assert want[0].split()[:3] == ["FAIL", "misspelled-name", "run.sh:3"]
        assert ("page: docs/checks/misspelled-name.md" in want) == bool(verbose)
        probe = findings_text(found, verbose)
        doctor = report.text(found, "n1", verbose)
        assert _block(probe, "misspelled-name") == want == _block(doctor, "misspelled-name")
        assert ("nccl-wheel-not-seen" in probe) == bool(verbose) == ("nccl-wheel-not-seen" in doctor)
        assert probe.splitlines()[-1] == "findings: 1 failure(s), 0 warning(s), 1 note(s)" + (
            "" if verbose else " (-v shows them)")
        assert doctor.splitlines()[-1].startswith("doctor n1: 1 failure(s), 0 warning(s), 1 note(s)")


def test_lint_prints_the_same_lines_under_its_file(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("export NCCL_DEBUG=WARN\n\nexport NCCL_IB_RETRY_COUNT=7\n")
    for verbose in ([], ["-v"]):
        out = subprocess.run([sys.executable, "-m", "rocetune", "lint", *verbose, str(script)],
                             stdout=subprocess.PIPE, text=True).stdout
        (lint_finding,) = [f for f in _lint_findings(script) if f.id == "misspelled-name"]
        assert _block(out, "misspelled-name") == [line.strip() for line in finding_lines(lint_finding, len(verbose))]
        assert out.splitlines()[-1].startswith("1 file(s): 1 failure(s), 0 warning(s)")


def _lint_findings(path):
    from rocetune.lint.checks import lint_paths

    return lint_paths([str(path)]).findings
