"""Env output options of `rocetune probe` (plan + render)."""

from __future__ import annotations

import argparse
from typing import Optional

from .result import Result


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    """No env options yet: probe prints Features only."""


def load_features_arg(args: argparse.Namespace) -> Optional[dict]:
    return None


def env_result(args: argparse.Namespace, features: dict, result: Result) -> Result:
    return result
