"""A host as a person should see it, for the verbs: the Features of --root or --features, every
finding in one list, and the warning lines for stderr (rocetune.app.findings)."""

from __future__ import annotations

import argparse

from ..app.findings import all_findings, partial, source_warnings, warning_lines

__all__ = ["all_findings", "collect", "partial", "source_warnings", "stderr_lines", "warning_lines"]

stderr_lines = warning_lines


def collect(args: argparse.Namespace) -> dict:
    from ..app.inputs import planned_features

    return planned_features(args.root, getattr(args, "features", None), getattr(args, "nccl_version", None),
                            getattr(args, "doctor_config", None))
