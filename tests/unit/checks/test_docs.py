"""A page per check: every registered id has docs/checks/<id>.md, every page a registered id,
and each page says what its declaration says."""

import os
import subprocess
import sys

from rocetune import checks

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DOCS = os.path.join(REPO, "docs", "checks")


def test_every_registered_id_has_a_page_and_every_page_an_id():
    pages = {name[:-3] for name in os.listdir(DOCS) if name.endswith(".md") and name != "README.md"}
    ids = {c.id for c in checks.all_checks()}
    assert ids - pages == set(), "checks without a page (run python3 tools/check_docs.py)"
    assert pages - ids == set(), "pages without a check"


def test_the_index_lists_every_check():
    with open(os.path.join(DOCS, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    for c in checks.all_checks():
        assert f"[`{c.id}`]({c.id}.md)" in text


def test_a_page_carries_its_declaration():
    c = checks.get("roce-mtu-low")
    with open(os.path.join(DOCS, "roce-mtu-low.md"), encoding="utf-8") as fh:
        text = " ".join(fh.read().split())
    for heading in ("## What it checks", "## What it reads", "## Why it matters", "## Fix", "## Source"):
        assert heading in text
    assert "iboe_get_mtu" in text and c.title in text


def test_pages_are_what_the_declarations_give():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "check_docs.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout


def test_each_rule_page_links_the_checks_its_rule_leaves():
    for c in checks.all_checks():
        for rule in c.by:
            with open(os.path.join(REPO, "docs", "rules", f"{rule}.md"), encoding="utf-8") as fh:
                assert f"(../checks/{c.id}.md)" in fh.read(), f"docs/rules/{rule}.md does not link {c.id}"


def test_a_pages_markup_renders_and_its_text_is_escaped():
    """The page's own bold labels are Markdown; a `*` in the declaration's text is a name's
    (NCCL_IB_*), shown as written."""
    for name in sorted(os.listdir(DOCS)):
        with open(os.path.join(DOCS, name), encoding="utf-8") as fh:
            text = fh.read()
        assert "\\*\\*" not in text, f"{name}: escaped bold markup"
        if name != "README.md":
            assert "\n**Severity:** " in text, name
