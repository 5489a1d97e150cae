"""Shared setup for the parser tests: where the recorded tool outputs live, and how to read them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

try:
    import rocetune  # noqa: F401
except ImportError:  # not installed yet: use the source tree
    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "src"))

from rocetune.probe.parsers._common import BUG_PREFIX  # noqa: E402

#: Real tool outputs with provenance (tests/fixtures/corpus/SOURCES.md).
CORPUS_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"

TOPO_FILES = sorted(CORPUS_DIR.glob("*/topo.txt"))


def read_corpus(rel: str) -> str:
    """A corpus file as text, byte-exact (no newline translation)."""
    return (CORPUS_DIR / rel).read_bytes().decode("utf-8")


def pytest_generate_tests(metafunc):
    if "topo_file" in metafunc.fixturenames:
        metafunc.parametrize("topo_file", TOPO_FILES, ids=[p.parent.name for p in TOPO_FILES])


@pytest.fixture
def corpus():
    """read_corpus as a fixture: corpus('h20-8gpu-cx6lx-2port-only/ibstat.txt')."""
    return read_corpus


@pytest.fixture
def assert_not_bug():
    """Check that a ParseError is about the input, not a parser crash turned into ParseError."""

    def check(exc):
        assert BUG_PREFIX not in str(exc), f"parser bug: {exc}"

    return check
