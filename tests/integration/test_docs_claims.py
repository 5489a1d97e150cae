"""What the hand-written pages say of the checks agrees with their declarations: a check id they
quote exists, and a table row that gives a check's severity gives the declared one. (The pages
under docs/checks/ are written from the declarations by tools/check_docs.py.)"""

from __future__ import annotations

import re

from rocetune.checks import all_checks
from tests.integration.test_docs_commands import REPO, pages

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
