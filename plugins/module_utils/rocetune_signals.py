# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The node-side signal that something waits for a reboot: /run/reboot-required, which
update-notifier, needrestart and operators' tools read. Written, never acted upon: no role
reboots, re-executes systemd or resets firmware by itself."""

from __future__ import absolute_import, division, print_function

import os

__metaclass__ = type

MARKER_TEXT = "*** System restart required ***\n"


def mark_reboot_required(path="/run/reboot-required"):
    """Write the marker unless it is there; True when it was written. OSError propagates."""
    if os.path.exists(path):
        return False
    with open(path, "w") as fh:
        fh.write(MARKER_TEXT)
    return True
