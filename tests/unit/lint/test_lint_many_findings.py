"""More than MAX_LISTED findings of one check in a file are a counted summary, whoever lints it:
`lint_paths` and the `lint` verb as much as lint_text (the summary is made under the binding of
the check that made the findings, never exit 70)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rocetune.lint.checks import MAX_LISTED, lint_paths

TEXT = "".join(f"export NCCL_UNKNOWN_VAR_{i:04d}=1\n" for i in range(MAX_LISTED + 50))


def test_lint_paths_counts_the_rest(tmp_path):
    path = tmp_path / "many.env"
    path.write_text(TEXT)
    report = lint_paths([str(path)])
    unknown = [f for f in report.findings if f.id == "unknown-name"]
    assert len(unknown) == MAX_LISTED + 1
    assert unknown[-1].message.startswith("50 more unknown-name finding(s) in this file from line 101 on")


def test_the_lint_verb_exits_as_for_any_warning(tmp_path):
    path = tmp_path / "many.env"
    path.write_text(TEXT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", "rocetune", "lint", "--json", str(path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["data"]["findings"]
    assert sum(1 for f in found if f["id"] == "unknown-name") == MAX_LISTED + 1
