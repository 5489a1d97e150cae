"""Unit tests of the roles' module_utils: the decisions, fed recorded tool outputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
QOS_FIXTURES = REPO / "tests" / "fixtures" / "qos"


def load_module_utils(role: str, name: str):
    """Import the collection's plugins/module_utils/<name>.py (the code of `role`'s modules; ""
    for code several roles share) as a plain module (no Ansible needed)."""
    path = REPO / "plugins" / "module_utils" / f"{name}.py"
    if str(path.parent) not in sys.path:  # a module_utils file that also runs alone imports its siblings
        sys.path.append(str(path.parent))
    spec = importlib.util.spec_from_file_location(f"rocetune_role_{role}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module
