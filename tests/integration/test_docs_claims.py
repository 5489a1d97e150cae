"""What the hand-written pages say agrees with the code: a check id they quote exists, a table row
that gives a check's severity gives the declared one (the pages under docs/checks/ are written
from the declarations by tools/check_docs.py), and a YAML example is read by what reads it."""

from __future__ import annotations

import re

import pytest

from rocetune.checks import all_checks
from tests.integration.clirun import no_traceback, rocetune
from tests.integration.test_docs_commands import HOST, REPO, pages

ID_PREFIXES = ("doctor-", "switch-", "expect-", "ras-")
ROW = re.compile(r"^\|\s*`([a-z0-9][a-z0-9-]+)`\s*\|\s*(error|warning|info)\b", re.M)


def _declared():
    checks = all_checks()
    return {c.id: c.severity for c in (checks.values() if isinstance(checks, dict) else checks)}


def test_every_check_id_the_pages_quote_is_declared():
    declared = _declared()
    unknown = sorted(
        {
            f"{page}: {token}"
            for page in pages()
            for token in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", (REPO / page).read_text(encoding="utf-8"))
            if token.startswith(ID_PREFIXES) and token not in declared
        }
    )
    assert unknown == []


def test_a_table_row_gives_the_declared_severity():
    declared, rows = _declared(), 0
    wrong = []
    for page in pages():
        for check, severity in ROW.findall((REPO / page).read_text(encoding="utf-8")):
            if check in declared:
                rows += 1
                if severity != declared[check]:
                    wrong.append(f"{page}: {check} is {declared[check]}, the page says {severity}")
    assert rows > 50 and wrong == [], "\n".join(wrong)


# The YAML examples a reader copies as a whole: each page's n-th yaml block, and the command that
# reads it (its exit: 0, or 1 and 5 for a judgement; never bad input).
YAML_INPUTS = {
    ("docs/qos.md", 0): ["qos", "render", "--os", "sonic", "--ports", "Ethernet0", "--qos", "{file}"],
    ("docs/expect.md", 0): ["doctor", "--no-counters", "--expect", "{file}"],
    ("docs/doctor.md", 0): ["doctor", "--no-counters", "--doctor-config", "{file}"],
    ("docs/doctor.md", 1): ["doctor", "--no-counters", "--doctor-config", "{file}"],
    ("docs/fleet.md", 0): ["fleet", "report", "{results}", "--manifest", "{file}"],
}


@pytest.mark.slow  # a doctor run per example
@pytest.mark.parametrize("page, index", sorted(YAML_INPUTS))
def test_a_yaml_example_is_read_as_written(page, index, tmp_path):
    blocks = re.findall(r"^```yaml\n(.*?)^```", (REPO / page).read_text(encoding="utf-8"), re.S | re.M)
    example = tmp_path / "example.yml"
    example.write_text(blocks[index])
    results = tmp_path / "results"
    results.mkdir(mode=0o755)
    one = rocetune("--json", "--root", str(HOST), "doctor", "-v", "--no-counters")
    (results / "gpu01.json").write_text(one.stdout)
    argv = [a.format(file=example, results=results) for a in YAML_INPUTS[(page, index)]]
    proc = rocetune("--root", str(HOST), *argv)
    codes = (0,) if argv[0] == "qos" else (0, 1, 5)
    assert proc.returncode in codes and no_traceback(proc), (page, index, proc.stderr[-2000:])


# Paths the pages name that are not in the checkout, on purpose.
NOT_IN_THE_CHECKOUT = {
    "inventories/lab/hosts.yml": "written by `python3 -m lab up`",
    "inventories/lab/vm.yml": "written by `python3 -m lab up --vm`",
    "src/rocetune/nics/foo_rdma.py": "the page's example of a new driver module",
}
# Pages that cite other projects' files by their paths there (a vendor's table of settings).
CITES_OTHER_REPOSITORIES = {"docs/rules/nccl-ib-qps.md"}
PATH = re.compile(
    r"(?<![\w./-])((?:src/rocetune|tests|tools|bench|examples|roles|playbooks|plugins|lab|inventories|scripts)"
    r"/[\w./-]*[\w/])(?![\w./<-])"  # a path that goes on as a placeholder (`test_<module>.py`) names no file
)


def test_every_path_the_pages_name_is_in_the_checkout():
    """A source reference that moved (a test file, a module) is a claim that went stale."""
    named, missing = 0, []
    for page in set(pages()) - CITES_OTHER_REPOSITORIES:
        for path in PATH.findall((REPO / page).read_text(encoding="utf-8")):
            named += 1
            if (
                path not in NOT_IN_THE_CHECKOUT
                and not (REPO / path).exists()
                and not (REPO / page).parent.joinpath(path).exists()
            ):
                missing.append(f"{page}: {path}")
    assert named > 150 and sorted(set(missing)) == []
