"""rocetune probe: read the host, print its Features (and, with --format, the tuned env)."""

from __future__ import annotations

import argparse

from .. import envout
from ..result import Result

NAME = "probe"
ORDER = 10
HELP = "read GPUs, NICs, PCIe, RDMA ports and GIDs of a host; emit Features and a tuned env"


def register(p: argparse.ArgumentParser) -> None:
    envout.add_env_arguments(p)


def run(args: argparse.Namespace) -> Result:
    from ... import probe as probing

    features = envout.load_features_arg(args)
    if features is None:
        features = probing.collect_features(args.root)
    result = Result(command=NAME, data={"features": features},
                    human=probing.summary(features, verbose=args.verbose),
                    warnings=probing.warnings_of(features))
    return envout.env_result(args, features, result)
