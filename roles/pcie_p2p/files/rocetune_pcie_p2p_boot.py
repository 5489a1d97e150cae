# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""rocetune-pcie-p2p.service's command: clear ACS redirect on the PCIe bridges between GPUs and
NICs at boot, with the code the pcie_p2p role's module ran (rocetune_pcie_p2p, installed beside
this file). `--check` changes nothing and says what it would clear (what doctor runs).

    python3 rocetune_pcie_p2p_boot.py --scope gpu_nic --clear ReqRedir,CmpltRedir,EgressCtrl
"""

from __future__ import absolute_import, division, print_function

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rocetune_pcie_p2p import run  # noqa: E402  pylint: disable=import-error,wrong-import-position

if __name__ == "__main__":
    sys.exit(run(sys.argv[1:], sys.stdout, sys.stderr))
