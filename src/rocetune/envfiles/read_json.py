"""A flat JSON object of variables (`rocetune env --format json`)."""

from __future__ import annotations

import json

from .parsed import Assignment, ParsedFile


def read_json(text: str, out: ParsedFile) -> None:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        out.problems.append((1, "json-invalid", f"not JSON: {exc}"))
        return
    if not isinstance(doc, dict):
        out.problems.append((1, "json-invalid", "expected a flat object of variables"))
        return
    for key in sorted(doc):
        v = doc[key]
        value = v if isinstance(v, str) else json.dumps(v)
        out.assignments.append(Assignment(key, value, value, 1, "json", None, None))
