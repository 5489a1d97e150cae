# Copyright: rocetune contributors
# Apache-2.0
"""rocetune-qos.service's command: re-apply the RoCE QoS of the fabric NICs from the plan at
boot, with the code the roce_qos role's module ran (roce_qos_state and the plan's validator,
installed beside this file).

    python3 rocetune_qos_reapply.py /etc/rocetune/roce_qos.json
"""


import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from roce_qos_state import reapply  # noqa: E402  pylint: disable=import-error,wrong-import-position

if __name__ == "__main__":
    sys.exit(reapply(sys.argv[1:], sys.stdout, sys.stderr))
