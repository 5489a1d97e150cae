"""Read environment settings back out of the files people keep them in.

The inverse of rocetune.envfiles.write, and more: `rocetune lint` reads env files of every format, nccl.conf,
job scripts (`export` lines, `VAR=x cmd` prefixes, `mpirun -x VAR=x`, `docker run -e VAR=x`),
Dockerfile `ENV` lines and the fenced code blocks of Markdown notes; `rocetune explain` reads the
`# rule: <id>` comments of a file rocetune generated. Each format is read the way its consumer
reads it: NCCL takes the rest of an nccl.conf line verbatim (quotes included), a shell removes
quotes and expands `$`, systemd has its own quoting, docker none.

The format is recognised from the content first (a ConfigMap, JSON, fenced code blocks, shell
syntax, Dockerfile instructions); the file name only decides between dialects the content fits
equally, such as plain NAME=value lines (nccl.conf, .deepspeed_env, a shell env file).

Nothing here executes anything. A shell value that depends on expansion (`$VAR`, `$(cmd)`,
backticks, `~`) is marked dynamic and not checked; `$((...))` with only numbers is evaluated the
way the shell would; Jinja placeholders (`{{ x }}`) are marked as templates.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..nccl.conf import conf_lines
from . import PARSE_FORMATS

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_RULE_RE = re.compile(r"^\s*rule:\s*([A-Za-z0-9_.-]+)")
_FORMAT_RE = re.compile(r"rocetune .*\bformat: ([a-z-]+)")


@dataclass
class Assignment:
    key: str
    value: Optional[str]          # what the consumer gets; None when it depends on expansion
    raw: str                      # the value as written
    line: int
    context: str                  # export, assign, prefix, mpirun -x, docker -e, ENV, conf, ...
    rule_id: Optional[str] = None  # from a preceding '# rule: <id>' comment
    dynamic: Optional[str] = None  # why the value is not known statically
    scope: int = 0                # Markdown code block number (duplicates are per scope)


@dataclass
class ParsedFile:
    fmt: str
    assignments: List[Assignment] = field(default_factory=list)
    problems: List[Tuple[int, str, str]] = field(default_factory=list)  # (line, id, message)
    features_hash: Optional[str] = None
    detected: str = ""                  # why this format: forced, content, file name, default
    name_format: Optional[str] = None   # the format the file name alone suggests


_SH_SIGNS = re.compile(
    r"(?m)^#!.*\bsh\b|^\s*(?:export|declare|typeset|readonly|local|unset|source|set|if|then|fi|for|"
    r"while|do|done|case|esac|function|mpirun|srun|torchrun|deepspeed|python3?|exec|cd|echo|env)"
    r"(?:\s|$)|\$\(|\$\{|`|<<")
_CONFIGMAP = re.compile(r"(?m)^\s*(?:-\s+)?kind:\s*[\"']?ConfigMap[\"']?\s*(?:#.*)?$")
_FENCE = re.compile(r"(?m)^\s*(?:```|~~~)")
_DOCKERFILE = re.compile(r"(?m)^\s*(?:FROM|ENV)\s+\S")


def detect(text: str, name: str = "") -> Tuple[str, str, Optional[str]]:
    """(format, why, format the name alone suggests). What the content says wins; the file name
    only breaks ties between dialects the content fits equally (plain NAME=value lines)."""
    by_name = format_by_name(name)
    m = _FORMAT_RE.search("\n".join(text.splitlines()[:6]))
    if m and m.group(1) in PARSE_FORMATS:
        return m.group(1), "rocetune's header", by_name
    content = _format_by_content(text)
    if content and by_name == "markdown" and content[0] in ("sh", "dockerfile"):
        return "markdown", "file name; its prose is not read as shell", by_name
    if content:
        return content[0], content[1], by_name
    if by_name:
        return by_name, "file name", by_name
    return "sh", "default", by_name


def detect_format(text: str, name: str = "") -> str:
    return detect(text, name)[0]


def format_by_name(name: str) -> Optional[str]:
    base = name.rsplit("/", 1)[-1].lower()
    if base.endswith(".json"):
        return "json"
    if base.endswith((".yaml", ".yml")):
        return "k8s"
    if base.endswith((".md", ".markdown")):
        return "markdown"
    if base == ".deepspeed_env":
        return "deepspeed"
    if base.startswith("dockerfile") or base.endswith((".dockerfile", ".containerfile")) \
            or base.startswith("containerfile"):
        return "dockerfile"
    if base.endswith(".conf"):
        return "nccl-conf"
    if base.endswith((".sh", ".bash", ".sbatch", ".slurm")):
        return "sh"
    return None


def _format_by_content(text: str) -> Optional[Tuple[str, str]]:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if (isinstance(doc, dict) and doc.get("kind") == "ConfigMap") or \
                (doc is None and re.search(r"[\"']?kind[\"']?\s*:\s*[\"']ConfigMap", text)):
            return "k8s", "a ConfigMap (kind: ConfigMap)"
        return "json", "a JSON object"
    if _CONFIGMAP.search(text):
        return "k8s", "a ConfigMap (kind: ConfigMap)"
    if _FENCE.search(text):
        return "markdown", "fenced code blocks"
    sh = _SH_SIGNS.search(text)
    if _DOCKERFILE.search(text) and not re.search(r"(?m)^\s*export\s", text):
        return "dockerfile", "FROM/ENV instructions"
    if sh:
        return "sh", f"shell syntax on line {text.count(chr(10), 0, sh.start()) + 1} " \
                     f"({sh.group(0).strip()!r})"
    return None


def parse_text(text: str, fmt: str = "auto", name: str = "") -> ParsedFile:
    """Read `text` as `fmt` ("auto": as its content, then its name, says)."""
    if fmt == "auto":
        fmt, why, by_name = detect(text, name)
    else:
        why, by_name = "forced", format_by_name(name)
    parser = {
        "sh": _parse_sh, "nccl-conf": _parse_conf, "systemd": _parse_systemd,
        "docker": _parse_docker, "deepspeed": _parse_deepspeed, "k8s": _parse_k8s,
        "json": _parse_json, "dockerfile": _parse_sh, "markdown": _parse_markdown,
    }[fmt]
    out = ParsedFile(fmt, detected=why, name_format=by_name)
    parser(text, out)
    m = re.search(r"features sha256:([0-9a-f]{12})", "\n".join(text.splitlines()[:6]))
    out.features_hash = m.group(1) if m else None
    return out


# --- line-oriented formats ---------------------------------------------------------------------

def _rule_of(comment: str) -> Optional[str]:
    m = _RULE_RE.match(comment)
    return m.group(1) if m else None


def _template(value: str) -> Optional[str]:
    return "template placeholder" if ("{{" in value or "{%" in value) else None


def _parse_conf(text: str, out: ParsedFile) -> None:
    """Read as NCCL does (rocetune.nccl.conf), keeping the '# rule:' comments."""
    rules = {}
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            pending_rule = _rule_of(line[1:]) or pending_rule
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
                                          _template(value)))


def _parse_docker(text: str, out: ParsedFile) -> None:
    """docker's --env-file: lines (a final CR dropped), leading blanks skipped, the value verbatim."""
    pending_rule = None
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        body = line.lstrip()
        if not body:
            continue
        if body.startswith("#"):
            pending_rule = _rule_of(body[1:]) or pending_rule
            continue
        key, sep, value = body.partition("=")
        if not key or re.search(r"\s", key):  # what docker's env-file reader refuses
            out.problems.append((lineno, "docker-bad-name", f"{key!r} is not a variable name "
                                                            "(docker refuses the file)"))
            continue
        if not sep:
            continue  # `KEY` alone passes the caller's value through
        out.assignments.append(Assignment(key, value, value, lineno, "docker", pending_rule,
                                          _template(value)))
        pending_rule = None


def _parse_deepspeed(text: str, out: ParsedFile) -> None:
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
        out.assignments.append(Assignment(key, value, value, lineno, "deepspeed", None, _template(value)))


def _parse_systemd(text: str, out: ParsedFile) -> None:
    for key, value, lineno, rule in systemd_env_pairs(text):
        out.assignments.append(Assignment(key, value, value, lineno, "systemd", rule, None))


_NEWLINE = "\n\r"  # systemd ends a line at either (NEWLINE in its sources): a CR is never kept


def systemd_env_pairs(text: str) -> List[Tuple[str, str, int, Optional[str]]]:
    """systemd's EnvironmentFile grammar: '#'/';' comments, single quotes literal, double quotes
    with backslash escapes of `"\\$` and backquote, backslash-newline continues, unquoted values
    trimmed; a carriage return ends a line like a newline does."""
    pairs: List[Tuple[str, str, int, Optional[str]]] = []
    state = "pre_key"
    key: List[str] = []
    val: List[str] = []
    comment: List[str] = []
    last_rule: Optional[str] = None
    line = 1
    start_line = 1
    trail = 0  # trailing whitespace in an unquoted value

    def push() -> None:
        nonlocal key, val, last_rule, trail
        k = "".join(key).strip()
        v = "".join(val)
        if trail:
            v = v[: len(v) - trail]
        if k and NAME_RE.match(k):
            pairs.append((k, v, start_line, last_rule))
        key, val, trail = [], [], 0
        last_rule = None

    i = 0
    while i < len(text):
        c = text[i]
        if state == "pre_key":
            if c in "#;":
                state, comment = "comment", []
            elif c not in " \t\n\r":
                state, key, start_line = "key", [c], line
        elif state == "key":
            if c in _NEWLINE:
                state, key = "pre_key", []
            elif c == "=":
                state = "pre_value"
            else:
                key.append(c)
        elif state == "pre_value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            elif c not in " \t":
                state = "value"
                val.append(c)
        elif state == "value":
            if c in _NEWLINE:
                push()
                state = "pre_key"
            elif c == "\\":
                state, trail = "value_escape", 0
            else:
                trail = trail + 1 if c in " \t" else 0
                val.append(c)
        elif state == "value_escape":
            state = "value"
            if c not in _NEWLINE:
                val.append(c)
        elif state == "single":
            if c == "'":
                state = "pre_value"
            else:
                val.append(c)
        elif state == "double":
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                val.append(c)
        elif state == "double_escape":
            state = "double"
            if c in '"\\`$':
                val.append(c)
            elif c != "\n":
                val.extend(("\\", c))
        elif state == "comment":
            if c in _NEWLINE:
                last_rule = _rule_of("".join(comment)) or last_rule
                state = "pre_key"
            else:
                comment.append(c)
        if c == "\n":
            line += 1
        i += 1
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        push()
    return pairs


def _parse_k8s(text: str, out: ParsedFile) -> None:
    """The `data` of every ConfigMap in the file (one or several YAML documents, or JSON), read
    by PyYAML: block scalars, flow mappings and quoting as Kubernetes reads them. Values must be
    strings: the API server refuses `NCCL_IB_TC: 106` (an integer) in a ConfigMap."""
    import yaml

    from ..model.yamlread import YamlError, load_yaml

    lines = text.split("\n")
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        out.problems.append((mark.line + 1 if mark else 1, "k8s-unreadable", f"not valid YAML: {problem}"))
        return
    configmaps = 0
    for node in docs:
        if node is None:
            continue
        try:  # duplicate keys and leading-zero numbers, with the file's line numbers
            load_yaml("\n" * node.start_mark.line + " " * node.start_mark.column
                      + text[node.start_mark.index:node.end_mark.index])
        except YamlError as exc:
            m = re.match(r"line (\d+): ", str(exc))
            out.problems.append((int(m.group(1)) if m else node.start_mark.line + 1, "k8s-unreadable",
                                 str(exc)[m.end():] if m else str(exc)))
        if not isinstance(node, yaml.MappingNode):
            continue
        fields = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        kind = fields.get("kind")
        if not (isinstance(kind, yaml.ScalarNode) and kind.value == "ConfigMap"):
            continue
        configmaps += 1
        data = fields.get("data")
        if data is None or (isinstance(data, yaml.ScalarNode) and _yaml_type(data) == "null"):
            continue
        if not isinstance(data, yaml.MappingNode):
            out.problems.append((data.start_mark.line + 1, "k8s-unreadable",
                                 "data is not a mapping of names to strings"))
            continue
        for key_node, value_node in data.value:
            _k8s_entry(text, lines, key_node, value_node, out)
    if not configmaps:
        out.problems.append((1, "k8s-no-configmap", "no ConfigMap (kind: ConfigMap) in this file"))


def _yaml_type(node) -> str:
    return node.tag.rsplit(":", 1)[-1]


def _k8s_entry(text: str, lines: List[str], key_node, value_node, out: ParsedFile) -> None:
    import yaml

    line = key_node.start_mark.line + 1
    key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
    if not isinstance(value_node, yaml.ScalarNode):
        out.problems.append((line, "k8s-not-a-string",
                             f"{key}: a {'list' if isinstance(value_node, yaml.SequenceNode) else 'mapping'}, "
                             "not a string: the API server refuses the ConfigMap"))
        return
    raw = text[value_node.start_mark.index:value_node.end_mark.index]
    kind = _yaml_type(value_node)
    value = "" if kind == "null" else value_node.value
    if kind not in ("str", "null"):
        out.problems.append((line, "k8s-not-a-string",
                             f"{key}: {raw} is a YAML {kind}, and ConfigMap data values are strings: "
                             "the API server refuses the ConfigMap"))
    rule = None
    above = lines[line - 2].strip() if line >= 2 else ""
    if above.startswith("#"):
        rule = _rule_of(above[1:])
    out.assignments.append(Assignment(key, value, raw, line, "k8s", rule, _template(value)))


def _parse_json(text: str, out: ParsedFile) -> None:
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


def _parse_markdown(text: str, out: ParsedFile) -> None:
    lines = text.split("\n")
    block: List[str] = []
    start = 0
    fence: Optional[str] = None
    scope = 0
    for lineno, line in enumerate(lines, 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None:
            if m:
                fence, block, start = m.group(1), [], lineno
            continue
        if m and m.group(1).startswith(fence[:3]) and line.strip().strip(fence[0]) == "":
            scope += 1
            sub = ParsedFile("sh")
            _parse_sh("\n".join(block), sub)
            for a in sub.assignments:
                a.line += start
                a.scope = scope
                out.assignments.append(a)
            out.problems.extend((ln + start, pid, msg) for ln, pid, msg in sub.problems)
            fence = None
            continue
        block.append(line)


# --- shell --------------------------------------------------------------------------------------

@dataclass
class Word:
    raw: str
    value: Optional[str]
    line: int
    dynamic: Optional[str] = None


_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")


def _balanced(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index after the `close_ch` matching the `open_ch` at text[i] (quotes respected)."""
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and open_ch == "(":
            k = text.find("'", j + 1)
            j = len(text) if k < 0 else k + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(text)


def _dollar(text: str, i: int) -> Tuple[int, Optional[str], Optional[str]]:
    """At text[i] == '$': (end, static value or None, why dynamic)."""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if text.startswith("$((", i):
        end = _balanced(text, i + 1, "(", ")")
        inner = text[i + 3:end - 2]
        value = arith(inner)
        if value is None:
            return end, None, "shell arithmetic"
        return end, str(value), None
    if nxt == "(":
        return _balanced(text, i + 1, "(", ")"), None, "command substitution"
    if nxt == "{":
        return _balanced(text, i + 1, "{", "}"), None, "variable expansion"
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]", text[i + 1:])
    if m:
        return i + 1 + m.end(), None, "variable expansion"
    return i + 1, "$", None


def shell_commands(text: str) -> Tuple[List[List[Word]], List[Tuple[int, str]], List[Tuple[int, str]]]:
    """Split shell text into simple commands of words. Returns (commands, comments, problems);
    comments are (line, text). Never raises: unbalanced quotes run to the end of the text."""
    commands: List[List[Word]] = []
    comments: List[Tuple[int, str]] = []
    problems: List[Tuple[int, str]] = []
    cur: List[Word] = []
    raw: List[str] = []
    val: List[str] = []
    dyn: Optional[str] = None
    in_word = False
    word_line = 1
    line = 1
    i = 0
    n = len(text)
    heredocs: List[Tuple[str, bool]] = []  # (delimiter, strip leading tabs) of `<<` on this line

    def end_word() -> None:
        nonlocal raw, val, dyn, in_word
        if in_word:
            cur.append(Word("".join(raw), None if dyn else "".join(val), word_line, dyn))
        raw, val, dyn, in_word = [], [], None, False

    def end_command() -> None:
        nonlocal cur
        end_word()
        if cur:
            commands.append(cur)
        cur = []

    def start() -> None:
        nonlocal in_word, word_line
        if not in_word:
            in_word, word_line = True, line

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if not in_word and c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, text[i + 1:j]))
            i = j
            continue
        if c in " \t":  # bash keeps a carriage return: it is part of the word
            end_word()
            i += 1
            continue
        if text.startswith("<<<", i):  # a here-string: the next word is input, not a delimiter
            end_word()
            i += 3
            continue
        if text.startswith("<<", i):
            end_word()
            i = _heredoc_operator(text, i, heredocs)
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op:
            end_command()
            i += len(op)
            if op == "\n":
                line += 1
                if heredocs:
                    i, line = _skip_heredocs(text, i, line, heredocs, problems)
                    heredocs = []
            continue
        start()
        if c == "\\":
            if i + 1 < n:
                raw.append(text[i:i + 2])
                val.append(text[i + 1])
            i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                problems.append((line, "unterminated single quote"))
                j = n
            piece = text[i + 1:j]
            raw.append(text[i:j + 1])
            val.append(piece)
            line += piece.count("\n")
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    if text[j + 1] in '$`"\\':
                        val.append(text[j + 1])
                    elif text[j + 1] == "\n":
                        pass
                    else:
                        val.append(text[j:j + 2])
                    j += 2
                    continue
                if text[j] == "$":
                    end, static, why = _dollar(text, j)
                    if static is None:
                        dyn = dyn or why
                    else:
                        val.append(static)
                    j = end
                    continue
                if text[j] == "`":
                    k = text.find("`", j + 1)
                    j = n if k < 0 else k + 1
                    dyn = dyn or "command substitution"
                    continue
                val.append(text[j])
                j += 1
            if j >= n:
                problems.append((line, "unterminated double quote"))
            raw.append(text[i:j + 1])
            line += text[i:j].count("\n")
            i = j + 1
        elif text.startswith("$'", i):
            end, static, closed = ansi_c_string(text, i)
            if not closed:
                problems.append((line, "unterminated $'...' quote"))
            raw.append(text[i:end])
            val.append(static)
            line += text[i:end].count("\n")
            i = end
        elif text.startswith('$"', i):
            raw.append("$")  # locale translation: read as a double-quoted string
            i += 1
        elif c == "$":
            end, static, why = _dollar(text, i)
            raw.append(text[i:end])
            if static is None:
                dyn = dyn or why
            else:
                val.append(static)
            line += text[i:end].count("\n")
            i = end
        elif c == "`":
            k = text.find("`", i + 1)
            end = n if k < 0 else k + 1
            raw.append(text[i:end])
            dyn = dyn or "command substitution"
            line += text[i:end].count("\n")
            i = end
        elif c == "~" and (not raw or raw[-1].endswith(("=", ":"))):
            raw.append(c)
            dyn = dyn or "tilde expansion"
            i += 1
        else:
            raw.append(c)
            val.append(c)
            i += 1
    end_command()
    return commands, comments, problems


_QUOTE_PIECE = re.compile(r"\\(.)|'([^']*)'|\"([^\"]*)\"")


def _heredoc_operator(text: str, i: int, heredocs: List[Tuple[str, bool]]) -> int:
    """At `<<` or `<<-`: read the delimiter word (quotes removed), note it, return the index after."""
    i += 2
    strip = text.startswith("-", i)
    i += 1 if strip else 0
    while i < len(text) and text[i] in " \t":
        i += 1
    m = re.match(r"""(?:[^\s;&|()<>'"\\]|\\.|'[^']*'|"[^"]*")+""", text[i:])
    word = m.group(0) if m else ""
    delimiter = _QUOTE_PIECE.sub(lambda g: next(x for x in g.groups() if x is not None), word)
    if word:
        heredocs.append((delimiter, strip))
    return i + len(word)


def _skip_heredocs(text: str, i: int, line: int, heredocs: List[Tuple[str, bool]],
                   problems: List[Tuple[int, str]]) -> Tuple[int, int]:
    """Skip the bodies of the here-documents started on the line that just ended: they are
    input to a command, not settings. Returns (index, line) after the last delimiter line."""
    for delimiter, strip in heredocs:
        start = line
        while True:
            if i >= len(text):
                problems.append((start, f"here-document runs to the end of the file (no line {delimiter!r})"))
                return i, line
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            body = text[i:j].lstrip("\t") if strip else text[i:j]
            i, line = j + 1, line + 1
            if body == delimiter:
                break
    return i, line


_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
           "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c_string(text: str, i: int) -> Tuple[int, str, bool]:
    """At `$'`: bash's ANSI-C quoting. Returns (index after the closing quote, value, closed).
    Escapes as bash expands them; a NUL ends the value (bash's strings are C strings)."""
    out: List[str] = []
    j, n = i + 2, len(text)
    ended = False
    while j < n:
        c = text[j]
        if c == "'":
            return j + 1, "".join(out), True
        ch, size = c, 1
        if c == "\\" and j + 1 < n:
            e = text[j + 1]
            ch, size = "\\" + e, 2
            if e in _ANSI_C:
                ch = _ANSI_C[e]
            elif e in "01234567":
                digits = re.match(r"[0-7]{1,3}", text[j + 1:j + 4]).group(0)
                ch, size = chr(int(digits, 8) & 0xFF), 1 + len(digits)
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                m = re.match(r"[0-9a-fA-F]{1,%d}" % width, text[j + 2:j + 2 + width])
                if m:
                    code = int(m.group(0), 16)
                    ch, size = (chr(code) if code <= 0x10FFFF else "\ufffd"), 2 + len(m.group(0))
            elif e == "c" and j + 2 < n:
                ch, size = chr(ord(text[j + 2]) & 0x1F), 3
        if ch == "\0":
            ended = True
        if not ended:
            out.append(ch)
        j += size
    return n, "".join(out), False


_DECLARE = ("export", "declare", "typeset", "readonly", "local")


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
    if value is not None and _template(value):
        why = _template(value)
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


def _parse_sh(text: str, out: ParsedFile) -> None:
    commands, comments, problems = shell_commands(text)
    for ln, msg in problems:
        out.problems.append((ln, "sh-syntax", msg))
    rule_at: Dict[int, str] = {}
    for ln, body in comments:
        r = _rule_of(body)
        if r:
            rule_at[ln] = r
    found: List[Assignment] = []
    for words in commands:
        k = 0
        while k < len(words) and _is_assignment(words[k].raw):
            k += 1
        rest = words[k:]
        ctx = "assign" if not rest else "prefix"
        for w in words[:k]:
            a = _assignment(w, ctx)
            if a:
                found.append(a)
        if not rest:
            continue
        head = rest[0].value or rest[0].raw
        bad = _bad_name(rest[0].raw)
        if bad:
            out.problems.append((rest[0].line, "sh-bad-name",
                                 f"{bad!r} is not a name bash accepts: bash runs "
                                 f"{rest[0].raw.split('=', 1)[0]}=... as a command (not found) and "
                                 "the setting is lost"))
            continue
        if head in _DECLARE:
            _declaration(head, rest[1:], found, out.problems)
            continue
        if head == "env":
            for w in rest[1:]:
                if not _ASSIGN_RE.match(w.raw):
                    break
                a = _assignment(w, "env")
                if a:
                    found.append(a)
        elif head == "ENV" and len(rest) > 1:
            if "=" in rest[1].raw:
                for w in rest[1:]:
                    a = _assignment(w, "ENV")
                    if a:
                        found.append(a)
            elif NAME_RE.match(rest[1].raw):
                vals = rest[2:]
                raw_v = " ".join(w.raw for w in vals)
                dyn = next((w.dynamic for w in vals if w.dynamic), None)
                value = None if dyn else " ".join(w.value or "" for w in vals)
                found.append(Assignment(rest[1].raw, value, raw_v, rest[1].line, "ENV", None, dyn))
        for j, w in enumerate(rest[:-1]):
            if w.raw in ("-x", "-e", "--env"):
                a = _assignment(rest[j + 1], "mpirun -x" if w.raw == "-x" else "docker -e")
                if a:
                    found.append(a)
            elif w.raw.startswith("--env="):
                a = _assignment(Word(w.raw[6:], w.value[6:] if w.value else None, w.line, w.dynamic),
                                "docker -e")
                if a:
                    found.append(a)
    for a in found:
        for ln in (a.line - 1, a.line):
            if ln in rule_at:
                a.rule_id = rule_at[ln]
        out.assignments.append(a)


# --- shell arithmetic ---------------------------------------------------------------------------

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def arith(expr: str) -> Optional[int]:
    """Evaluate `$((expr))` when it holds only integer literals and + - * / % << >> ( )."""
    if not re.fullmatch(r"[\d\s+\-*/%()<>xXa-fA-F]*", expr) or not expr.strip():
        return None

    def number(m: "re.Match[str]") -> str:
        tok = m.group(0)
        if tok[:2].lower() == "0x":
            return str(int(tok, 16))
        if len(tok) > 1 and tok.startswith("0"):
            return str(int(tok, 8))  # the shell reads a leading 0 as octal
        return tok

    try:
        py = re.sub(r"\b0[xX][0-9a-fA-F]+|\b\d+", number, expr)
        tree = ast.parse(py.strip(), mode="eval")
        return _eval(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError, OverflowError):
        return None


def _eval(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        if type(node.op) in _BIN:
            if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64:
                raise ValueError("shift")
            return _BIN[type(node.op)](a, b)
        if isinstance(node.op, ast.Div):
            if b == 0:
                raise ZeroDivisionError
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if isinstance(node.op, ast.Mod):
            if b == 0:
                raise ZeroDivisionError
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
    raise ValueError("unsupported")
