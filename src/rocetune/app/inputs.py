"""What a verb reads besides its command line: the host's Features (probed, or from a saved
file), and the files a node keeps its declarations in -- the QoS plan, the expectations, the
node settings (check configuration, NCCL release, overrides) -- and the user's overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

from ..errors import ExitCode, RocetuneError
from ..hostfs.root import HostRoot
from ..model.features import load as load_features_file
from ..model.plan import Overrides
from ..model.qos import DEFAULT_PATH as QOS_DEFAULT_PATH
from ..model.qos import QosPlan, default_plan, load_file, load_text
from ..probe import collect_features

if TYPE_CHECKING:  # pragma: no cover
    from ..model.expect import Expectations


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
