"""A switch output file read with the parser its kind (given, or recognised from the content) names."""

from __future__ import annotations

from typing import Optional

from ...errors import ExitCode, RocetuneError
from ...model.jsonread import load_json
from ...model.switch_qos import SwitchQos
from . import switch_eos, switch_nvue, switch_sonic

PARSERS = {"sonic": switch_sonic, "nvue": switch_nvue, "eos": switch_eos}


def read_switch(path: str, kind: Optional[str] = None) -> SwitchQos:
    from ...errors import HostReadError
    from ...hostfs import read_input
    from ...model.jsonread import MAX_DOCUMENT_BYTES

    try:
        raw = read_input(path, MAX_DOCUMENT_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"--switch {path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    except FileNotFoundError:
        raise RocetuneError(f"--switch {path}: no such file", code=ExitCode.INPUT) from None
    except OSError as exc:
        raise RocetuneError(f"--switch {path}: cannot read: {exc.strerror or exc}", code=ExitCode.INPUT) from None
    text = raw.decode("utf-8", errors="replace")
    if kind is not None and kind not in PARSERS:
        raise RocetuneError(f"--switch-kind {kind!r}: not one of {', '.join(PARSERS)}", code=ExitCode.USAGE)
    kind = kind or detect(text)
    if kind is None:
        raise RocetuneError(f"--switch {path}: not recognised as SONiC config_db JSON, `nv show qos roce` "
                            "or an EOS running-config", hint="name it with --switch-kind sonic|nvue|eos",
                            code=ExitCode.INPUT)
    return PARSERS[kind].parse(text, path)


def detect(text: str) -> Optional[str]:
    if text.lstrip().startswith("{"):
        try:
            doc = load_json(text)
        except ValueError:
            return "sonic"  # JSON that does not parse: the SONiC reader names the error
        return "sonic" if switch_sonic.looks_like(doc) else None
    if switch_nvue.looks_like(text):
        return "nvue"
    if switch_eos.looks_like(text):
        return "eos"
    return None
