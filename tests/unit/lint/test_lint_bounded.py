"""What lint keeps of a huge file is the size of a real report: a file of a hundred thousand
unknown names lists the first MAX_LISTED of each check and counts the rest, and each unknown
name costs the typo search no catalog-wide work (timing: bench/lint_scale.py)."""

from __future__ import annotations

from rocetune.lint.checks import MAX_LISTED, lint_text
from rocetune.nccl import catalog


def test_the_report_of_thirty_thousand_unknown_names_stays_the_size_of_a_real_one():
    n = 30000
    text = "".join(f"NCCL_UNKNOWN_VAR_{i:07d}=1\n" for i in range(n)) + "NCCL_SOCKET_IFNAM=eth0\n"
    parsed, found = lint_text(text, "big.conf")
    assert len(parsed.assignments) == n + 1
    assert len(found) == MAX_LISTED + 2  # one finding a name: 30,001 findings, 23 MB of them
    assert [f.fix for f in found if f.id == "misspelled-name"] == ["did you mean NCCL_SOCKET_IFNAME?"]
    summary = [f for f in found if f.id == "unknown-name"][-1]
    assert summary.message.startswith(f"{n - MAX_LISTED} more unknown-name finding(s) in this file")


def test_an_unknown_name_far_from_every_variable_measures_none(monkeypatch):
    measured = []
    real = catalog.edit_distance
    monkeypatch.setattr(catalog, "edit_distance", lambda a, b, limit=None: measured.append(b) or real(a, b, limit))
    fresh = catalog.Catalog(catalog.load_catalog().doc)
    for i in range(2000):
        assert fresh.suggest(f"NCCL_UNKNOWN_VAR_{i:07d}") is None
    assert measured == []
    assert fresh.suggest("NCCL_SOCKET_IFNAM") == ("NCCL_SOCKET_IFNAME", 1) and len(measured) <= 10
