#!/usr/bin/env python3
"""What one node's output costs the controller at most: `fleet gather` takes up to
results.MAX_BYTES (16 MiB) from a node and refuses more than jsonread.MAX_VALUES values, so the
worst a node can send is a 16 MiB envelope of a million values in the costliest shape. Each shape
runs in a fresh process through the controller's own path (gather.envelope_data, then the
HOST.json written with gather.dumps) and prints the peak resident size, its growth over the
process at rest, and the ratio to the bytes read.

    python bench/hostile_node_output.py

Target: the growth stays within what docs/security.md states (about 280 MiB a node). Measured on
2 shared vCPUs (load ~40), Python 3.11, 2026-12-07:
    empty objects        1.5 MB read  +  79 MiB  (x55 the bytes; HOST.json 3.5 MB)
    one-key objects      6.9 MB read  + 279 MiB  (x42 the bytes; HOST.json 13.9 MB)
    distinct strings     9.0 MB read  + 117 MiB  (x14 the bytes; HOST.json 13.0 MB)
"""

from __future__ import annotations

import resource
import subprocess
import sys

SHAPES = {
    "empty objects": lambda n: "[" + ",".join(["{}"] * (n // 2)) + "]",
    "one-key objects": lambda n: "[" + ",".join('{"k%d":0}' % i for i in range(n // 2)) + "]",
    "distinct strings": lambda n: "[" + ",".join('"%06d"' % i for i in range(n)) + "]",
}


def one(shape: str) -> None:
    from rocetune.fleet import gather, ssh
    from rocetune.fleet.results import MAX_BYTES
    from rocetune.fleet.targets import Target
    from rocetune.model.jsonread import MAX_VALUES

    body = SHAPES[shape](MAX_VALUES - 16)
    out = ('{"schema": "rocetune.result/1", "status": "ok", "data": {"x": ' + body + "}}").encode()
    assert len(out) <= MAX_BYTES, len(out)
    rest = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = gather.envelope_data(Target("n1", "n1"), "doctor", "rocetune --json doctor", ssh.Completed(0, out, b""))
    text = gather.dumps({"host": "n1", "doctor": data})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{shape:18s} {len(out) / 1e6:5.1f} MB read  +{(peak - rest) / 1024:4.0f} MiB  "
          f"(x{(peak - rest) * 1024 / len(out):.0f} the bytes; HOST.json {len(text) / 1e6:.1f} MB)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        one(sys.argv[1])
    else:
        for name in SHAPES:
            subprocess.run([sys.executable, __file__, name], check=True)
