"""The node's own settings: one file, /etc/rocetune/doctor.yml under the root, read by every verb
(env, probe, explain, doctor and its gate) and so by every caller (the boot unit, the Slurm
wrappers, the doctor timer, the fleet play) without an option on any command line.

    version: 1
    nccl_version: "2.20.5"          # the NCCL the jobs load (what --nccl-version gives)
    env:
      set: {NCCL_IB_QPS_PER_CONNECTION: 4}   # what --set gives
      unset: [NCCL_IB_GID_INDEX]             # what --unset gives
      files: [/shared/jobs/nccl.env]         # other env files jobs source: doctor holds them to the node
    skip: [...]                     # the check configuration (rocetune.model.check_config)
    grade: [...]

A value declared here is the node's plan, so the env it gives is never drift; the command line
still wins over it. The rocetune_env role writes the file (rocetune_env_doctor_config,
rocetune_env_nccl_version, rocetune_env_overrides).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Optional, Tuple

from ..errors import ExitCode, RocetuneError
from .plan import Overrides

if TYPE_CHECKING:  # pragma: no cover
    from .check_config import CheckConfig

# The file's path on the node (rocetune.model.check_config.DEFAULT_PATH, which that module, and
# the dataclasses it uses, is not imported for: a probe without the file never needs them).
PATH = "/etc/rocetune/doctor.yml"
# An override's origin as the env file records it: the node's path, wherever the file was read
# from (the agent reads a private copy before the role installs it), so every writer gives the
# same bytes.
ORIGIN_SET = f"{PATH}: env.set"
ORIGIN_UNSET = f"{PATH}: env.unset"


class NodeSettings:
    """The node's settings; the defaults are a node without the file."""

    def __init__(
        self,
        source: Optional[str] = None,
        nccl_version: Optional[str] = None,
        overrides: Optional[Overrides] = None,
        env_files: Tuple[str, ...] = (),
        checks: Optional[CheckConfig] = None,
    ) -> None:
        self.source = source  # where it was read; None: no file
        self.nccl_version = nccl_version
        self.overrides = overrides if overrides is not None else Overrides()
        self.env_files = env_files
        self._checks = checks

    @property
    def checks(self) -> CheckConfig:
        from .check_config import CheckConfig

        return self._checks if self._checks is not None else CheckConfig()


def _error(message: str) -> RocetuneError:
    return RocetuneError(message, hint="see docs/doctor.md (the node settings file)", code=ExitCode.INPUT)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def load_text(text: str, where: str) -> NodeSettings:
    from .check_config import validate
    from .yamlread import YamlError, load_yaml

    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise _error(f"{where}: {exc}") from None
    checks = validate(doc, where)  # the whole document against its schema, skip/grade read
    doc = doc or {}
    version = doc.get("nccl_version")
    if version is not None and not (isinstance(version, str) and re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version)):
        raise _error(f"{where}: nccl_version: {version!r} is not a release X.Y.Z (e.g. 2.21.5)")
    env = doc.get("env") or {}
    overrides = Overrides()
    try:
        for key, value in sorted((env.get("set") or {}).items()):
            overrides.add_set(key, _value(value), ORIGIN_SET)
        for key in env.get("unset") or []:
            if key in overrides.set:
                raise _error(f"{where}: env: {key} is both set and unset")
            overrides.add_unset(key, ORIGIN_UNSET)
    except RocetuneError as exc:
        message = exc.message.replace(ORIGIN_SET, "env.set").replace(ORIGIN_UNSET, "env.unset")
        raise _error(message if message.startswith(where) else f"{where}: {message}") from None
    files = tuple(env.get("files") or ())
    bad = [f for f in files if not os.path.isabs(f) or "\0" in f or "/../" in f + "/"]
    if bad:
        raise _error(f"{where}: env.files: {bad[0]!r} is not an absolute path on the node")
    return NodeSettings(where, version, overrides, files, checks)


def load_file(path: str, option: str = "--doctor-config") -> NodeSettings:
    from .check_config import MAX_BYTES
    from .expect import read_small_text

    return load_text(read_small_text(path, option, MAX_BYTES), path)
