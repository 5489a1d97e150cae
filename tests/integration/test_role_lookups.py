"""Role vars and defaults find their files through role_path.

ansible-core 2.14 (Debian 12's, the one a first-boot node runs with the local connection)
templates a role's vars where a relative `file` or `template` lookup no longer searches the
role's own files/ and templates/: such a lookup then fails with "could not be found". An
absolute path built from role_path is found by every supported release.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VAR_FILES = sorted(
    p for role in (REPO / "roles").iterdir() for sub in ("vars", "defaults")
    for p in (role / sub).glob("*.yml")
)
# lookup('ansible.builtin.file'|'ansible.builtin.template', '<a literal path>')
RELATIVE = re.compile(r"""lookup\(\s*'(?:ansible\.builtin\.)?(file|template)'\s*,\s*'([^'/][^']*)'""")


def test_there_are_role_var_files():
    assert any(p.parent.name == "vars" for p in VAR_FILES)


@pytest.mark.parametrize("path", VAR_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_lookups_in_role_vars_use_role_path(path: Path):
    relative = [m.group(0) for m in RELATIVE.finditer(path.read_text(encoding="utf-8"))]
    assert not relative, f"{path.relative_to(REPO)}: build the path from role_path: {relative}"


def test_the_pattern_catches_a_relative_lookup():
    assert RELATIVE.search("{{ lookup('ansible.builtin.template', 'x.service.j2') }}")
    assert not RELATIVE.search("{{ lookup('ansible.builtin.template', role_path ~ '/templates/x.j2') }}")
