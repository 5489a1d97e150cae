"""Every env dialect a GPU job is started with, written (write.py) and read back (read.py, one
reader per dialect beside it).

This module stays import-light: the CLI reads the names below to build its --help.
"""

from __future__ import annotations

from typing import Optional

FORMATS = ("sh", "nccl-conf", "systemd", "docker", "deepspeed", "k8s", "json")
# What `rocetune lint` reads: every format written, plus job scripts' relatives.
PARSE_FORMATS = FORMATS + ("dockerfile", "markdown")


def default_format_for(path: Optional[str]) -> str:
    """A format guessed from an output file name (nccl.conf, *.env, .deepspeed_env ...)."""
    if not path:
        return "sh"
    base = path.rsplit("/", 1)[-1].lower()
    if base.endswith(".conf") and "nccl" in base:
        return "nccl-conf"
    if base == ".deepspeed_env":
        return "deepspeed"
    if base.endswith((".yaml", ".yml")):
        return "k8s"
    if base.endswith(".json"):
        return "json"
    return "sh"
