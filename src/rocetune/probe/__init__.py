"""Read a host through its root: sources (one per subsystem, each failing alone), parsers of tool
outputs and the derived topology, merged into one Features document (findings are computed
from it when a host is reported: rocetune.checks)."""

from .collect import collect_features

__all__ = ["collect_features"]
