#!/usr/bin/env python3
"""What checking a saved Features file costs (`--features FILE`), against reading its JSON.

    python bench/features_check.py [--runs N] [HOST ...]

Probes each fixture host (default: sriov-k8s-522, the largest document, and pcie-4gpu-2nic),
then times, round by round in turn, json.loads of its text and rocetune.model.schema.check of
the parsed document, and prints each median and the ratio check / json.loads (median and min
of the paired rounds). Target: on sriov-k8s-522 (6 MB) check <= 1x json.loads, so validation
never dominates a load (on small hosts both take well under a millisecond).

Measured on 2 shared vCPUs (load average ~3): sriov-k8s-522 json.loads 107 ms, check 97 ms
(0.89x, min 0.76x); the bespoke checker this one replaced took 1.4-2.3x as long (paired, median 2.2x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "src"))

from rocetune.model.schema import check  # noqa: E402
from rocetune.probe.collect import collect_features  # noqa: E402


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("hosts", nargs="*", default=["sriov-k8s-522", "pcie-4gpu-2nic"])
    args = p.parse_args()
    for host in args.hosts:
        text = json.dumps(collect_features(os.path.join(REPO, "tests", "fixtures", "hosts", host)))
        doc = json.loads(text)
        assert check(doc) is None, check(doc)
        loads, checks = [], []
        for _ in range(args.runs):
            loads.append(_seconds(lambda text=text: json.loads(text)))
            checks.append(_seconds(lambda doc=doc: check(doc)))
        ratios = [c / max(l_, 1e-9) for c, l_ in zip(checks, loads)]
        print(f"{host:<16} {len(text) / 1e6:6.2f} MB  json.loads {statistics.median(loads) * 1e3:7.1f} ms  "
              f"check {statistics.median(checks) * 1e3:7.1f} ms  ratio {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
