"""Read a host through its root: sources (one per subsystem, each failing alone), parsers of tool
outputs, the derived topology and the host findings, merged into one Features document."""

from .collect import collect_features

__all__ = ["collect_features"]
