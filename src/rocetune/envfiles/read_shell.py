"""The settings a shell script (or a Dockerfile's ENV lines) makes: plain and prefix assignments,
`export`/`declare` arguments, `env VAR=x cmd`, `mpirun -x VAR=x`, `docker run -e VAR=x`, with the
`# rule:` comment above each and the names bash would refuse."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .parsed import NAME_RE, Assignment, ParsedFile, rule_of, template_reason
from .shell_lexer import Word, shell_commands

_DECLARE = ("export", "declare", "typeset", "readonly", "local")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_ARRAY_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\[[^\]]*\]\+?=")
# What a person meant as NAME=value but bash does not take as an assignment (`NCCL_IB_ÄHCA=x`).
_BAD_NAME_RE = re.compile(r"^([^\W\d-][\w.-]*|\d[\w.-]*[^\W\d][\w.-]*)\+?=", re.UNICODE)


def _is_assignment(raw: str) -> bool:
    return bool(_ASSIGN_RE.match(raw) or _ARRAY_ASSIGN_RE.match(raw))


def _bad_name(raw: str) -> Optional[str]:
    m = _BAD_NAME_RE.match(raw)
    if m and not _is_assignment(raw) and not NAME_RE.match(m.group(1)):
        return m.group(1)
    return None


def _assignment(word: Word, context: str) -> Optional[Assignment]:
    m = _ASSIGN_RE.match(word.raw)
    if not m:
        return None
    key, append = m.group(1), m.group(2)
    raw_value = word.raw[m.end():]
    value = word.value[m.end():] if word.value is not None else None
    why = word.dynamic
    if value is not None and template_reason(value):
        why = template_reason(value)
    if append:
        why = why or "append (+=) to the previous value"
    return Assignment(key, value if why is None else None, raw_value, word.line, context, None, why)


def _options(words: List[Word]) -> Tuple[set, List[Word]]:
    """Leading `-xn`/`+x` options of a declaration command: ({('-', 'x'), ...}, the rest)."""
    opts = set()
    k = 0
    while k < len(words) and words[k].raw[:1] in ("-", "+") and len(words[k].raw) > 1:
        if words[k].raw == "--":
            k += 1
            break
        opts |= {(words[k].raw[0], ch) for ch in words[k].raw[1:]}
        k += 1
    return opts, words[k:]


def _declaration(head: str, words: List[Word], found: List[Assignment],
                 problems: List[Tuple[int, str, str]]) -> None:
    """`export`/`declare`/... arguments. `export -n` and `declare +x` take names out of the
    environment (not a setting); `-f` names functions; `declare -n` makes a name reference."""
    opts, args = _options(words)
    if ("-", "f") in opts or (head != "export" and ("-", "n") in opts):
        return
    unexport = ("-", "n") in opts if head == "export" else ("+", "x") in opts
    for w in args:
        bad = _bad_name(w.raw)
        if bad:
            problems.append((w.line, "sh-bad-name",
                             f"{bad!r} is not a name bash accepts: {head} refuses it ('not a valid "
                             "identifier') and the setting is lost"))
            continue
        if unexport:
            name = w.raw.split("=", 1)[0].rstrip("+")
            if NAME_RE.match(name):
                problems.append((w.line, "sh-unexported",
                                 f"`{head} {'-n' if head == 'export' else '+x'} {name}` takes {name} out "
                                 "of the environment: programs started from this shell do not see it"))
            continue
        a = _assignment(w, "export")
        if a:
            found.append(a)


def read_sh(text: str, out: ParsedFile) -> None:
    commands, comments, problems = shell_commands(text)
    for ln, msg in problems:
        out.problems.append((ln, "sh-syntax", msg))
    rule_at: Dict[int, str] = {}
    for ln, body in comments:
        r = rule_of(body)
        if r:
            rule_at[ln] = r
    found: List[Assignment] = []
    for words in commands:
        _read_command(words, found, out.problems)
    for a in found:
        for ln in (a.line - 1, a.line):
            if ln in rule_at:
                a.rule_id = rule_at[ln]
        out.assignments.append(a)


def _add(found: List[Assignment], a: Optional[Assignment]) -> None:
    if a:
        found.append(a)


def _read_command(words: List[Word], found: List[Assignment], problems: List[Tuple[int, str, str]]) -> None:
    """The settings of one simple command: leading assignments, then what its command word
    (export/declare, env, a Dockerfile's ENV, mpirun -x, docker -e/--env) sets."""
    k = 0
    while k < len(words) and _is_assignment(words[k].raw):
        k += 1
    rest = words[k:]
    ctx = "assign" if not rest else "prefix"
    for w in words[:k]:
        _add(found, _assignment(w, ctx))
    if not rest:
        return
    head = rest[0].value or rest[0].raw
    bad = _bad_name(rest[0].raw)
    if bad:
        problems.append((rest[0].line, "sh-bad-name",
                         f"{bad!r} is not a name bash accepts: bash runs "
                         f"{rest[0].raw.split('=', 1)[0]}=... as a command (not found) and "
                         "the setting is lost"))
        return
    if head in _DECLARE:
        _declaration(head, rest[1:], found, problems)
        return
    if head == "env":
        for w in rest[1:]:
            if not _ASSIGN_RE.match(w.raw):
                break
            _add(found, _assignment(w, "env"))
    elif head == "ENV" and len(rest) > 1:
        _dockerfile_env(rest, found)
    _launcher_options(rest, found)


def _dockerfile_env(rest: List[Word], found: List[Assignment]) -> None:
    """`ENV A=1 B=2`, or the older `ENV NAME value words`."""
    if "=" in rest[1].raw:
        for w in rest[1:]:
            _add(found, _assignment(w, "ENV"))
    elif NAME_RE.match(rest[1].raw):
        vals = rest[2:]
        raw_v = " ".join(w.raw for w in vals)
        dyn = next((w.dynamic for w in vals if w.dynamic), None)
        value = None if dyn else " ".join(w.value or "" for w in vals)
        found.append(Assignment(rest[1].raw, value, raw_v, rest[1].line, "ENV", None, dyn))


def _launcher_options(rest: List[Word], found: List[Assignment]) -> None:
    """mpirun's `-x NAME=value`, docker's `-e`/`--env NAME=value` and `--env=NAME=value`."""
    for j, w in enumerate(rest[:-1]):
        if w.raw in ("-x", "-e", "--env"):
            _add(found, _assignment(rest[j + 1], "mpirun -x" if w.raw == "-x" else "docker -e"))
        elif w.raw.startswith("--env="):
            _add(found, _assignment(Word(w.raw[6:], w.value[6:] if w.value else None, w.line, w.dynamic),
                                    "docker -e"))
