"""Plain value classes for the types a probe builds on every run.

A class declares its fields in `_fields` and writes its own `__init__`; this base gives it
equality, a repr and `replace` over those fields. It is what `dataclasses` would generate,
without its cost at start-up: a dataclass compiles generated source for each class (about
0.3 ms apiece) and its module brings in inspect, ast and dis, together a fifth of a probe's run
on a small host (bench/probe_vs_lstopo.py). Types no probe builds stay dataclasses.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple, TypeVar

_R = TypeVar("_R", bound="Record")


class Record:
    """Equality, repr and `replace` over `_fields`; unhashable, like a dataclass with eq."""

    __slots__ = ()
    _fields: Tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def replace(self: _R, **changes: Any) -> _R:
        """A copy with some fields changed (dataclasses.replace), through the class's __init__."""
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        values: Dict[str, Any] = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return type(self)(**values)


class FrozenRecord(Record):
    """A Record whose fields are set once, in `__init__` through `_set`; hashed by its fields."""

    __slots__ = ()

    def _set(self, *values: Any) -> None:
        for name, value in zip(self._fields, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(getattr(self, name) for name in self._fields))
