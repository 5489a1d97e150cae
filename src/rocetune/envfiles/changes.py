"""What tells rocetune's env files apart from anyone else's, and what changed between two texts
of one dialect."""

from __future__ import annotations

from typing import Dict, List

# The first bytes of every file rocetune writes: a file without them is someone else's.
MANAGED_MARKER = "# rocetune "


def env_changes(old_text: str, new_text: str, fmt: str) -> List[str]:
    """What differs between two env texts of one dialect, one "KEY old -> new" per variable
    (`unset` for a side without it), in name order."""
    from .read import parse_text

    def values(text: str) -> Dict[str, str]:
        return {a.key: a.value if a.value is not None else a.raw
                for a in parse_text(text, fmt).assignments}

    old, new = values(old_text), values(new_text)
    return [f"{key} {old.get(key, 'unset')} -> {new.get(key, 'unset')}"
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
