"""The NAME=value line dialects, each read the way its consumer reads it: nccl.conf as NCCL does
(the rest of the line verbatim, quotes included), docker's --env-file (no quoting at all), and
DeepSpeed's .deepspeed_env (no comments, no blank lines)."""

from __future__ import annotations

import re

from ..nccl.conf import conf_lines
from .parsed import NAME_RE, Assignment, ParsedFile, rule_of, template_reason


def read_conf(text: str, out: ParsedFile) -> None:
    """Read as NCCL does (rocetune.nccl.conf), keeping the '# rule:' comments."""
    rules = {}
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            pending_rule = rule_of(line[1:]) or pending_rule
        elif line.strip():
            rules[lineno] = pending_rule
            pending_rule = None
    for lineno, key, value in conf_lines(text):
        if value is None:
            out.problems.append((lineno, "conf-ignored-line", "no '=': NCCL ignores this line"))
            continue
        if not NAME_RE.match(key):
            stripped = key.strip()
            if NAME_RE.match(stripped):
                out.problems.append((lineno, "conf-whitespace",
                                     f"spaces around {stripped!r}: NCCL takes {key!r} (spaces "
                                     "included) as the name, so the setting is lost"))
            else:
                out.problems.append((lineno, "conf-bad-name", f"{key!r} is not a variable name"))
            continue
        out.assignments.append(Assignment(key, value, value, lineno, "conf", rules.get(lineno),
                                          template_reason(value)))


def read_docker(text: str, out: ParsedFile) -> None:
    """docker's --env-file: lines (a final CR dropped), leading blanks skipped, the value verbatim."""
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        body = line.lstrip()
        if not body:
            continue
        if body.startswith("#"):
            pending_rule = rule_of(body[1:]) or pending_rule
            continue
        key, sep, value = body.partition("=")
        if not key or re.search(r"\s", key):  # what docker's env-file reader refuses
            out.problems.append((lineno, "docker-bad-name", f"{key!r} is not a variable name "
                                                            "(docker refuses the file)"))
            continue
        if not sep:
            continue  # `KEY` alone passes the caller's value through
        out.assignments.append(Assignment(key, value, value, lineno, "docker", pending_rule,
                                          template_reason(value)))
        pending_rule = None


def read_deepspeed(text: str, out: ParsedFile) -> None:
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            if lineno < len(text.split("\n")):
                out.problems.append((lineno, "deepspeed-blank-line",
                                     "blank line: DeepSpeed's launcher fails on a line without '='"))
            continue
        key, sep, value = line.partition("=")
        if not sep:
            out.problems.append((lineno, "deepspeed-no-equals",
                                 "no '=': DeepSpeed's launcher fails on this line (comments are not allowed)"))
            continue
        key, value = key.strip(), value.strip()
        if not NAME_RE.match(key):
            out.problems.append((lineno, "deepspeed-bad-name", f"{key!r} is not a variable name"))
            continue
        out.assignments.append(Assignment(key, value, value, lineno, "deepspeed", None, template_reason(value)))
