#!/usr/bin/env python3
"""How `rocetune lint` grows with its input: blank lines and unknown variable names.

    python bench/lint_scale.py [--mb 1] [--names 100000] [--runs 3]

Times lint_text (what `rocetune lint FILE` and `explain --env FILE` read a file with: format
sniffing, the dialect's reader, the checks; the cycle collector off, as in the CLI) on
  - MB and MB/2 of newlines, read as a job script (`job.sh`) and as `.deepspeed_env`;
  - NAMES and NAMES/2 distinct unknown NCCL_* names, one `NAME=1` line each (nccl.conf), every
    one of which gets an unknown-name finding after the did-you-mean search,
and prints each time (the best of --runs), the time per MB, and the growth ratio when the input
doubles: linear is about 2x, quadratic 4x.
Target: ratios <= 2.5x; 1 MB of newlines under 2 s; 100k unknown names under 30 s.

Measured on 2 shared vCPUs (load ~3):
  before (main at 052250ab, `--mb 0.04 --names 4000 --runs 1`; the default sizes run for hours):
    newlines job.sh          0.02 MB 13.7 s, 0.04 MB 55.4 s   x4.06 (quadratic: 1 MB ~ 9 h)
    newlines .deepspeed_env  0.02 MB 16.5 s, 0.04 MB 65.0 s   x3.94
    unknown names            2k 12.6 s, 4k 25.2 s             x1.99 (6.3 ms a name: 100k ~ 630 s)
  after (defaults, best of 3):
    newlines job.sh          0.5 MB 0.59 s, 1 MB 1.16 s       1.16 s/MB  x1.97
    newlines .deepspeed_env  0.5 MB 0.92 s, 1 MB 1.87 s       1.87 s/MB  x2.02 (a finding a line)
    unknown names            50k 4.87 s, 100k 9.85 s          3.83 s/MB  x2.02 (0.1 ms a name)
  with the typo search that measures only names sharing the name's rarest pieces and the report
  that lists 100 findings of a check per file and counts the rest (`--runs 1`, load ~4):
    unknown names            50k 0.39 s, 100k 1.11 s          0.43 s/MB (11 us a name)
    rocetune lint, 16 MB     621,378 unknown names: 36.4 s, peak 475 MB (59 us a name; the
                             parse is most of it) -- before: 465 s and 1 GB
Also: `--file-mb MB` (default 16) runs `rocetune lint` on a file of MB of unknown names and
prints its time and peak resident size.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "src"))

from rocetune.lint.checks import lint_text  # noqa: E402
from rocetune.nccl.catalog import Catalog, load_catalog  # noqa: E402


def _best(text: str, name: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        catalog = Catalog(load_catalog().doc)  # what one CLI run starts with: no answers kept
        start = time.perf_counter()
        lint_text(text, name, catalog=catalog)
        best = min(best, time.perf_counter() - start)
    return best


def _names(n: int) -> str:
    return "".join(f"NCCL_UNKNOWN_VAR_{i:07d}=1\n" for i in range(n))


def _row(label: str, half: str, full: str, name: str, runs: int) -> None:
    t1, t2 = _best(half, name, runs), _best(full, name, runs)
    mb = len(full.encode()) / (1 << 20)
    print(f"{label:<28} {len(half.encode()) / (1 << 20):5.2f} MB {t1:7.2f} s   {mb:5.2f} MB {t2:7.2f} s   "
          f"{t2 / mb:6.2f} s/MB   x{t2 / max(t1, 1e-9):.2f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=1.0, help="newlines: this many MB, and half")
    p.add_argument("--names", type=int, default=100000, help="unknown names: this many, and half")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--file-mb", type=float, default=16.0,
                   help="also `rocetune lint` a file of this many MB of unknown names (0: not)")
    args = p.parse_args()
    gc.disable()
    load_catalog()
    size = int(args.mb * (1 << 20))
    print(f"{'input':<28} {'half':>17}   {'full':>17}   {'per MB':>11}   growth")
    for name in ("job.sh", ".deepspeed_env"):
        _row(f"newlines ({name})", "\n" * (size // 2), "\n" * size, name, args.runs)
    _row("unknown names (nccl.conf)", _names(args.names // 2), _names(args.names), "nccl.conf", args.runs)
    if args.file_mb:
        _cli_row(args.file_mb)
    return 0


def _cli_row(mb: float) -> None:
    """`rocetune lint FILE` on MB of distinct unknown names, as a user runs it: wall time and
    the process's peak resident size."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.conf")
        n = int(mb * (1 << 20)) // len("NCCL_UNKNOWN_VAR_0000000=1\n")
        with open(path, "w") as fh:
            fh.write(_names(n))
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "src"))
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "rocetune", "lint", path], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        _, _, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
    print(f"{'rocetune lint, ' + str(mb) + ' MB':<28} {n} unknown names: {took:.1f} s, "
          f"peak {usage.ru_maxrss >> 10} MB ({took / n * 1e6:.0f} us a name)")


if __name__ == "__main__":
    sys.exit(main())
