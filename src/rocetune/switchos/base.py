"""What a switch OS module provides: the SwitchOs type every module of rocetune.switchos defines
one of (as `OS`), the choices it takes, and what its renderer returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ExitCode, RocetuneError
from ..model.switch_qos import SwitchIntent, SwitchQos
from ..pkgdata import package_data


@dataclass(frozen=True)
class Choice:
    """An OS-specific setting of `qos render`: --NAME (dashes for underscores), its values and
    the sentence saying what each means. `default` None: the renderer decides, or refuses."""

    name: str
    values: Tuple[str, ...]
    help: str
    default: Optional[str] = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass
class Rendered:
    """A switch configuration and what the reader must know about it."""

    text: str
    assumes: List[str] = field(default_factory=list)   # the buffer model, platform family, release
    bound: str = ""                                     # exactly what the configuration binds, and to what
    warnings: List[str] = field(default_factory=list)


class SwitchOs:
    """One switch network OS. A module of rocetune.switchos defines `OS = Subclass()`; the registry
    finds it, and `qos render`, `qos check`, the Ansible module and the docs take it from there."""

    name = ""              # the --os value
    title = ""             # how the OS is named in prose
    suffix = ""            # the rendered file's suffix (.json, .nvue, .cfg)
    order = 50             # where it is listed
    port_example = ""      # port names as the OS writes them
    reads = ""             # the outputs `qos check` takes, in words (one sentence)
    priority_word = "traffic class"
    comments = True        # the rendered file can say what it assumes (SONiC's JSON cannot)
    choices: Tuple[Choice, ...] = ()

    def looks_like(self, text: str) -> bool:  # pragma: no cover - every OS defines it
        raise NotImplementedError

    def parse(self, text: Any, source: str) -> SwitchQos:  # pragma: no cover
        raise NotImplementedError

    def render(self, intent: SwitchIntent, ports: Sequence[str], chosen: Mapping[str, str],
               fabric: Sequence[str] = ()) -> Rendered:
        """`ports` face the hosts, `fabric` other switches (a leaf's uplinks, a spine's ports): both
        get the plan's classes, PFC, queues and watchdog; the plan's cable length (the hosts'
        cables) sizes the headroom of `ports` only."""
        raise NotImplementedError  # pragma: no cover

    def choice(self, chosen: Mapping[str, str], name: str) -> Optional[str]:
        """The value of this OS's choice `name` (checked against its values), else its default."""
        spec = next(c for c in self.choices if c.name == name)
        value = chosen.get(name)
        if value is None:
            return spec.default
        if value not in spec.values:
            raise RocetuneError(f"{spec.flag} {value!r}: not one of {', '.join(spec.values)} for {self.title}",
                                hint=spec.help, code=ExitCode.USAGE)
        return value


def template(name: str):
    """A jinja2 template of rocetune/switchos/templates (jinja2 is a controller dependency)."""
    try:
        import jinja2
    except ImportError:
        raise RocetuneError("rendering switch configurations needs jinja2, which is not installed here",
                            hint="pip install jinja2 (on the controller: pip install rocetune)",
                            code=ExitCode.INPUT) from None
    try:
        source = package_data("rocetune.switchos", f"templates/{name}").decode("utf-8")
    except OSError:
        raise RocetuneError(f"the switch template {name} is missing from this installation",
                            hint="reinstall rocetune (the templates are package data)",
                            code=ExitCode.INTERNAL) from None
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    return env.from_string(source)


def refuse(message: str, hint: str) -> RocetuneError:
    """A plan, or a choice, this OS's configuration cannot make lossless: said, never rendered."""
    return RocetuneError(message, hint=hint, code=ExitCode.USAGE)


def runs(values: Sequence[int]) -> List[Tuple[int, int]]:
    """Consecutive runs of sorted integers: [0, 1, 2, 5] -> [(0, 2), (5, 5)]."""
    out: List[Tuple[int, int]] = []
    for v in sorted(values):
        if out and v == out[-1][1] + 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


def listed(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def described(chosen: Dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(chosen.items()))
