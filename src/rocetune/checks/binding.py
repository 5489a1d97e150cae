"""Where a check is bound: every function that makes findings names, with `@emits`, the check ids
it makes, and the finding factories refuse any other.

`emits(*ids)` fails at import for an id no check declares, records the function and its ids in
one registry (`bound()`, what the registry test reads), and wraps the function so that, while it
runs, its ids are the active binding. `checks.finding` (and so lint's `add`, the rules'
`ctx.finding` and doctor's `_finding`, which all end there) refuses, while a bound function runs,
an id the innermost binding does not name: a programming error (`UnboundCheck`). A function
that only relays findings other functions chose (lint's `add`, a summary of counted findings)
carries no binding and so leaves the caller's in force.

The cost on the hot path is one context-variable set and reset per bound call and one lookup per
finding; a context variable rather than a global keeps the binding right across threads."""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Iterator, Tuple, TypeVar

from .registry import _ACTIVE, get

F = TypeVar("F", bound=Callable[..., Any])


# inspect.CO_GENERATOR, without importing inspect on the probe's start-up path
_CO_GENERATOR = 0x20

_BOUND: Dict[str, Tuple[str, ...]] = {}  # "module.qualname" -> the ids it binds, as written


def emits(*ids: str) -> Callable[[F], F]:
    """Bind the decorated function to the check ids it makes findings of."""
    if not ids:
        raise ValueError("emits() names at least one check id")
    for check_id in ids:
        get(check_id)  # declared, with its page; UnknownCheck at import otherwise
    allowed = frozenset(ids)

    def bind(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"
        _BOUND[name] = tuple(ids)
        active = (name, allowed)
        if getattr(fn, "__code__", None) is not None and fn.__code__.co_flags & _CO_GENERATOR:
            @functools.wraps(fn)
            def stepped(*args: Any, **kwargs: Any) -> Iterator[Any]:
                # the binding holds while the generator runs, not while it waits for its consumer
                gen = fn(*args, **kwargs)
                while True:
                    token = _ACTIVE.set(active)
                    try:
                        item = next(gen)
                    except StopIteration:
                        return
                    finally:
                        _ACTIVE.reset(token)
                    yield item
            wrapper: Callable[..., Any] = stepped
        else:
            @functools.wraps(fn)
            def called(*args: Any, **kwargs: Any) -> Any:
                token = _ACTIVE.set(active)
                try:
                    return fn(*args, **kwargs)
                finally:
                    _ACTIVE.reset(token)
            wrapper = called
        wrapper.emits = allowed  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]
    return bind


def bound() -> Dict[str, Tuple[str, ...]]:
    """Every bound function ("module.qualname") and the ids it binds, of the modules imported."""
    return dict(_BOUND)
