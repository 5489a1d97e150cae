"""Lint and explain's readers on large hostile input: every result still right, in one pass.

Timing lives in bench/lint_scale.py; these check what a user sees on the same shapes of input.
"""

from __future__ import annotations

import random

import pytest

from rocetune.envfiles.read import parse_text
from rocetune.lint.checks import MAX_LISTED, lint_text
from rocetune.nccl.catalog import Catalog, edit_distance, load_catalog

MB = 1 << 20


@pytest.mark.parametrize("name, fmt", [("job.sh", "sh"), ("nccl.conf", "nccl-conf"), ("x", "sh")])
def test_a_megabyte_of_blank_lines_reads_as_its_name_says(name, fmt):
    parsed = parse_text("\n" * MB, "auto", name)
    assert (parsed.fmt, parsed.assignments, parsed.problems) == (fmt, [], [])


def test_shell_syntax_after_a_megabyte_of_blank_lines_is_found_on_its_line():
    parsed = parse_text("\n" * MB + "  export NCCL_IB_HCA=mlx5_0\n", "auto", "env")
    assert parsed.fmt == "sh"
    assert parsed.detected == f"shell syntax on line {MB + 1} ('export')"
    assert [(a.key, a.value, a.line) for a in parsed.assignments] == [("NCCL_IB_HCA", "mlx5_0", MB + 1)]


@pytest.mark.parametrize("text, fmt", [
    ("\n" * MB + "FROM ubuntu\nENV NCCL_DEBUG=INFO\n", "dockerfile"),
    ("\n" * MB + "```sh\nexport NCCL_DEBUG=INFO\n```\n", "markdown"),
    ("\n" * MB + "kind: ConfigMap\ndata:\n  NCCL_DEBUG: INFO\n", "k8s"),
    ("  \n" * (MB // 3) + "kind: ConfigMap\ndata:\n  NCCL_DEBUG: INFO\n", "k8s"),
])
def test_each_dialect_is_still_recognised_after_blank_lines(text, fmt):
    parsed = parse_text(text, "auto", "notes")
    assert parsed.fmt == fmt
    assert [(a.key, a.value) for a in parsed.assignments] == [("NCCL_DEBUG", "INFO")]


def test_a_deepspeed_env_of_blank_lines_names_each_one():
    parsed = parse_text("\n" * 100000, "auto", ".deepspeed_env")
    assert parsed.fmt == "deepspeed"
    # the last line is the empty text after the final newline, not a blank line of the file
    assert [line for line, _, _ in parsed.problems] == list(range(1, 100001))


def test_rocetune_header_is_found_and_a_long_first_line_is_not_one():
    header = "# rocetune 0.1.0 format: nccl-conf  NCCL/UCX environment for h\n# features sha256:0123456789ab\n"
    parsed = parse_text(header + "\n" * MB + "NCCL_DEBUG=INFO\n", "auto", "env.sh")
    assert (parsed.fmt, parsed.detected, parsed.features_hash) == ("nccl-conf", "rocetune's header", "0123456789ab")
    parsed = parse_text("# " + "rocetune " * 100000 + "format: nccl-conf\nNCCL_DEBUG=INFO\n", "auto", "env.sh")
    assert parsed.detected != "rocetune's header"


def test_twenty_thousand_unknown_names_are_each_counted_and_the_first_listed():
    n = 20000
    typo = "NCCL_IB_GID_INDX"
    text = "".join(f"NCCL_UNKNOWN_VAR_{i:06d}=1\n" for i in range(n)) + f"{typo}=3\n" * 2
    parsed, found = lint_text(text, "big.conf")
    assert len(parsed.assignments) == n + 2
    unknown = [f for f in found if f.id == "unknown-name"]
    listed, more = unknown[:MAX_LISTED], unknown[MAX_LISTED:]
    assert [f.key for f in listed] == [f"NCCL_UNKNOWN_VAR_{i:06d}" for i in range(MAX_LISTED)]
    assert len(more) == 1 and more[0].message.startswith(f"{n - MAX_LISTED} more unknown-name finding(s)")
    assert more[0].line == MAX_LISTED + 1 and more[0].severity == "warning"
    misspelled = [f for f in found if f.id == "misspelled-name"]
    assert [(f.line, f.fix) for f in misspelled] == [(n + i, "did you mean NCCL_IB_GID_INDEX?") for i in (1, 2)]


def _brute_force(cat: Catalog, name: str):
    best = min(((edit_distance(name, c), c) for c in cat.variables if abs(len(c) - len(name)) <= 2),
               default=None)
    limit = 1 if len(name) < 10 else 2
    return (best[1], best[0]) if best is not None and best[0] <= limit else None


def test_suggestions_are_those_of_measuring_every_variable():
    cat = load_catalog()
    names = sorted(cat.variables)
    rng = random.Random(7)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
    tried = ["", "N", "NCCL", "NCCL_", "NCCL_IB", "NCCL_P2P", "X" * 10000, "NCCL_" + "A" * 60]
    for _ in range(1000):
        w = list(rng.choice(names))
        for _ in range(rng.randint(0, 3)):
            i = rng.randrange(len(w))
            op = rng.randrange(4)
            if op == 0:
                w.insert(i, rng.choice(alphabet))
            elif op == 1 and len(w) > 1:
                del w[i]
            elif op == 2:
                w[i] = rng.choice(alphabet)
            elif i + 1 < len(w):
                w[i], w[i + 1] = w[i + 1], w[i]
        tried.append("".join(w))
    fresh = Catalog(cat.doc)
    got = [fresh.suggest(t) for t in tried]
    assert got == [_brute_force(cat, t) for t in tried]
    assert sum(g is not None for g in got) > 600  # most typos found, so the comparison says something
    assert got == [fresh.suggest(t) for t in tried]  # the kept answers are the same
