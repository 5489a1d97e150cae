# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Write a set of small files (and symlinks) in one module call: only those whose content,
mode or target differ, each atomically (temp file + rename), with Ansible-style diffs.

Pure Python: unit-tested on a temporary directory."""

from __future__ import absolute_import, division, print_function

import os
import tempfile

__metaclass__ = type


def read_text(path):
    """The file's text (UTF-8, undecodable bytes replaced), or None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def plan_files(files, links, absent=()):
    """files: [{path, content, mode}], links: [{path, src}], absent: [path] that must not exist
    -> (changes, diffs)."""
    changes, diffs = [], []
    for f in files:
        have = read_text(f["path"])
        mode_ok = have is not None and (os.stat(f["path"]).st_mode & 0o7777) == int(f["mode"], 8)
        if have != f["content"] or not mode_ok:
            changes.append(("file", f))
            diffs.append({"before": have or "", "after": f["content"],
                          "before_header": f["path"], "after_header": f["path"]})
    for link in links:
        if not (os.path.islink(link["path"]) and os.readlink(link["path"]) == link["src"]):
            changes.append(("link", link))
            diffs.append({"before": "", "after": "-> %s\n" % link["src"],
                          "before_header": link["path"], "after_header": link["path"]})
    for path in absent:
        if os.path.lexists(path):
            before = "-> %s\n" % os.readlink(path) if os.path.islink(path) else (read_text(path) or "")
            changes.append(("remove", {"path": path}))
            diffs.append({"before": before, "after": "", "before_header": path, "after_header": path})
    return changes, diffs


def apply_changes(changes):
    for kind, item in changes:
        if kind == "remove":
            os.unlink(item["path"])
            continue
        parent = os.path.dirname(item["path"])
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        if kind == "link":
            tmp = item["path"] + ".rocetune-tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(item["src"], tmp)
            os.rename(tmp, item["path"])
            continue
        fd, tmp = tempfile.mkstemp(dir=parent, prefix="." + os.path.basename(item["path"]) + ".")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(item["content"])
            os.chmod(tmp, int(item["mode"], 8))
            os.rename(tmp, item["path"])
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
