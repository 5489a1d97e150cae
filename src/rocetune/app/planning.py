"""Plan a host's env: the plan of one Features document for one request, rendered in any
dialect with the files it points at; then, as a step of its own, the plan held to what the node
should be (its expectations)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

from ..checks import declare, emits
from ..errors import RocetuneError
from ..model.env_output import EnvResult, PlannedFile
from ..model.plan import Overrides, Plan
from ..model.qos import QosPlan
from ..model.record import FrozenRecord
from ..rules.base import DEFAULT_TOPO_PATH, TOPO_FILE_NAME
from .inputs import expectations, node_settings, overrides, qos_plan

if TYPE_CHECKING:  # pragma: no cover
    from ..model.expect import Expectations

DEFAULT_ENV_DIR = os.path.dirname(DEFAULT_TOPO_PATH)


class PlanRequest(FrozenRecord):
    """What a verb (or the agent) asks to plan: the host root (where its QoS plan file lives) and
    the user's choices. Every verb maps its options onto one of these; nothing plans otherwise."""

    root: str
    config: Optional[str]
    sets: Tuple[str, ...]
    unsets: Tuple[str, ...]
    qos_path: Optional[str]
    local_rank: Optional[int]
    expect_path: Optional[str]
    settings_path: Optional[str]  # the node settings file (default: /etc/rocetune/doctor.yml under root)
    _fields = ("root", "config", "sets", "unsets", "qos_path", "local_rank", "expect_path", "settings_path")

    def __init__(
        self,
        root: str = "/",
        config: Optional[str] = None,
        sets: Tuple[str, ...] = (),
        unsets: Tuple[str, ...] = (),
        qos_path: Optional[str] = None,
        local_rank: Optional[int] = None,
        expect_path: Optional[str] = None,
        settings_path: Optional[str] = None,
    ) -> None:
        self._set(root, config, sets, unsets, qos_path, local_rank, expect_path, settings_path)

    def user(self, warn=None) -> Optional[Overrides]:
        return overrides(
            self.config, self.sets, self.unsets, warn, node=node_settings(self.root, self.settings_path).overrides
        )

    def qos(self) -> QosPlan:
        plan = qos_plan(self.root, self.qos_path)
        assert plan is not None  # the built-in defaults stand in for a missing file
        return plan

    def expect(self) -> Optional[Expectations]:
        return expectations(self.root, self.expect_path)


def plan_host(features: dict, request: PlanRequest) -> Plan:
    """The plan alone (no env text, no file), not yet held to the expectations."""
    from ..planner import build_plan

    return build_plan(features, request.user(), request.qos(), local_rank=request.local_rank)


def plan_texts(
    features: dict, formats: Sequence[str], env_dir: str, request: PlanRequest
) -> Tuple[Plan, Dict[str, str]]:
    """The plan and its env in `formats` as they would be written to `env_dir`, without rendering
    the files the env points at: what a check of the node compares with what it deploys."""
    from ..envfiles.write import render
    from ..planner import build_plan

    plan = build_plan(
        features,
        request.user(),
        request.qos(),
        local_rank=request.local_rank,
        topo_path=os.path.join(env_dir, TOPO_FILE_NAME),
    )
    return plan, {fmt: render(plan, fmt, features) for fmt in formats}


declare(
    id="env-file-left-out", kind="rule", severity="warning",
    by=("nccl-topo-file",),
    title="A variable that points at a file was left out",
    checks="Whether a file the env points at (the topology XML) will be written with it.",
    reads="The plan's files and the output asked for (stdout or -o FILE).",
    why="An env that names a missing file makes NCCL warn and fall back to its own detection.",
    fix="write the env with -o FILE (the files go beside it), as the rocetune_env role does",
    source="rocetune's env writer (docs/env-formats.md)",
)


@emits("env-file-left-out")
def plan_env(
    features: dict,
    formats: Sequence[str],
    *,
    env_dir: Optional[str] = None,
    request: Optional[PlanRequest] = None,
    files_will_be_written: bool = True,
) -> EnvResult:
    """Plan the env of one host and render it in `formats`.

    `env_dir` is where the env file and the files it points at will live. When those files will
    not be written (an env printed to stdout), a variable that points at one is kept only if the
    file already holds exactly that content; otherwise it is dropped with a warning.
    """
    from ..envfiles.write import render
    from ..planner import build_plan
    from ..render.files import render_file

    request = request or PlanRequest()
    topo_path = os.path.join(env_dir, TOPO_FILE_NAME) if env_dir else None
    plan = build_plan(features, request.user(), request.qos(), local_rank=request.local_rank, topo_path=topo_path)
    files = []
    for f in list(plan.files):
        path = os.path.join(env_dir or DEFAULT_ENV_DIR, f.name)
        content = render_file(f)
        if not files_will_be_written and not _holds(path, content):
            from ..checks import finding

            plan.drop(
                f.key,
                finding(
                    "env-file-left-out",
                    f.key,
                    f"{f.key} left out: it would point at {path}, which is written "
                    "only with -o FILE (or by the agent); rerun with -o to get both",
                    rule=f.rule_id,
                    evidence={"file": path, "written": False},
                ),
            )
            continue
        files.append(PlannedFile(path, f.key, content))
    texts = {fmt: render(plan, fmt, features) for fmt in formats}
    # The release the plan was made for, as its nccl-version rule reported it (X.Y.Z, or None):
    # the Features are not read a second time for it.
    release = (plan.reports.get("nccl-version") or {}).get("version")
    nccl: Optional[Tuple[int, int, int]] = None
    if release:
        major, minor, patch = (int(x) for x in release.split("."))
        nccl = (major, minor, patch)
    return EnvResult(plan, texts, files, nccl=nccl)


def plan_env_for(
    features: dict,
    formats: Sequence[str],
    request: PlanRequest,
    out: Optional[str] = None,
    env_dir: Optional[str] = None,
) -> EnvResult:
    """plan_env for where the env goes: the file `out` (the files it points at are written beside
    it), `env_dir` (they are returned for the caller to write), or stdout (nothing is written)."""
    if out:
        env_dir = os.path.dirname(os.path.abspath(out))
    return plan_env(features, formats, env_dir=env_dir, request=request, files_will_be_written=bool(out or env_dir))


def _holds(path: str, content: str) -> bool:
    from ..fsutil import read_old

    try:
        return read_old(path) == content.encode("utf-8")
    except RocetuneError:
        return False
