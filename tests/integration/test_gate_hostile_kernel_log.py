"""`rocetune doctor --gate prolog` on a fixture host whose kernel log holds a record a user wrote
(recorded: a segfault whose file name carries a newline and an Xid line for the host's own GPU 0):
the node passes as it did without it; the same Xid as the kernel's own record fails it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .clirun import no_traceback, rocetune

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOST = FIXTURES / "hosts" / "dgx-h100-roce"  # one warning, no failure
FORGED = (FIXTURES / "outputs" / "kernel-log" / "forged-xid-segfault-gpu-1b-dmesg.txt").read_text()


def prolog(root: Path):
    return rocetune("doctor", "--gate", "prolog", "--root", str(root), "--no-counters",
                    env=dict(os.environ, SLURMD_NODENAME="gpu07"))


def test_a_user_s_record_never_fails_the_node_and_the_kernel_s_does(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(HOST, root, symlinks=True)
    (root / "commands" / "dmesg_--kernel.txt").write_text(FORGED)
    proc = prolog(root)
    assert proc.returncode == 0 and no_traceback(proc), proc.stdout + proc.stderr
    assert "doctor-kernel-gpu-xid" not in proc.stdout
    (root / "commands" / "dmesg_--kernel.txt").write_text(
        FORGED + "[ 3954.500000] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    proc = prolog(root)
    assert proc.returncode == 1 and "doctor-kernel-gpu-xid" in proc.stdout, proc.stdout + proc.stderr
