"""json: a flat JSON object of variables, sorted by name."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

from ..parsed import Assignment, ParsedFile
from .base import Dialect

if TYPE_CHECKING:  # pragma: no cover
    from ...model.plan import Plan

NAME = "json"


def render(plan: Plan, features: dict) -> str:
    return json.dumps(plan.env, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read(text: str, out: ParsedFile) -> None:
    from ...model.jsonread import load_json

    try:
        doc = load_json(text)
    except ValueError as exc:
        out.problems.append((1, "json-invalid", f"not JSON: {exc}"))
        return
    if not isinstance(doc, dict):
        out.problems.append((1, "json-invalid", "expected a flat object of variables"))
        return
    for key in sorted(doc):
        v = doc[key]
        value = v if isinstance(v, str) else json.dumps(v)
        out.assignments.append(Assignment(key, value, value, 1, NAME, None, None))


def detect(text: str) -> Optional[str]:
    return "a JSON object" if text.lstrip().startswith("{") else None


DIALECT = Dialect(NAME, listed=70, precedence=20, read=read, render=render,
                  file_patterns=("*.json",), detect=detect)
