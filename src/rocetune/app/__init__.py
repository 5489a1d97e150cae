"""What a user or the Ansible agent asks of rocetune, as functions: read a host (or a saved
Features file), plan its env, render it in any dialect, and write the files -- the env file and
every file it points at -- so that nothing refers to a file that was not written.

The CLI verbs and the node agent's Ansible module both call these; neither plans on its own.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple

from ..checks.binding import emits
from ..envfiles.changes import MANAGED_MARKER, env_changes  # noqa: F401  (the agent's and doctor's)
from ..errors import ExitCode, RocetuneError
from ..hostfs.root import HostRoot
from ..model.features import load as load_features_file
from ..model.plan import Overrides, Plan
from ..model.qos import DEFAULT_PATH as QOS_DEFAULT_PATH
from ..model.qos import QosPlan, default_plan, load_file, load_text
from ..model.record import FrozenRecord, Record
from ..probe import collect_features
from ..rules.base import DEFAULT_TOPO_PATH, TOPO_FILE_NAME

DEFAULT_ENV_DIR = os.path.dirname(DEFAULT_TOPO_PATH)

if TYPE_CHECKING:  # pragma: no cover
    from ..model.expect import Expectations

# NCCL's config file that rocetune did not write is kept once under this suffix.
BACKUP_SUFFIX = ".rocetune-orig"


def host_features(root: str, features_path: Optional[str] = None) -> dict:
    """The Features of --features FILE when given, else what a probe of `root` finds.

    A root with nothing to read (no sys/, proc/ or recorded commands/) is an input error -- a
    mistyped path -- never a host "without RDMA"."""
    if features_path:
        return load_features_file(features_path)
    host = HostRoot(root or "/")
    if not host.is_live and not any(host.is_dir(d) for d in ("/sys", "/proc", "/etc", "/commands")):
        raise RocetuneError(f"--root {root}: no sys/, proc/, etc/ or commands/ in it: not a host root or a capture",
                            hint="point --root at an unpacked 'rocetune capture' or a copied host tree",
                            code=ExitCode.INPUT)
    return collect_features(root)


def nccl_topology(features: dict) -> Optional[dict]:
    """The NCCL topology file a plan gives NCCL on this host and the GPU-NIC paths NCCL sees
    through it (rocetune.analysis.topofile); None when no file is planned or it cannot be read."""
    from ..analysis.hostview import HostView

    plan = HostView(features).topology().plan
    if plan is None or plan.tree is None:
        return None
    pairs = [{"gpu": g, "nic": nic, "path": path}
             for nic, by_gpu in sorted(plan.paths.items()) for g, path in sorted(by_gpu.items())]
    return {"file": plan.label(), "kind": plan.kind, "path": plan.path, "pairs": pairs,
            "unplaced_gpus": plan.unplaced_gpus, "unplaced_nics": plan.unplaced_nics}


def qos_plan(root: str, path: Optional[str] = None, fallback: bool = True) -> Optional[QosPlan]:
    """--qos FILE, else /etc/rocetune/qos.yml under the root, else the built-in defaults (or None
    without `fallback`)."""
    if path:
        return load_file(path)
    host = HostRoot(root or "/")
    text = host.read_text(QOS_DEFAULT_PATH)
    if text is None:
        return default_plan() if fallback else None
    where = QOS_DEFAULT_PATH if host.is_live else host.host_path(QOS_DEFAULT_PATH)
    return load_text(text, where)


def expectations(root: str, path: Optional[str] = None) -> Optional[Expectations]:
    """--expect FILE, else /etc/rocetune/expect.yml under the root, else None (nothing declared)."""
    from ..model import EXPECT_PATH

    if path:
        from ..model import expect

        return expect.Expectations(expect.load_file(path), path)
    host = HostRoot(root or "/")
    text = host.read_text(EXPECT_PATH)
    if text is None:
        return None
    from ..model import expect

    where = EXPECT_PATH if host.is_live else host.host_path(EXPECT_PATH)
    return expect.Expectations(expect.load_text(text, where), where)


def node_settings(root: str, path: Optional[str] = None):
    """The node's settings (rocetune.model.node_settings): --doctor-config FILE, else
    /etc/rocetune/doctor.yml under the root when present, else none. The one reader of that file:
    every verb's overrides, NCCL release and check configuration come from here."""
    from ..model import node_settings as ns

    if path:
        return ns.load_file(path)
    host = HostRoot(root or "/")
    text = host.read_text(ns.PATH)
    if text is None:
        return ns.NodeSettings()
    return ns.load_text(text, ns.PATH if host.is_live else host.host_path(ns.PATH))


def check_config(root: str, path: Optional[str] = None, skips: Sequence[str] = ()):
    """The node's check configuration: the node settings' skips and grades (--doctor-config FILE,
    else /etc/rocetune/doctor.yml under the root), then --skip ID=REASON on top; every id checked
    against the registry."""
    from ..checks.config import check_ids
    from ..model import check_config as cc

    config = node_settings(root, path).checks.merged(cc.from_args(skips))
    check_ids(config)
    return config


def planned_features(root: str, features_path: Optional[str] = None, nccl_version: Optional[str] = None,
                     settings_path: Optional[str] = None) -> dict:
    """The Features a verb plans with: host_features, for the NCCL release `nccl_version`
    (--nccl-version) names, else the one the node settings declare (never for --features FILE,
    another host's)."""
    from ..model.features import with_nccl_version

    features = host_features(root, features_path)
    if nccl_version:
        return with_nccl_version(features, nccl_version)
    if features_path and not settings_path:
        return features
    settings = node_settings(root, settings_path)
    if settings.nccl_version:
        from ..model.node_settings import PATH

        return with_nccl_version(features, settings.nccl_version, by=PATH)
    return features


def overrides(config: Optional[str], sets: Sequence[str] = (), unsets: Sequence[str] = (),
              warn=None, node: Optional[Overrides] = None) -> Optional[Overrides]:
    """The user's choices: the node settings' (`node`), a config file, then --set/--unset on top;
    None when there are none.

    Each value gets lint's checks of one setting (rocetune.lint.checks.check_assignment): an
    error refuses it (a usage error for --set, an input error naming file:line for --config);
    a warning goes to `warn(message)` (default: printed on stderr). Names NCCL does not read are
    left to the plan's own check, which records them as plan warnings.
    """
    base = node or Overrides()
    if config:
        base = base.merged(Overrides.from_file(config))
    merged = base.merged(Overrides.from_args(sets, unsets))
    if merged.empty:
        return None
    import sys

    # lint's checks (and the env file readers under them) only when there is a value to check
    from ..lint.checks import check_assignment
    from ..text import printable

    def stderr_warning(message: str) -> None:
        sys.stderr.write(f"rocetune: warning: {printable(message)}\n")

    for key, (value, origin) in sorted(merged.set.items()):
        found = check_assignment(key, value)
        errors = [f for f in found if f.severity == "error"]
        where = f"--set {key}={value}" if origin == "--set" else f"{origin}: {key}={value}"
        if errors:
            f = errors[0]
            raise RocetuneError(f"{where}: {f.message}", hint=f.fix,
                                code=ExitCode.USAGE if origin == "--set" else ExitCode.INPUT)
        for f in found:
            if f.severity == "warning" and f.id != "unknown-name":
                (warn or stderr_warning)(f"{where}: {f.message}" + (f" (fix: {f.fix})" if f.fix else ""))
    return merged


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

    def __init__(self, root: str = "/", config: Optional[str] = None, sets: Tuple[str, ...] = (),
                 unsets: Tuple[str, ...] = (), qos_path: Optional[str] = None,
                 local_rank: Optional[int] = None, expect_path: Optional[str] = None,
                 settings_path: Optional[str] = None) -> None:
        self._set(root, config, sets, unsets, qos_path, local_rank, expect_path, settings_path)

    def user(self, warn=None) -> Optional[Overrides]:
        return overrides(self.config, self.sets, self.unsets, warn,
                         node=node_settings(self.root, self.settings_path).overrides)

    def qos(self) -> QosPlan:
        plan = qos_plan(self.root, self.qos_path)
        assert plan is not None  # the built-in defaults stand in for a missing file
        return plan

    def expect(self) -> Optional[Expectations]:
        return expectations(self.root, self.expect_path)


def plan_host(features: dict, request: PlanRequest) -> Plan:
    """The plan alone (no env text, no file): what probe and explain show."""
    from ..planner import build_plan

    return build_plan(features, request.user(), request.qos(), local_rank=request.local_rank,
                      expect=request.expect())


class PlannedFile(Record):
    """A file the env points at: where it goes and what it holds."""

    path: str
    key: str
    content: str
    _fields = ("path", "key", "content")

    def __init__(self, path: str, key: str, content: str) -> None:
        self.path = path
        self.key = key
        self.content = content


class FileWrite(Record):
    """One file `write_env` wrote, or would write: its content before and after."""

    path: str  # absolute
    content: str
    before: Optional[str]  # None: the file did not exist
    fmt: Optional[str]  # the env dialect; None for a file the env points at
    changes: List[str]  # "KEY old -> new", env files only
    backup: Optional[str]  # where an unmanaged nccl.conf was (or would be) kept
    _fields = ("path", "content", "before", "fmt", "changes", "backup")

    def __init__(self, path: str, content: str, before: Optional[str], fmt: Optional[str] = None,
                 changes: Optional[List[str]] = None, backup: Optional[str] = None) -> None:
        self.path = path
        self.content = content
        self.before = before
        self.fmt = fmt
        self.changes = [] if changes is None else changes
        self.backup = backup

    @property
    def changed(self) -> bool:
        return self.before != self.content

    def to_dict(self, diff: bool = False) -> dict:
        out = {"path": self.path, "format": self.fmt, "changed": self.changed,
               "changes": self.changes, "backup": self.backup}
        if diff:
            out.update(before=self.before, after=self.content)
        return out


class EnvResult(Record):
    plan: Plan
    texts: Dict[str, str]  # format -> env text
    files: List[PlannedFile]
    writes: List[FileWrite]  # what write_env did, files first
    nccl: Optional[Tuple[int, int, int]]  # the NCCL release planned for (None: unknown)
    _fields = ("plan", "texts", "files", "writes", "nccl")

    def __init__(self, plan: Plan, texts: Dict[str, str], files: Optional[List[PlannedFile]] = None,
                 writes: Optional[List[FileWrite]] = None, nccl: Optional[Tuple[int, int, int]] = None) -> None:
        self.plan = plan
        self.texts = texts
        self.files = [] if files is None else files
        self.writes = [] if writes is None else writes
        self.nccl = nccl

    @property
    def env_writes(self) -> List[FileWrite]:
        return [w for w in self.writes if w.fmt is not None]

    @property
    def written(self) -> List[str]:
        """Every target, env files last (each now holds its content)."""
        return [w.path for w in self.writes]

    @property
    def unchanged(self) -> List[str]:
        return [w.path for w in self.writes if not w.changed]

    def data(self, formats: List[str], out: Optional[str], diff: bool = False) -> dict:
        """The env part of a verb's JSON result: the texts (nothing written), or each file written
        (`writes`, with before/after texts under `diff`)."""
        first = self.env_writes[0] if self.env_writes else None
        return {"formats": formats, "path": first.path if first else None,
                "texts": None if out else self.texts,
                "files": [{"path": f.path, "key": f.key} for f in self.files] if out else [],
                "written": self.written, "unchanged": self.unchanged,
                "changes": first.changes if first else [], "backup": first.backup if first else None,
                "writes": [w.to_dict(diff) for w in self.writes]}

    def write_lines(self, check: bool = False) -> List[str]:
        """One line per file: written (with the variables that changed), unchanged, or (with
        `check`) would be written. With -q this is all -o prints, a line per file for a journal:
        `rocetune env -q -o FILE` in a boot unit."""
        from ..text import printable

        n = len(self.plan.decisions)
        verb = "would write" if check else "wrote"
        lines = []
        for w in self.env_writes:
            if not w.changed:
                lines.append(f"unchanged {w.path} ({w.fmt}, {n} variables)")
            elif w.changes:
                lines.append(f"{verb} {w.path} ({w.fmt}, {n} variables): changed " + ", ".join(w.changes))
            else:
                lines.append(f"{verb} {w.path} ({w.fmt}, {n} variables)")
            if w.backup:
                kept = "would keep" if check else "kept"
                lines.append(f"{kept} the previous {w.path}, which rocetune did not write, as {w.backup}")
        lines += [f"{verb if w.changed else 'unchanged'} {w.path}" for w in self.writes if w.fmt is None]
        return [printable(line) for line in lines]


@emits("env-file-left-out")
def plan_env(features: dict, formats: Sequence[str], *, env_dir: Optional[str] = None,
             request: Optional[PlanRequest] = None, files_will_be_written: bool = True) -> EnvResult:
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
    plan = build_plan(features, request.user(), request.qos(), local_rank=request.local_rank,
                      topo_path=topo_path, expect=request.expect())
    files = []
    for f in list(plan.files):
        path = os.path.join(env_dir or DEFAULT_ENV_DIR, f.name)
        content = render_file(f)
        if not files_will_be_written and not _holds(path, content):
            from ..checks import finding

            plan.drop(f.key, finding(
                "env-file-left-out", f.key, f"{f.key} left out: it would point at {path}, which is written "
                "only with -o FILE (or by the agent); rerun with -o to get both", rule=f.rule_id,
                evidence={"file": path, "written": False}))
            continue
        files.append(PlannedFile(path, f.key, content))
    texts = {fmt: render(plan, fmt, features) for fmt in formats}
    from ..analysis.hostview import HostView

    return EnvResult(plan, texts, files, nccl=HostView(features).nccl_version())


def plan_env_for(features: dict, formats: Sequence[str], request: PlanRequest, out: Optional[str] = None,
                 env_dir: Optional[str] = None) -> EnvResult:
    """plan_env for where the env goes: the file `out` (the files it points at are written beside
    it), `env_dir` (they are returned for the caller to write), or stdout (nothing is written)."""
    if out:
        env_dir = os.path.dirname(os.path.abspath(out))
    return plan_env(features, formats, env_dir=env_dir, request=request,
                    files_will_be_written=bool(out or env_dir))


def _holds(path: str, content: str) -> bool:
    from ..fsutil import read_old

    try:
        return read_old(path) == content.encode("utf-8")
    except RocetuneError:
        return False


def write_env(result: EnvResult, outputs: Sequence[Tuple[str, str]], *, check: bool = False,
              make_dirs: bool = False) -> List[FileWrite]:
    """Write the files the env points at and each env file of `outputs` ((format, path) pairs)
    as one unit: every target is checked and every new content written to a temporary file
    before any is renamed into place, so a failure leaves the old set as it was and no env
    names a file that is missing.

    A target must be absent or a regular file (fsutil: a device, FIFO, socket, directory or
    symlink is refused, with --check too); its current content is read without following a link
    and up to a size cap. A target that already holds its content is left alone (same bytes,
    same mtime): a boot-time rerun that finds nothing new rewrites nothing. Each env file's
    `changes` names the variables whose value differs from the file's previous one. An NCCL
    config file that rocetune did not write (no managed marker) is kept once as
    FILE.rocetune-orig, with the original's mode and owner. With `check`, nothing is written and
    the result says what would be; `make_dirs` creates missing directories."""
    from ..envfiles import dialects
    from ..fsutil import read_old_text

    paths = [os.path.abspath(p) for _, p in outputs]
    if len(set(paths)) != len(paths):
        raise RocetuneError("two env files name the same path: " + ", ".join(sorted(
            {p for p in paths if paths.count(p) > 1})), code=ExitCode.USAGE)
    writes = [FileWrite(os.path.abspath(f.path), f.content, read_old_text(f.path)) for f in result.files]
    for fmt, path in outputs:
        text, before = result.texts[fmt], read_old_text(path)
        changes = env_changes(before, text, fmt) if before is not None else []
        keeps_owner_copy = dialects.get(fmt).keeps_owner_copy
        backup = _backup_path(path, before) if keeps_owner_copy and before != text else None
        writes.append(FileWrite(os.path.abspath(path), text, before, fmt, changes, backup))
    for w in writes:
        _check_writable(w.path, make_dirs, trial=check and w.changed)
    result.writes = writes
    if check:
        return writes
    _write_all([w for w in writes if w.changed], make_dirs)
    return writes


def refuse_degraded(env: EnvResult, outputs: Sequence[Tuple[str, str]], root: str, config=None,
                    check: bool = False) -> Optional[Dict[str, Any]]:
    """When the plan falls short (degradation), the refusal: its reasons and, unless `check`,
    the record kept for doctor; None when it does not, after removing an earlier refusal's record."""
    from ..envfiles import degrade

    reasons = degradation(env, outputs, config or check_config(root))
    if not reasons:
        return None
    files = [path for _, path in outputs]
    return {"reasons": reasons, "record": None if check else degrade.save_record(root, reasons, files)}


def accept_written(root: str, paths: Sequence[str]) -> None:
    """The env files now hold a plan someone accepted: no earlier refusal stands for them."""
    from ..envfiles.degrade import clear_record

    clear_record(root, list(paths))


def degradation(result: EnvResult, outputs: Sequence[Tuple[str, str]], config=None) -> List[str]:
    """Why writing `result` over `outputs` would degrade the node (`env --no-degrade`, the boot
    unit): each way the plan falls short of the expectations (as the node's check configuration
    grades them), and what it would lose against each env file rocetune wrote before
    (rocetune.envfiles.degrade), a variable the NCCL planned for ignores among what it changes
    included. [] when it is not short."""
    from ..checks.config import apply
    from ..envfiles.degrade import shortfalls, values_of
    from ..fsutil import read_old_text

    graded = apply(result.plan.findings, config).findings
    reasons = [f"{f.message} ({f.id})" for f in graded if f.kind == "expect" and f.severity == "error"]
    for fmt, path in outputs:
        old = values_of(read_old_text(path), fmt)
        new = values_of(result.texts[fmt], fmt)
        if old is not None and new is not None:
            chosen = {d.key for d in result.plan.decisions if d.rule_id == "override"}
            reasons += [f"{path}: {r}" for r in shortfalls(old, new, result.nccl, chosen)]
    return list(dict.fromkeys(reasons))


def _write_all(writes: List[FileWrite], make_dirs: bool) -> None:
    from ..fsutil import Target, target_stat, write_files

    targets = []
    for w in writes:
        if w.backup:
            # The original's mode and owner: a root-only nccl.conf stays root-only in its copy.
            st = target_stat(w.path)
            targets.append(Target(w.backup, (w.before or "").encode("utf-8"),
                                  st.st_mode & 0o7777 if st else 0o600,
                                  owner=(st.st_uid, st.st_gid) if st else None))
        targets.append(Target(w.path, w.content.encode("utf-8"), 0o644))
    if make_dirs:
        for directory in sorted({os.path.dirname(t.path) for t in targets}):
            try:
                os.makedirs(directory, 0o755, exist_ok=True)
            except OSError as exc:
                raise RocetuneError(f"cannot create {directory}: {exc.strerror or exc}",
                                    hint="check that its parent is writable", code=ExitCode.OUTPUT) from None
    write_files(targets)


def _backup_path(path: str, old: Optional[str]) -> Optional[str]:
    backup = path + BACKUP_SUFFIX
    if old is None or old.startswith(MANAGED_MARKER) or os.path.lexists(backup):
        return None
    return os.path.abspath(backup)


def _check_writable(path: str, make_dirs: bool = False, trial: bool = False) -> None:
    """Refuse a target that cannot be written, before anything is; with `trial` (--check), a
    temporary file is made and removed in its directory, the only way to know a pseudo file
    system (/proc, /sys) refuses new files."""
    from ..fsutil import can_create_in, check_directory, target_stat

    target_stat(path)
    check_directory(path)
    directory = os.path.dirname(os.path.abspath(path))
    while make_dirs and not os.path.isdir(directory) and not os.path.lexists(directory):
        directory = os.path.dirname(directory)  # the nearest existing one must be writable
    if not os.path.isdir(directory):
        raise RocetuneError(f"cannot write {path}: {directory} does not exist",
                            hint="create the directory first", code=ExitCode.OUTPUT)
    if not os.access(directory, os.W_OK):
        raise RocetuneError(f"cannot write {path}: {directory} is not writable",
                            hint="run as a user who may write there", code=ExitCode.OUTPUT)
    if trial and directory == os.path.dirname(os.path.abspath(path)):
        can_create_in(directory, path)


def doctor_checks(features: dict, request: PlanRequest, nccl_log: Optional[str] = None, counters: bool = True,
                  save_baseline: bool = False, config=None, since: Optional[str] = None, keep_window: bool = False):
    """Check a node (live, or a capture under `root`) against its plan and the pitfalls:
    -> (findings, data). The host's findings, the plan's, and doctor's own checks, as the node's
    check configuration (`config`, rocetune.model.check_config) grades them: what it skips is in
    data["skipped"], its rules (with how many findings each matched) in data["check_config"]."""
    from ..analysis.hostview import HostView
    from ..doctor import checks, readings
    from ..hostfs.context import ProbeContext
    from ..hostfs.root import HostRoot
    from ..hostfs.runners import runner_for

    root = request.root
    host = HostRoot(root or "/")
    declared_qos = qos_plan(root, request.qos_path, fallback=False)
    recorded = recorded_overrides({fmt: host.read_text(path) for fmt, path in readings.ENV_FILES.items()})
    if recorded:  # the command line's own --set still wins
        request = PlanRequest(request.root, request.config, tuple(recorded) + tuple(request.sets), request.unsets,
                              request.qos_path, request.local_rank, request.expect_path, request.settings_path)
    env = plan_env(features, tuple(readings.ENV_FILES), env_dir=readings.ENV_DIR, request=request)
    from ..doctor.repair import load_mark

    ctx = ProbeContext(host, runner_for(host))
    settings = node_settings(root, request.settings_path)
    mark = load_mark(root or "/")
    read = readings.read(ctx, features, since=since, env_files=settings.env_files, mark=mark)
    view = HostView(features)
    expected = set(_expected_names(env.plan))
    named = deployed_ports(read["deployed_env"]) | expected
    found = checks.run_checks(checks.DoctorInput(features, read, view, env.texts, declared_qos, named, expected))
    from ..checks import host_findings

    findings = host_findings(features) + env.plan.findings + found
    expect_data, unchecked = _expect_data(features, env.plan, declared_qos, named, view)
    findings.append(unchecked)
    from ..doctor.deployed_env import effective

    data = {"readings": read, "qos": declared_qos.to_dict() if declared_qos else None,
            "plan": env.plan.to_dict(), "expect": expect_data, "deployed_env": effective(read["deployed_env"])}
    if counters:
        results, data["counters"] = nic_counters(root or "/", read, save_baseline, keep_window, mark)
        findings += results
    if nccl_log:
        from ..render.nccl_log import summary_lines

        report, differences = nccl_log_against(nccl_log, env.plan.env, plan_facts(features, env.plan))
        data["nccl_log"] = dict(report.to_dict(), used=summary_lines(report))
        findings += differences
    from ..checks.config import apply

    applied = apply(findings, config)
    data["skipped"] = [f.to_dict() for f in applied.skipped]
    data["check_config"] = {"sources": list(config.sources) if config else [], "rules": applied.rules}
    return applied.findings, data


def recorded_overrides(env_files: Dict[str, Optional[str]]) -> List[str]:
    """KEY=VALUE of each variable an env file rocetune wrote records as `--set` (its
    `# rule: override (--set)` comment): rocetune's documented way to change the env, so doctor
    plans with it rather than calling it drift. The node settings' overrides need no record."""
    from ..envfiles.read import parse_text

    out: Dict[str, str] = {}
    for fmt, text in sorted(env_files.items()):
        if not text or not text.startswith(MANAGED_MARKER):
            continue
        comments = {i + 2: line for i, line in enumerate(text.splitlines()) if line.startswith("# rule: override")}
        for a in parse_text(text, fmt).assignments:
            if a.rule_id == "override" and a.value is not None and comments.get(a.line, "").endswith("(--set)"):
                out.setdefault(a.key, a.value)
    return [f"{k}={v}" for k, v in sorted(out.items())]


def _expected_names(plan: Plan) -> List[str]:
    from ..analysis.expect import exact_names

    return exact_names(plan.expect["document"]) if plan.expect else []


def deployed_ports(env_files: List[dict]) -> set:
    """The RDMA ports (`mlx5_0:1`) and devices the deployed env files' NCCL_IB_HCA name
    (readings' `deployed_env`): rails the node had when its env was written, whatever it shows now."""
    from ..envfiles.read import parse_text
    from ..nccl.syntax import ib_hca_entries

    out: Set[str] = set()
    for item in env_files:
        if not item.get("text"):
            continue
        parsed = parse_text(item["text"], item.get("format") or "auto", item["path"])
        values = {a.key: a.value for a in parsed.assignments if a.value is not None}
        if not values.get("NCCL_IB_HCA"):
            continue
        exclude, _exact, entries = ib_hca_entries(values["NCCL_IB_HCA"])
        if not exclude:
            out.update(name if port < 0 else f"{name}:{port}" for name, port in entries)
    return out


def _expect_data(features: dict, plan: Plan, qos: Optional[QosPlan], named: set, view) -> tuple:
    """doctor's `data.expect` -- where the expectations came from, the document, the verdict
    (met, short, none), the differences, and the node's facts (NodeFacts.to_dict(): what
    `--write-expect` and a fleet's majority are made from) -- and the expect-unchecked finding."""
    from ..analysis.expect import node_facts
    from ..doctor.checks import expect_unchecked as unchecked

    if plan.expect is not None:
        facts = plan.expect["facts"]
        source, document = plan.expect["source"], plan.expect["document"]
    else:
        facts = node_facts(features, plan, qos_source=qos.source if qos else None, names=sorted(named), view=view)
        source, document = None, None
    from ..model.expect import declares_nothing

    differences = [f.to_dict() for f in plan.findings if f.kind == "expect"]
    short = any(d["severity"] == "error" for d in differences)
    verdict = "none" if declares_nothing(document) else "short" if short else "met"
    return ({"source": source, "document": document, "verdict": verdict, "differences": differences,
             "facts": facts.to_dict()}, unchecked(document, source))


def nic_counters(root: str, readings: dict, save: bool, keep: bool = False, mark: Optional[dict] = None):
    """(findings, data) from the NIC counters judged as rates over the sliding window
    (rocetune.doctor.nic_baseline; lifetime counts only, as info, without an earlier reading).
    With `save` (--save-baseline) this reading joins the window, and a failure to write it is an
    error; with `keep` (the gate) the same, but a failure is said in the data, not raised.
    Readings taken before the operator's repair mark (`mark`) are left out."""
    from ..doctor import nic_baseline, nic_health
    from ..doctor.repair import before_mark
    from ..probe.sources.nic_counters import take_snapshot

    snapshot = take_snapshot(root, netdevs=sorted(readings.get("pause") or {}))
    window = [s for s in nic_baseline.load_window(root) if not before_mark(mark, s)]
    previous = nic_baseline.reference(window, snapshot)
    results = nic_health.judge(previous, snapshot)
    data = {"baseline": nic_baseline.baseline_file(root) if previous else None,
            "window": {"span_s": nic_baseline.WINDOW_S, "readings": len(window),
                       "judged_from": previous["taken_at"]["wall"] if previous else None},
            "rates": [{"check": c, "subject": s, "unit": u, "rate": r}
                      for c, s, u, r in nic_health.rates(previous, snapshot)],
            "saved": None, "warnings": snapshot.get("warnings", [])}
    if save or keep:
        slid = nic_baseline.slide(window, snapshot)
        try:
            data["saved"] = nic_baseline.save_window(slid, root) if slid is not None else None
        except RocetuneError as exc:
            if save:
                raise
            data["warnings"] = data["warnings"] + [f"the counter window was not kept: {exc.message}"]
    return [r.to_finding() for r in results], data


def plan_facts(features: dict, plan):
    """What a log is held to beyond the plan's env (rocetune.nccl.log_compare.PlanFacts): the NCCL
    release the plan was made for, whether it expects GPUDirect RDMA, and the RDMA ports it left out."""
    from ..analysis.hostview import HostView
    from ..nccl.log_compare import PlanFacts

    host = HostView(features)
    ev = host.nccl_evidence()
    version = ev.get("version")
    came = {"declared": "declared"}.get(ev.get("basis") or "", "") or \
        (f"the library {ev['library']}" if ev.get("library") else "the host's NCCL")
    gdr = plan.reports.get("gpudirect-rdma") or {}
    hca = plan.get("NCCL_IB_HCA")
    excluded = tuple((e["port"], e["why"]) for e in ((hca.evidence or {}).get("excluded") or [])) if hca else ()
    gpu_source = ((features.get("sources") or {}).get("gpu") or {}).get("ok")
    return PlanFacts(nccl_version=version, nccl_from=came, gdr_expected=gdr.get("expected"),
                     gdr_why=gdr.get("expected_why") or "", excluded=excluded,
                     gpus=len(host.gpus) if host.gpus or gpu_source else None)


def nccl_log_against(path: str, plan_env: Dict[str, str], facts=None):
    """(NCCL's own report read from its INFO log, its differences from the plan as findings)."""
    from ..checks.doctor import nccl_log_finding
    from ..nccl.log import load_log
    from ..nccl.log_compare import compare_with_plan

    report = load_log(path)
    return report, [nccl_log_finding(d, path) for d in compare_with_plan(report, plan_env, facts)]
