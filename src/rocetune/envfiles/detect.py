"""Which env dialect a file is written in: the content first (a ConfigMap, JSON, fenced code
blocks, shell syntax, Dockerfile instructions); the file name only decides between dialects the
content fits equally, such as plain NAME=value lines (nccl.conf, .deepspeed_env, a shell env file)."""

from __future__ import annotations

import json
import re
from typing import Optional, Tuple

from . import PARSE_FORMATS

_FORMAT_RE = re.compile(r"rocetune .*\bformat: ([a-z-]+)")
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
