# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The node-side signal that something waits for a reboot: /run/reboot-required, which
update-notifier, needrestart and operators' tools read. Written, never acted upon: no role
reboots, re-executes systemd or resets firmware by itself."""

from __future__ import absolute_import, division, print_function

import errno
import os

try:  # as the collection's module_utils
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import directory_problem
except ImportError:  # loaded alone, beside its siblings
    from rocetune_files import directory_problem  # pylint: disable=import-error

__metaclass__ = type

MARKER_TEXT = "*** System restart required ***\n"


def mark_reboot_required(path="/run/reboot-required"):
    """Write the marker unless it is there; True when it was written. OSError propagates, and
    an OSError names the directory when another user could replace the marker (rocetune_files'
    rule for what root writes). Created, never opened through a link or over someone's file."""
    if os.path.lexists(path):
        return False
    why = directory_problem(os.path.dirname(os.path.abspath(path)))
    if why:
        raise OSError(errno.EPERM, "not written: " + why)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(MARKER_TEXT)
    return True
