"""The plan as a table for a terminal."""

from __future__ import annotations

from rocetune.model.plan import Decision, Plan
from rocetune.planner import build_plan
from rocetune.render.human import plan_text, printable

from ..rules.featurekit import rail_host


def test_control_characters_cannot_reach_the_terminal():
    assert printable("a\x1b[31mred\n") == "a\\x1b[31mred\\n"


def test_table_lists_every_variable_with_its_rule():
    plan = build_plan(rail_host(2).build())
    text = plan_text(plan)
    assert text.splitlines()[0].split() == ["VARIABLE", "VALUE", "RULE"]
    for d in plan.decisions:
        assert any(line.split()[:1] == [d.key] and d.rule_id in line for line in text.splitlines())


def test_ranks_and_notes_with_verbose():
    plan = build_plan(rail_host(2).build())
    text = plan_text(plan, verbose=1)
    assert "RANK" in text and "note:" in text


def test_empty_plan():
    assert "no variables planned" in plan_text(Plan())
    assert "\\x07" in plan_text(Plan(decisions=[Decision("A", "\x07", "override")]))
